"""ember.onnx.load and `ember run` on models exported from PyTorch (the oracle) and built with
Debian's python3-onnx: outputs equal PyTorch's within 1e-4 relative on cpu and emu."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
pytest.importorskip("ember._onnx", reason="this build has no ONNX import (libonnx-dev)")
from onnx import helper, TensorProto, numpy_helper  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "onnx"))
import torch_models  # noqa: E402

EMBER_BIN = os.path.join(os.path.dirname(ember.__file__), "..", "..", "bin", "ember")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """resnet.onnx and mobilenet.onnx exported by PyTorch, with the torch modules."""
    folder = tmp_path_factory.mktemp("models")
    models = {}
    for name in torch_models.MODELS:
        path = str(folder / (name + ".onnx"))
        models[name] = (path, torch_models.export(name, path))
    return models


def rel_err(got, want):
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


@pytest.mark.parametrize("device", ["cpu", "emu"])
@pytest.mark.parametrize("name", ["resnet", "mobilenet"])
@pytest.mark.parametrize("batch", [1, 5])
def test_pytorch_exported_models_match_pytorch(exported, rng, name, device, batch):
    path, module = exported[name]
    x = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
    want = module(torch.from_numpy(x)).detach().numpy()
    model = ember.onnx.load(path, device=device)
    assert model.passes["fused_adds"] == 3  # each residual sum folded into its conv
    got = model(x)  # NumPy in, NumPy out
    assert isinstance(got, np.ndarray) and got.shape == want.shape
    assert rel_err(got, want) <= 1e-4
    t = model(ember.from_numpy(x))  # a tensor in, a tensor out, on the model's device
    assert isinstance(t, ember.Tensor) and t.device == ember.device(device)
    assert rel_err(t.cpu().numpy(), want) <= 1e-4
    assert model.inputs[0][0] == "x" and model.inputs[0][2] == (None, 3, 32, 32)


def test_load_from_bytes_and_by_name(exported, rng):
    path, module = exported["resnet"]
    with open(path, "rb") as f:
        model = ember.onnx.load(f.read())
    x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
    want = module(torch.from_numpy(x)).detach().numpy()
    assert rel_err(model(x=x), want) <= 1e-4
    with pytest.raises(ValueError, match="no input 'y'"):
        model(y=x)


def conv_bn_relu_model(rng, opset=13):
    """Conv -> BatchNormalization -> Relu with random parameters (not folded by an exporter)."""
    c, k = 3, 5
    params = dict(w=rng.standard_normal((k, c, 3, 3)), b=rng.standard_normal(k),
                  gamma=rng.uniform(0.5, 1.5, k), beta=rng.standard_normal(k),
                  mean=rng.standard_normal(k), var=rng.uniform(0.5, 2, k))
    inits = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in params.items()]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 1]),
             helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"],
                              epsilon=1e-3),
             helper.make_node("Relu", ["n"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                        ["N", c, 9, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5, 5, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    return model.SerializeToString(), params


@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_batch_norm_folding_and_relu_fusion_keep_the_function(rng, device):
    data, p = conv_bn_relu_model(rng)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    t = lambda a: torch.from_numpy(np.asarray(a, np.float64))  # noqa: E731
    c = torch.nn.functional.conv2d(t(x), t(p["w"]), t(p["b"]), stride=(2, 1), padding=1)
    want = torch.relu(torch.nn.functional.batch_norm(c, t(p["mean"]), t(p["var"]), t(p["gamma"]),
                                                     t(p["beta"]), eps=1e-3)).numpy()
    for optimize in (True, False):
        model = ember.onnx.load(data, device=device, optimize=optimize)
        assert model.passes["folded_batch_norms"] == (1 if optimize else 0)
        assert model.passes["fused_relus"] == (1 if optimize else 0)
        assert rel_err(model(x), want) <= 1e-5


def test_errors_are_ember_errors():
    with pytest.raises(ember.FormatError, match="ModelProto"):
        ember.onnx.load(b"\x08\x07garbage that is not a model")
    with pytest.raises(ember.IOError):
        ember.onnx.load("/nonexistent/model.onnx")
    node = helper.make_node("Frobnicate", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    with pytest.raises(ValueError, match="operator Frobnicate is not supported"):
        ember.onnx.load(data)


def test_ember_run_cli(exported, tmp_path, rng):
    """`ember run` with a .npy input writes outputs NumPy reads back, equal to PyTorch's."""
    path, module = exported["mobilenet"]
    x = rng.standard_normal((4, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    run = subprocess.run([EMBER_BIN, "run", path, "--input", str(tmp_path / "x.npy"), "--repeat", "3",
                          "--threads", "1", "--output", str(out), "--profile"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "latency over 3 runs: median" in run.stdout and "peak memory" in run.stdout
    assert "output logits: [4, 10] float32" in run.stdout
    assert "conv2d" in run.stdout  # the profile names the convolution kernels
    assert "Convconv2d" not in run.stdout  # a long node name still leaves a space before them
    want = module(torch.from_numpy(x)).detach().numpy()
    assert rel_err(np.load(out), want) <= 1e-4
    bad = subprocess.run([EMBER_BIN, "run", path, "--input", "nope.txt"], capture_output=True, text=True)
    assert bad.returncode != 0 and "expected random, a .npy file" in bad.stderr
    bad = subprocess.run([EMBER_BIN, "run", path, "--threads", "-1"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--threads: invalid value '-1'" in bad.stderr
