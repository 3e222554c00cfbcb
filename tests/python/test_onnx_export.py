"""ember.onnx.export: models written as ONNX pass onnx.checker, load back with ember.onnx.load and
give the Ember module's own outputs on cpu and emu (also at another batch size, through a dynamic
batch axis); onnx's shape inference and PyTorch (the same weights) check them independently."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

onnx = pytest.importorskip("onnx")
pytest.importorskip("ember._onnx", reason="this build has no ONNX import (libonnx-dev)")
import onnx.shape_inference  # noqa: E402

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-5, 1e-6


def _warm_batch_norms(model, x):
    """A few training steps' worth of forward passes, so running statistics are not 0 and 1."""
    model.train()
    with ember.no_grad():
        for _ in range(3):
            model(x * 1.5 + 0.25)


def _reference(model, x):
    with ember.no_grad():
        return model(x).numpy()


def roundtrip(model, x, path, opset=13, other_batch=5, devices=("cpu", "emu"), **kwargs):
    """Exports model(x) with a dynamic batch axis, checks the file and compares what Ember's ONNX
    runtime computes with the module's own output, at x's batch and at other_batch."""
    was_training = model.training
    ember.onnx.export(model, x, str(path), opset_version=opset,
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, **kwargs)
    assert model.training == was_training  # the module's mode is restored
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    model.eval()
    rng = np.random.default_rng(0)
    x2 = ember.tensor(rng.standard_normal((other_batch,) + tuple(x.shape[1:])).astype(np.float32))
    for device in devices:
        loaded = ember.onnx.load(str(path), device=device)
        for inp in (x, x2):
            got = loaded(inp.to(device)).cpu().numpy()
            np.testing.assert_allclose(got, _reference(model, inp), rtol=RTOL, atol=ATOL,
                                       err_msg=f"{type(model).__name__} on {device}, batch "
                                               f"{inp.shape[0]}")
    model.train(was_training)
    return proto


def _ops(proto):
    return [n.op_type for n in proto.graph.node]


def _inferred_output_shape(proto):
    inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    dims = inferred.graph.output[0].type.tensor_type.shape.dim
    return [d.dim_param or d.dim_value for d in dims]


def _input(rng, *shape):
    return ember.tensor(rng.standard_normal(shape).astype(np.float32))


# --- models --------------------------------------------------------------------------------------
def _cnn():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AvgPool2d(2), nn.Dropout(0.3), nn.Flatten(), nn.Linear(16 * 2 * 2, 10))


class BasicBlock(nn.Module):
    """ResNet's basic block: a custom forward with a projection shortcut and x + shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out)


class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU())
        self.layer1 = BasicBlock(8, 16, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        x = self.layer1(self.stem(x))
        return self.fc(self.pool(x).flatten(1))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: expand, depthwise 3x3, project, with ReLU6 and a residual."""

    def __init__(self, c, expand=4):
        super().__init__()
        h = c * expand
        self.block = nn.Sequential(
            nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(inplace=True),
            nn.Conv2d(h, h, 3, padding=1, groups=h, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
            nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))
        self.head = nn.Sequential(nn.Hardswish(), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x):
        y = x + self.block(x)
        return ember.flatten(self.head(y), 1)


class MLP(nn.Module):
    def __init__(self, d=12, hidden=24):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.act = nn.GELU()
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, 3)

    def forward(self, x):
        h = self.norm(self.act(self.fc1(x)))
        h = h * 0.5 + F.gelu(h, approximate="tanh") / 2.0 - 0.1
        return self.fc2(h.view(h.size(0), -1))


class Decoder(nn.Module):
    """Upsampling, interpolation to a size, concatenation and a transposed convolution."""

    def __init__(self):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv = nn.Conv2d(4, 4, 3, padding="same", padding_mode="reflect")
        self.deconv = nn.ConvTranspose2d(8, 3, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        a = self.conv(self.up(x))
        b = F.interpolate(x, size=(10, 10), mode="bilinear", align_corners=False)
        return self.deconv(ember.cat([a, b], dim=1)).sigmoid()


# --- round trips ---------------------------------------------------------------------------------
def test_sequential_cnn(tmp_path, rng):
    model = _cnn()
    x = _input(rng, 2, 3, 16, 16)
    _warm_batch_norms(model, x)  # left in training mode: export runs it in eval mode
    stats = model[1].running_mean.numpy().copy()
    proto = roundtrip(model, x, tmp_path / "cnn.onnx")
    np.testing.assert_array_equal(model[1].running_mean.numpy(), stats)
    assert _ops(proto) == ["Conv", "BatchNormalization", "Relu", "MaxPool", "Conv",
                           "BatchNormalization", "Relu", "AveragePool", "Flatten", "Gemm"]
    assert _inferred_output_shape(proto) == ["batch", 10]
    names = {t.name for t in proto.graph.initializer}
    assert {"0.weight", "1.running_mean", "10.bias"} <= names


def test_sequential_cnn_matches_torch(tmp_path, rng):
    model = _cnn()
    x = _input(rng, 3, 3, 16, 16)
    _warm_batch_norms(model, x)
    ember.onnx.export(model, x, str(tmp_path / "cnn.onnx"))
    t = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False),
        torch.nn.BatchNorm2d(16), torch.nn.ReLU(), torch.nn.AvgPool2d(2), torch.nn.Dropout(0.3),
        torch.nn.Flatten(), torch.nn.Linear(64, 10))
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    t.eval()
    want = t(torch.tensor(x.numpy())).detach().numpy()
    got = ember.onnx.load(str(tmp_path / "cnn.onnx"))(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_residual_block_custom_forward(tmp_path, rng):
    model = TinyResNet()
    x = _input(rng, 2, 3, 8, 8)
    _warm_batch_norms(model, x)
    proto = roundtrip(model, x, tmp_path / "resnet.onnx")
    ops = _ops(proto)
    assert ops.count("Conv") == 4 and "Add" in ops and "GlobalAveragePool" in ops
    assert _inferred_output_shape(proto) == ["batch", 4]
    inputs = {n.name: list(n.input) for n in proto.graph.node}
    assert any(len(i) == 2 for n, i in inputs.items() if n.startswith("Add"))


@pytest.mark.parametrize("opset", [13, 14])
def test_mobilenet_block(tmp_path, rng, opset):
    model = InvertedResidual(4)
    x = _input(rng, 2, 4, 6, 6)
    _warm_batch_norms(model, x)
    proto = roundtrip(model, x, tmp_path / "mobilenet.onnx", opset=opset)
    convs = [n for n in proto.graph.node if n.op_type == "Conv"]
    groups = [next((a.i for a in n.attribute if a.name == "group"), 1) for n in convs]
    assert groups == [1, 16, 1]
    assert _ops(proto).count("Clip") == 2
    assert ("HardSwish" in _ops(proto)) == (opset >= 14)
    assert _inferred_output_shape(proto) == ["batch", 4]


@pytest.mark.parametrize("opset", [17, 13])
def test_mlp_gelu_layer_norm(tmp_path, rng, opset):
    model = MLP()
    x = _input(rng, 4, 12)
    proto = roundtrip(model, x, tmp_path / "mlp.onnx", opset=opset,
                      input_names=["input"], output_names=["output"])
    assert ("LayerNormalization" in _ops(proto)) == (opset >= 17)
    assert "Erf" in _ops(proto) and "Gelu" not in _ops(proto)
    assert _inferred_output_shape(proto) == ["batch", 3]


def test_decoder_resize_cat_conv_transpose(tmp_path, rng):
    model = Decoder()
    x = _input(rng, 2, 4, 5, 5)
    proto = roundtrip(model, x, tmp_path / "decoder.onnx")
    ops = _ops(proto)
    assert ops.count("Resize") == 2 and "Concat" in ops and "ConvTranspose" in ops
    assert "Pad" in ops  # reflect padding before its convolution
    assert _inferred_output_shape(proto) == ["batch", 3, 20, 20]


def test_activations_and_norms(tmp_path, rng):
    model = nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.GroupNorm(3, 6), nn.LeakyReLU(0.2), nn.ELU(0.7),
        nn.Softplus(beta=2.0, threshold=1.0), nn.SiLU(), nn.InstanceNorm2d(6, affine=True),
        nn.Mish(), nn.Hardsigmoid(), nn.Tanh(), nn.PReLU(6), nn.Hardtanh(-0.5, 0.5),
        nn.Sigmoid(), nn.MaxPool2d(3, stride=2, padding=1), nn.Identity(), nn.Flatten(),
        nn.Linear(6 * 4 * 4, 5), nn.GELU(approximate="tanh"))
    x = _input(rng, 2, 3, 7, 7)
    proto = roundtrip(model, x, tmp_path / "acts.onnx")
    assert _inferred_output_shape(proto) == ["batch", 5]


class TensorOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(ember.tensor([0.5, -1.0, 2.0]))
        self.offset = ember.tensor([1.0, 2.0, 3.0])  # a plain tensor attribute: a constant

    def forward(self, x):
        y = (x - self.offset) * self.scale
        y = 1.0 / (1.0 + y.abs()) + 2 ** x - x.exp().sqrt()
        z = y.unsqueeze(1).transpose(1, 2).reshape(x.shape[0], -1)
        w = ember.stack([z, z * 2], dim=1).sum(dim=1) + ember.ones(3)
        w = w.clamp(min=-3.0, max=3.0) @ self.scale.t().unsqueeze(1)
        return ember.cat([F.softmax(y, dim=1), w, y.mean(dim=1, keepdim=True)], dim=1)


def test_tensor_operations(tmp_path, rng):
    model = TensorOps()
    proto = roundtrip(model, _input(rng, 4, 3), tmp_path / "ops.onnx")
    assert _inferred_output_shape(proto) == ["batch", 5]


class Functional(nn.Module):
    """The functional forms, a 1-D convolution and BatchNorm1d, parameters read in forward."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)
        self.conv1d = nn.Conv1d(4, 4, 3, padding=1, padding_mode="replicate")
        self.bn1d = nn.BatchNorm1d(4)
        self.norm = nn.LayerNorm(4)
        self.fc = nn.Linear(4, 3)
        self.blocks = nn.ModuleList([nn.ReLU(), nn.Tanh()])

    def forward(self, x):
        y = F.conv2d(F.pad(x, (1, 1, 2, 0), mode="reflect"), self.conv.weight, self.conv.bias,
                     stride=1, padding=1)
        y = F.max_pool2d(F.avg_pool2d(y, 2, stride=1), 2, padding=1)
        y = F.batch_norm(y, self.bn1d.running_mean, self.bn1d.running_var, self.bn1d.weight,
                         self.bn1d.bias, False, 0.1, 1e-3)
        for block in self.blocks:
            y = block(y)
        z = self.bn1d(self.conv1d(y.flatten(2)))                     # [N, 4, L]
        z = F.layer_norm(z.permute(0, 2, 1), (4,), self.norm.weight, self.norm.bias)
        z = F.linear(z, self.fc.weight, self.fc.bias).amax(dim=1)    # [N, 3]
        w = F.adaptive_avg_pool2d(y, 1).view_as(ember.zeros(y.shape[0], 4, 1))
        return ember.cat([z, w.squeeze(2), F.log_softmax(z, dim=1)], dim=1)


def test_functional_forms(tmp_path, rng):
    model = Functional()
    x = _input(rng, 2, 2, 6, 6)
    _warm_batch_norms(model, x)
    proto = roundtrip(model, x, tmp_path / "functional.onnx")
    assert _inferred_output_shape(proto) == ["batch", 10]


def test_several_inputs_outputs_and_file_object(tmp_path, rng):
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, a, b):
            return self.fc(a), a + b, a

    model = Two()
    a, b = _input(rng, 2, 3), _input(rng, 2, 3)
    path = tmp_path / "two.onnx"
    with open(path, "wb") as f:
        ember.onnx.export(model, (a, b), f, input_names=["a", "b"], output_names=["y", "s", "a2"])
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    loaded = ember.onnx.load(str(path))
    assert [n for n, _, _ in loaded.inputs] == ["a", "b"]
    assert [n for n, _, _ in loaded.outputs] == ["y", "s", "a2"]
    y, s, a2 = loaded(a, b)
    with ember.no_grad():
        want = model(a, b)
    for got, w in zip((y, s, a2), want):
        np.testing.assert_allclose(got.numpy(), w.numpy(), rtol=RTOL, atol=ATOL)


# --- refusals ------------------------------------------------------------------------------------
class Sorting(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).sort(dim=1)[0]


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Sorting()

    def forward(self, x):
        return self.inner(x)


def _export_error(model, x, tmp_path):
    with pytest.raises(ember.onnx.UnsupportedOperatorError) as info:
        ember.onnx.export(model, x, str(tmp_path / "bad.onnx"))
    assert isinstance(info.value, ember.Error)
    assert not (tmp_path / "bad.onnx").exists()
    return str(info.value)


def test_unsupported_method_names_op_and_module(tmp_path, rng):
    model = Outer()
    model.train()
    msg = _export_error(model, _input(rng, 2, 4), tmp_path)
    assert msg.startswith("ember.onnx.export: Tensor.sort in 'inner' (Sorting) cannot be exported")
    # Everything patched is restored and the modes are back.
    assert model.training and model.inner.fc.training
    assert nn.Module.__call__.__qualname__ == "Module.__call__"
    assert not isinstance(model.inner.fc.weight, ember.onnx._graph.Value)
    assert ember.relu(ember.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]


@pytest.mark.parametrize("forward, op", [
    (lambda x: ember.topk(x, 2)[0], "ember.topk"),
    (lambda x: F.cross_entropy(x, ember.tensor([0, 1])), "ember.nn.functional.cross_entropy"),
    (lambda x: x[0], "indexing (tensor[...])"),
    (lambda x: x * float(x.sum()), "float(tensor)"),
    (lambda x: x + ember.from_numpy(np.asarray(x)), "numpy.asarray(tensor)"),
    (lambda x: ember._C.relu(x), "a C++ function called with a traced tensor"),
    (lambda x: x + ember.randn(4), "a tensor computed outside the recorded operations"),
    (lambda x: F.dropout(x, 0.5), "dropout(training=True)"),
    (lambda x: x.relu_(), "Tensor.relu_"),
])
def test_unsupported_operations(tmp_path, rng, forward, op):
    class Custom(nn.Module):
        def forward(self, x):
            return forward(x)

    msg = _export_error(Custom(), _input(rng, 2, 4), tmp_path)
    assert msg.startswith(f"ember.onnx.export: {op} in the top-level module (Custom) cannot be "
                          "exported"), msg


def test_unsupported_layers(tmp_path, rng):
    msg = _export_error(nn.Sequential(nn.Linear(4, 4), nn.Embedding(4, 2)),
                        _input(rng, 2, 4), tmp_path)
    assert "Embedding in '1' (Embedding) cannot be exported" in msg
    msg = _export_error(nn.model("mlp", in_channels=1, image_size=4),
                        _input(rng, 2, 1, 4, 4), tmp_path)
    assert "CppModule" in msg
    msg = _export_error(nn.Sequential(nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular")),
                        _input(rng, 1, 2, 5, 5), tmp_path)
    assert "padding_mode='circular' in '0' (Conv2d)" in msg
    msg = _export_error(nn.Sequential(nn.AdaptiveAvgPool2d(3)), _input(rng, 1, 2, 5, 5),
                        tmp_path)
    assert "adaptive average pooling from (5, 5) to (3, 3)" in msg
    bn = nn.BatchNorm2d(2, track_running_stats=False)
    assert "track_running_stats=False" in _export_error(bn, _input(rng, 2, 2, 3, 3), tmp_path)


def test_bad_arguments(tmp_path, rng):
    model, x = nn.Sequential(nn.Linear(4, 2)), _input(rng, 2, 4)
    with pytest.raises(ember.IOError, match="cannot write"):
        ember.onnx.export(model, x, str(tmp_path / "no" / "such" / "dir.onnx"))
    with pytest.raises(ember.ValueError, match="opset_version must be 13 to 17"):
        ember.onnx.export(model, x, str(tmp_path / "m.onnx"), opset_version=11)
    with pytest.raises(ember.ValueError, match="dynamic_axes names 'batch'"):
        ember.onnx.export(model, x, str(tmp_path / "m.onnx"), dynamic_axes={"batch": [0]})
    with pytest.raises(ember.ValueError, match="input_names must be 1 distinct strings"):
        ember.onnx.export(model, x, str(tmp_path / "m.onnx"), input_names=["a", "b"])
    with pytest.raises(TypeError, match="args must be a tensor"):
        ember.onnx.export(model, x.numpy(), str(tmp_path / "m.onnx"))
