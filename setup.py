"""pip install --no-build-isolation .

Installs the Python package from the repository root; the build itself (CMake with
EMBER_PYTHON=ON) is described in python_bindings/setup.py, which this runs.
"""
import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "python_bindings", "setup.py"),
               run_name="__main__")
