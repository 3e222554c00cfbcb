"""The Python examples run and reach their results."""
import os
import pathlib
import re
import subprocess
import sys

import ember

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def run(name, *args, cwd=None):
    # The examples import the same ember package as the tests, from any working directory.
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(ember.__file__).resolve().parents[1]))
    r = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                       env=env, cwd=cwd, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_train_digits(tmp_path):
    out = run("train_digits.py", "--epochs", "8", cwd=tmp_path)
    acc = float(re.findall(r"test accuracy ([\d.]+)%", out)[-1])
    assert acc >= 95.0, out
    assert len(ember.load(tmp_path / "digits_py.safetensors")) > 0


def test_train_digits_with_the_cpp_model(tmp_path):
    out = run("train_digits.py", "--epochs", "6", "--model", "lenet", cwd=tmp_path)
    acc = float(re.findall(r"test accuracy ([\d.]+)%", out)[-1])
    assert acc >= 90.0, out


def test_inspect_algos():
    out = run("inspect_algos.py")
    assert "chose" in out and "im2col_gemm" in out and "forced 'direct'" in out


def test_custom_op():
    out = run("custom_op.py")
    assert "gradcheck: passed" in out
    assert float(re.findall(r"test accuracy ([\d.]+)%", out)[-1]) >= 90.0, out
