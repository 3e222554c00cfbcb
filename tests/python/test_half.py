"""float16/bfloat16 ops against PyTorch's on the cpu (bfloat16: PyTorch 1.13 computes it on the
cpu, in float32, and rounds, as Ember does; products and gelu against PyTorch's float64) and on the
emulator, within 1 bfloat16 ulp; and PyTorch's promotion of the half types."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from conftest import torch

TF = torch.nn.functional
ULP = 2.0 ** -7  # bfloat16's relative spacing: 1 ulp at worst


def normal(shape):
    return lambda rng: rng.standard_normal(shape) * 2


def positive(shape):
    return lambda rng: rng.uniform(0.1, 4.0, shape)


SPECS = [
    ("add", lambda a, b: a + b, lambda a, b: a + b, [normal((3, 5)), normal((5,))]),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, [normal((4, 3)), normal((4, 3))]),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [normal((3, 7)), positive((7,))]),
    ("exp", ember.exp, torch.exp, [normal((3, 5))]),
    ("log", ember.log, torch.log, [positive((6,))]),
    ("sqrt", ember.sqrt, torch.sqrt, [positive((2, 9))]),
    ("sigmoid", ember.sigmoid, torch.sigmoid, [normal((33,))]),
    ("tanh", ember.tanh, torch.tanh, [normal((4, 4))]),
    ("relu", F.relu, TF.relu, [normal((17,))]),
    ("softmax", lambda a: F.softmax(a, dim=1), lambda a: TF.softmax(a, dim=1), [normal((3, 11))]),
    ("log_softmax", lambda a: F.log_softmax(a, dim=0), lambda a: TF.log_softmax(a, dim=0),
     [normal((7, 3))]),
    ("sum", lambda a: a.sum(dim=1), lambda a: a.sum(dim=1), [normal((4, 100))]),
    ("mean", lambda a: a.mean(), lambda a: a.mean(), [normal((6, 7))]),
    ("amax", lambda a: a.amax(dim=0), lambda a: a.amax(dim=0), [normal((5, 3))]),
    ("max_pool2d", lambda a: F.max_pool2d(a, 2), lambda a: TF.max_pool2d(a, 2),
     [normal((2, 3, 6, 5))]),
    ("avg_pool2d", lambda a: F.avg_pool2d(a, 3, stride=2, padding=1),
     lambda a: TF.avg_pool2d(a, 3, stride=2, padding=1), [normal((1, 2, 7, 7))]),
]


# Products against PyTorch in float64 on the same bfloat16 inputs: PyTorch 1.13's cpu bfloat16
# matmul accumulates in bfloat16 (errors of 0.3 on results near 20 here), Ember in float32.
# gelu too: PyTorch 1.13's cpu bfloat16 gelu works in bfloat16 and returns -0 for x below about
# -3.3, where the float64 value is -1.6e-3 and smaller.
PRODUCTS = [
    ("gelu", F.gelu, TF.gelu, [normal((5, 5))]),
    ("matmul", lambda a, b: a @ b, lambda a, b: a @ b, [normal((5, 16)), normal((16, 7))]),
    ("linear", F.linear, TF.linear, [normal((3, 8)), normal((4, 8)), normal((4,))]),
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1),
     lambda x, w, b: TF.conv2d(x, w, b, padding=1),
     [normal((2, 3, 7, 6)), normal((4, 3, 3, 3)), normal((4,))]),
    ("batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
     [normal((4, 3, 5, 2)), normal((3,)), normal((3,))]),
    ("mse_loss", F.mse_loss, TF.mse_loss, [normal((6, 5)), normal((6, 5))]),
]


@pytest.mark.parametrize("device", ["cpu", "emu"])
@pytest.mark.parametrize("name,fn,tfn,makers", SPECS + PRODUCTS,
                         ids=[s[0] for s in SPECS + PRODUCTS])
def test_bfloat16_ops_match_torch(name, fn, tfn, makers, device):
    rng = np.random.default_rng()
    arrays = [make(rng).astype(np.float32) for make in makers]
    # The same bfloat16 inputs for both: PyTorch's rounding of the float32 values.
    tin = [torch.from_numpy(a).to(torch.bfloat16) for a in arrays]
    ein = [ember.tensor(t.float().numpy()).to(ember.bfloat16).to(device) for t in tin]
    for e, t in zip(ein, tin):
        np.testing.assert_array_equal(e.to(ember.float32).cpu().numpy(), t.float().numpy())
    want = tfn(*[t.double() for t in tin]) if any(p[0] == name for p in PRODUCTS) else tfn(*tin)
    got = fn(*ein)
    assert got.dtype == ember.bfloat16
    assert got.device.type == device
    w = want.float().numpy()
    np.testing.assert_allclose(got.to(ember.float32).cpu().numpy(), w, rtol=ULP, atol=1e-6)


def test_half_promotion_matches_torch():
    pairs = [("float16", "bfloat16"), ("float16", "int64"), ("bfloat16", "bool"),
             ("float16", "float32"), ("bfloat16", "float64"), ("int32", "float16")]
    for a, b in pairs:
        want = torch.promote_types(getattr(torch, a), getattr(torch, b))
        got = (ember.ones(2, dtype=getattr(ember, a)) + ember.ones(2, dtype=getattr(ember, b))).dtype
        assert str(got).split(".")[-1] == str(want).split(".")[-1], (a, b)


def test_mixed_half_and_float_operands_raise_dtype_error():
    h = ember.ones(1, 1, 3, 3, dtype=ember.float16)
    with pytest.raises(ember.DTypeError, match="float16 and float32"):
        F.conv2d(h, h.to(ember.float32))


@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_half_cross_entropy_and_sgd_match_float64(device):
    rng = np.random.default_rng()
    logits = torch.from_numpy(rng.standard_normal((5, 7)).astype(np.float32)).to(torch.bfloat16)
    target = torch.from_numpy(rng.integers(0, 7, 5))
    x = ember.tensor(logits.float().numpy()).to(ember.bfloat16).to(device).requires_grad_()
    loss = F.cross_entropy(x, ember.tensor(target.numpy()).to(device))
    tx = logits.double().requires_grad_()
    want = TF.cross_entropy(tx, target)
    want.backward()
    assert loss.dtype == ember.bfloat16
    np.testing.assert_allclose(loss.to(ember.float32).item(), want.item(), rtol=ULP)
    loss.backward()
    np.testing.assert_allclose(x.grad.to(ember.float32).cpu().numpy(), tx.grad.numpy(),
                               rtol=ULP, atol=1e-6)
    # One SGD step with momentum on the bfloat16 parameter: the update in float32, rounded once.
    opt = ember.optim.SGD([x], lr=0.5, momentum=0.9)
    opt.step()
    p0 = torch.from_numpy(logits.float().numpy()).double()
    g = torch.from_numpy(x.grad.to(ember.float32).cpu().numpy()).double()
    np.testing.assert_allclose(x.detach().to(ember.float32).cpu().numpy(), (p0 - 0.5 * g).numpy(),
                               rtol=ULP, atol=1e-6)
