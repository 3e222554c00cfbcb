"""The PyTorch-style training script (pytorch_style_train.py) run by PyTorch itself, which shows
it is a real PyTorch script, and by Ember with `import ember as torch` on the cpu and the emulated
GPU: the loss falls, the model learns, the checkpoint loads back to the same validation loss, and
ReduceLROnPlateau and the parameter groups did their part."""
import json
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "pytorch_style_train.py")


def _run(lib, device, tmp_path):
    out = subprocess.run([sys.executable, SCRIPT, lib, device, str(tmp_path / f"{lib}.ckpt")],
                         capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("lib, device", [("torch", "cpu"), ("ember", "cpu"), ("ember", "emu")])
def test_pytorch_style_script_trains(lib, device, tmp_path):
    r = _run(lib, device, tmp_path)
    train = r["train"]
    assert len(train) == 6
    assert train[-1] < 0.3 * train[0], train  # the loss falls
    assert r["accuracy"] > 0.75, r  # chance is 0.25
    assert r["after_load"] == pytest.approx(r["before_save"], rel=1e-6), r
    assert all(lr < 3e-3 for lr in r["lrs"]), r  # ReduceLROnPlateau lowered Adam's lr
