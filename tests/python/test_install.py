"""`cmake --install <build> --component python --prefix P` gives an importable, self-contained
package (extension, libember beside it, bundled data) in P/lib/pythonX.Y/site-packages."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import ember

PKG = pathlib.Path(ember.__file__).resolve().parent
BUILD = PKG.parents[1]  # <build>/python/ember


def _cache_value(name):
    cache = BUILD / "CMakeCache.txt"
    if not cache.exists():
        return None
    m = re.search(rf"^{name}:[A-Z]+=(.*)$", cache.read_text(), re.M)
    return m.group(1) if m else None


@pytest.mark.skipif(not (BUILD / "CMakeCache.txt").exists(), reason="ember is not imported from a build tree")
def test_cmake_install_component_python(tmp_path):
    if _cache_value("EMBER_PYTHON_INSTALL_DIR"):
        pytest.skip("this build installs into a fixed EMBER_PYTHON_INSTALL_DIR")
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not on the PATH")
    prefix = tmp_path / "prefix"
    subprocess.run([cmake, "--install", str(BUILD), "--component", "python", "--prefix", str(prefix)],
                   check=True, capture_output=True)
    site = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    assert (site / "ember" / "data" / "digits" / "digits.bin").exists()
    code = ("import ember; print(ember.__file__); x, y = ember.datasets.load_digits('test'); "
            "print(x.shape, (ember.ones(2) * 3).tolist())")
    env = {k: v for k, v in os.environ.items() if k != "EMBER_DATA_DIR"}
    env["PYTHONPATH"] = str(site)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith(str(site))
    assert "(355, 1, 8, 8) [3.0, 3.0]" in r.stdout
