"""The C example (examples/c/run_onnx.c) on a real model: the ResNet-style network of
torch_models.py, exported with a symbolic batch, run through the C API with a batch of 2; the
printed shape and first values must equal PyTorch's on the same input (the example's fill
pattern, rebuilt here), and a corrupt file must end in EMBER_FORMAT_ERROR with exit code 1.

    /usr/bin/python3 tests/onnx/c_example.py EXAMPLE_BINARY DEVICE
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402


def main():
    example, device = sys.argv[1], sys.argv[2]
    batch = 2
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "resnet.onnx")
        model = torch_models.export("resnet", path)
        run = subprocess.run([example, path, device, str(batch)], capture_output=True, text=True)
        print(run.stdout, run.stderr)
        assert run.returncode == 0, f"the example failed ({run.returncode})"
        m = re.search(r"output 0 'logits': float32 \[(.*?)\]:(.*)", run.stdout)
        assert m, "no output line for 'logits'"
        shape = [int(s) for s in m.group(1).split(", ")]
        got = np.array([float(v) for v in m.group(2).split()])
        # The example's fill: element i of a float input is ((i % 19) - 9) / 9.
        n = batch * 3 * 32 * 32
        x = (((np.arange(n) % 19) - 9) / 9.0).astype(np.float32).reshape(batch, 3, 32, 32)
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        assert shape == list(want.shape), f"shape {shape}, PyTorch's {list(want.shape)}"
        assert got.size == min(8, want.size), f"{got.size} values printed"
        # %.6g printing plus float32 summation order: 1e-4 absolute on logits of order 0.1-1.
        np.testing.assert_allclose(got, want.reshape(-1)[: got.size], rtol=1e-3, atol=1e-4)

        corrupt = os.path.join(tmp, "corrupt.onnx")
        with open(path, "rb") as f:
            data = f.read()
        with open(corrupt, "wb") as f:
            f.write(data[: len(data) // 3])
        bad = subprocess.run([example, corrupt, device], capture_output=True, text=True)
        print(bad.stdout, bad.stderr)
        assert bad.returncode == 1, f"a corrupt model exited with {bad.returncode}"
        assert "error: EMBER_FORMAT_ERROR: ember_session_create_from_file:" in bad.stderr
    print("c example: OK")


if __name__ == "__main__":
    main()
