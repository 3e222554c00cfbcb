"""pip install ./python_bindings --no-build-isolation

Builds the extension with CMake (the same build as the rest of Ember, EMBER_PYTHON=ON) and
packages what `cmake --install --component python` lays out: the ember package, the extension,
libember beside it, and the bundled data. Needs cmake, a C++17 compiler and the build
dependencies of Ember (scripts/setup.sh installs them); --no-build-isolation lets pip use the
installed setuptools instead of downloading one.
"""
import os
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_DIR = os.environ.get("EMBER_PY_BUILD_DIR", os.path.join(ROOT, "build-python"))
# setuptools' own scratch files go under the CMake build directory, not into the source tree.
SCRATCH = os.path.join(BUILD_DIR, "setuptools")
os.makedirs(SCRATCH, exist_ok=True)


class CMakeBuild(build_py):
    def run(self):
        build_dir = BUILD_DIR
        target = os.path.abspath(self.build_lib)
        cfg = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DEMBER_PYTHON=ON",
               "-DEMBER_TESTS=OFF", "-DEMBER_BENCH=OFF", f"-DPython3_EXECUTABLE={sys.executable}",
               f"-DEMBER_PYTHON_INSTALL_DIR={target}"]
        if subprocess.call(["ninja", "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
            cfg += ["-G", "Ninja"]
        subprocess.check_call(cfg)
        jobs = os.environ.get("EMBER_PY_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "ember_python", "ember_python_dist", "-j", jobs])
        subprocess.check_call(["cmake", "--install", build_dir, "--component", "python"])


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True  # a platform wheel: the package holds compiled libraries

    def has_pure_modules(self):
        return True  # so that build_py (the CMake build above) runs


setup(
    name="ember",
    version="0.1.0",
    description="Ember: a small deep-learning runtime in C++17/CUDA with a PyTorch-like Python API",
    packages=[],
    cmdclass={"build_py": CMakeBuild},
    distclass=BinaryDistribution,
    python_requires=">=3.8",
    install_requires=["numpy"],
    zip_safe=False,
    options={"build": {"build_base": SCRATCH}, "egg_info": {"egg_base": SCRATCH}},
)
