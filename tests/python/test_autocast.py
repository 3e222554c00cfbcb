"""ember.autocast against torch.autocast on the cpu (bfloat16): the output dtype of every op of
the policy table and of some outside it for (float32, float32), (bfloat16, float32) and
(bfloat16, bfloat16) inputs, where PyTorch's cpu list agrees with Ember's one table; where it
does not (PyTorch's cpu keeps exp, log, pow, softplus, sum, softmax and log_softmax of bfloat16 in
bfloat16, its cuda list computes them in float32, as Ember does everywhere), the difference is
asserted too. Then the values and gradients of a small model under autocast, the emulator's
"cuda" region, nesting, the decorator, explicit dtypes and the errors."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from conftest import torch

TF = torch.nn.functional

OPS = {
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, ["low", "low", "low"]),
    "linear": (F.linear, TF.linear, ["low", "low", "low"]),
    "conv2d": (lambda a, b: F.conv2d(a.reshape(1, 1, 4, 4), b.reshape(1, 1, 4, 4)),
               lambda a, b: TF.conv2d(a.reshape(1, 1, 4, 4), b.reshape(1, 1, 4, 4)),
               ["low", "low", "low"]),
    "exp": (lambda a, b: ember.exp(a), lambda a, b: torch.exp(a), ["f32", "f32", "f32"]),
    "log": (lambda a, b: ember.log(a), lambda a, b: torch.log(a), ["f32", "f32", "f32"]),
    "pow": (lambda a, b: a ** 2, lambda a, b: a ** 2, ["f32", "f32", "f32"]),
    "softplus": (lambda a, b: F.softplus(a), lambda a, b: TF.softplus(a), ["f32", "f32", "f32"]),
    "sum": (lambda a, b: a.sum(), lambda a, b: a.sum(), ["f32", "f32", "f32"]),
    "softmax": (lambda a, b: F.softmax(a, 1), lambda a, b: TF.softmax(a, 1), ["f32", "f32", "f32"]),
    "log_softmax": (lambda a, b: F.log_softmax(a, 0), lambda a, b: TF.log_softmax(a, 0),
                    ["f32", "f32", "f32"]),
    "mse_loss": (F.mse_loss, TF.mse_loss, ["f32", "f32", "f32"]),
    "cross_entropy": (lambda a, b: F.cross_entropy(a, ember.tensor([0, 1, 2, 3])),
                      lambda a, b: TF.cross_entropy(a, torch.tensor([0, 1, 2, 3])),
                      ["f32", "f32", "f32"]),
    "nll_loss": (lambda a, b: F.nll_loss(a, ember.tensor([0, 1, 2, 3])),
                 lambda a, b: TF.nll_loss(a, torch.tensor([0, 1, 2, 3])), ["f32", "f32", "f32"]),
    "cat": (lambda a, b: ember.cat([a, b]), lambda a, b: torch.cat([a, b]), ["f32", "f32", "low"]),
    "stack": (lambda a, b: ember.stack([a, b]), lambda a, b: torch.stack([a, b]),
              ["f32", "f32", "low"]),
    "add": (lambda a, b: a + b, lambda a, b: a + b, ["f32", "f32", "low"]),
    "relu": (lambda a, b: F.relu(a), lambda a, b: TF.relu(a), ["f32", "low", "low"]),
    "mean": (lambda a, b: a.mean(), lambda a, b: a.mean(), ["f32", "low", "low"]),
}
# PyTorch's cpu list keeps these in the input's dtype; its cuda list (and Ember) use float32.
CPU_LIST_DIFFERS = {"exp", "log", "pow", "softplus", "sum", "softmax", "log_softmax"}


def _name(dtype):
    return str(dtype).split(".")[-1]


@pytest.mark.parametrize("op", list(OPS))
def test_autocast_output_dtypes_match_torch_cpu(op):
    fn, tfn, want = OPS[op]
    rng = np.random.default_rng()
    a = np.abs(rng.standard_normal((4, 4))).astype(np.float32) + 0.5
    b = rng.standard_normal((4, 4)).astype(np.float32)
    for i, (da, db) in enumerate([("float32", "float32"), ("bfloat16", "float32"),
                                  ("bfloat16", "bfloat16")]):
        ea = ember.tensor(a).to(getattr(ember, da))
        eb = ember.tensor(b).to(getattr(ember, db))
        ta = torch.from_numpy(a).to(getattr(torch, da))
        tb = torch.from_numpy(b).to(getattr(torch, db))
        with ember.autocast("cpu"):
            got = _name(fn(ea, eb).dtype)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            theirs = _name(tfn(ta, tb).dtype)
        expected = "bfloat16" if want[i] == "low" else "float32"
        assert got == expected, (op, da, db)
        if op in CPU_LIST_DIFFERS and da == "bfloat16":
            assert theirs == "bfloat16", (op, da, db)  # the documented difference
        else:
            assert theirs == got, (op, da, db)


def test_autocast_model_values_and_gradients():
    """A conv + linear model under autocast: the output is the bfloat16 computation of the
    rounded float32 weights (checked against float64 on the same rounded values), the loss is
    float32, and the parameters' gradients are float32 and match PyTorch's autocast ones."""
    ember.manual_seed(3)
    conv = ember.nn.Conv2d(2, 3, 3, padding=1)
    fc = ember.nn.Linear(3 * 5 * 5, 4)
    tconv = torch.nn.Conv2d(2, 3, 3, padding=1)
    tfc = torch.nn.Linear(3 * 5 * 5, 4)
    with torch.no_grad():
        for t, e in [(tconv.weight, conv.weight), (tconv.bias, conv.bias), (tfc.weight, fc.weight),
                     (tfc.bias, fc.bias)]:
            t.copy_(torch.from_numpy(e.detach().numpy()))
    x = np.random.default_rng(1).standard_normal((2, 2, 5, 5)).astype(np.float32)
    target = np.array([1, 3])
    with ember.autocast("cpu"):
        h = conv(ember.tensor(x))
        assert h.dtype == ember.bfloat16
        out = fc(F.relu(h).reshape(2, -1))
        assert out.dtype == ember.bfloat16
        loss = F.cross_entropy(out, ember.tensor(target))
        assert loss.dtype == ember.float32
    loss.backward()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tout = tfc(TF.relu(tconv(torch.from_numpy(x))).reshape(2, -1))
        tloss = TF.cross_entropy(tout, torch.from_numpy(target))
    tloss.backward()
    # The conv output against float64 on the bfloat16-rounded inputs and weights.
    xb = torch.from_numpy(x).bfloat16().double()
    wb = tconv.weight.detach().bfloat16().double()
    bb = tconv.bias.detach().bfloat16().double()
    want = TF.conv2d(xb, wb, bb, padding=1)
    np.testing.assert_allclose(h.detach().to(ember.float32).numpy(), want.numpy(), rtol=2 ** -7, atol=1e-5)
    # Loss and gradients: bfloat16 rounding on both sides, so within a few bfloat16 ulps.
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=3e-2)
    for e, t in [(conv.weight, tconv.weight), (fc.weight, tfc.weight), (fc.bias, tfc.bias)]:
        assert e.grad.dtype == ember.float32
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=5e-2,
                                   atol=5e-2 * float(np.abs(t.grad.numpy()).max()))


def test_autocast_on_the_emulator_nesting_decorator_and_cache():
    w = ember.randn(4, 4, device="emu", requires_grad=True)
    x = ember.randn(2, 4, device="emu")
    assert not ember.is_autocast_enabled("cuda")
    with ember.autocast("cuda"):
        assert ember.is_autocast_enabled("cuda") and ember.is_autocast_enabled("emu")
        assert ember.get_autocast_dtype("cuda") == ember.float16
        assert (x @ w).dtype == ember.float16
        assert ember._C._autocast_cache_size() == 1
        with ember.autocast("cuda", enabled=False):
            assert (x @ w).dtype == ember.float32
        with ember.cuda.amp.autocast(dtype=ember.bfloat16):
            assert (x @ w).dtype == ember.bfloat16
        assert (x @ w).dtype == ember.float16
        assert (x.cpu() @ w.detach().cpu()).dtype == ember.float32  # no cpu region
    assert ember._C._autocast_cache_size() == 0
    assert not ember.is_autocast_enabled("cuda")

    @ember.autocast("cuda")
    def forward(a, b):
        return a @ b

    assert forward(x, w).dtype == ember.float16
    assert (x @ w).dtype == ember.float32


def test_autocast_explicit_dtype_in_place_and_errors():
    a = ember.randn(3, 4, dtype=ember.bfloat16)
    with ember.autocast("cpu"):
        assert a.sum(dtype=ember.bfloat16).dtype == ember.bfloat16
        assert F.softmax(a, 1, dtype=ember.bfloat16).dtype == ember.bfloat16
        assert F.log_softmax(a, 1).dtype == ember.float32
        f = ember.zeros(3, 4)
        f += a  # in place: f keeps its dtype
        assert f.dtype == ember.float32
        x = ember.randn(2, 3, 4, dtype=ember.bfloat16)
        with pytest.raises(ember.DTypeError, match=r"float64 \(autocast on: cpu bfloat16\)"):
            F.batch_norm(x, None, None, ember.ones(3, dtype=ember.float64), None, training=True)
        p = ember.full((4,), 0.5)
        with pytest.raises(ember.ValueError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, p)
        assert F.binary_cross_entropy_with_logits(p.to(ember.bfloat16), p).dtype == ember.float32
    with pytest.raises(ember.ValueError, match=r"between 0 and 1, got values in \[-1, 0.5\]"):
        F.binary_cross_entropy(ember.tensor([-1.0, 0.5]), ember.tensor([0.0, 1.0]))
    with pytest.raises(ember.ShapeError, match="expected target of shape"):
        F.binary_cross_entropy_with_logits(ember.zeros(3), ember.zeros(4))
    with pytest.raises(ember.ValueError, match="'cuda', 'emu' or 'cpu', got 'tpu'"):
        ember.autocast("tpu")
    with pytest.raises(ember.DTypeError, match="expected dtype float16 or bfloat16"):
        with ember.autocast("cpu", dtype=ember.float32):
            pass
    assert not ember.is_autocast_enabled("cpu")
