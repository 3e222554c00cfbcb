"""Every op's forward and gradients against PyTorch's computed in float64, on fresh random
inputs, odd shapes included; Ember in float32 (rtol 1e-4) and float64 (rtol 1e-10)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from conftest import NP_DTYPE, close, torch

TF = torch.nn.functional


def positive(shape):
    return lambda rng: rng.uniform(0.5, 2.0, shape)


def normal(shape):
    return lambda rng: rng.standard_normal(shape)


def away_from_zero(shape):
    # Kinks (relu at 0, abs at 0, clamp at its bounds) make finite precision differ at ties.
    def make(rng):
        x = rng.standard_normal(shape)
        return np.where(np.abs(x) < 0.05, 0.5, x)
    return make


def probability(shape):
    return lambda rng: rng.uniform(0.02, 0.98, shape)


def scaled_normal(shape, scale):
    return lambda rng: rng.standard_normal(shape) * scale


# (id, ember fn, torch fn, input makers). Each fn takes the inputs as tensors.
SPECS = [
    ("add", lambda a, b: a + b, lambda a, b: a + b, [normal((3, 5)), normal((5,))]),
    ("sub_bcast", lambda a, b: a - b, lambda a, b: a - b, [normal((2, 1, 7)), normal((3, 1))]),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, [normal((4, 3)), normal((4, 3))]),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [normal((3, 7)), positive((7,))]),
    ("neg_scalar", lambda a: 2.5 - a * 3, lambda a: 2.5 - a * 3, [normal((5,))]),
    ("rdiv", lambda a: 1 / a, lambda a: 1 / a, [positive((2, 3))]),
    ("pow_scalar", lambda a: a ** 3, lambda a: a ** 3, [normal((3, 3))]),
    ("pow_tensor", lambda a, b: ember.pow(a, b), lambda a, b: torch.pow(a, b), [positive((3, 4)), normal((4,))]),
    ("rpow", lambda a: 2.0 ** a, lambda a: 2.0 ** a, [normal((5,))]),
    ("exp", ember.exp, torch.exp, [normal((3, 5))]),
    ("log", ember.log, torch.log, [positive((7,))]),
    ("sqrt", ember.sqrt, torch.sqrt, [positive((2, 3, 5))]),
    ("abs", ember.abs, torch.abs, [away_from_zero((11,))]),
    ("clamp", lambda a: ember.clamp(a, -0.5, 0.7), lambda a: torch.clamp(a, -0.5, 0.7), [away_from_zero((13,))]),
    ("clamp_min", lambda a: a.clamp(min=0.1), lambda a: a.clamp(min=0.1), [away_from_zero((9,))]),
    ("maximum", ember.maximum, torch.maximum, [normal((3, 4)), normal((3, 4))]),
    ("minimum", ember.minimum, torch.minimum, [normal((3, 4)), normal((4,))]),
    ("where", lambda a, b: ember.where(a > 0, a, b), lambda a, b: torch.where(a > 0, a, b), [normal((3, 5)), normal((5,))]),
    ("sum_dim", lambda a: a.sum(1), lambda a: a.sum(1), [normal((3, 4, 5))]),
    ("sum_keep", lambda a: ember.sum(a, (0, 2), keepdim=True), lambda a: torch.sum(a, (0, 2), keepdim=True), [normal((3, 4, 5))]),
    ("mean", lambda a: a.mean(), lambda a: a.mean(), [normal((7, 3))]),
    ("mean_dim", lambda a: a.mean(-1), lambda a: a.mean(-1), [normal((2, 9))]),
    ("max_all", lambda a: a.max(), lambda a: a.max(), [normal((4, 5))]),
    ("max_dim", lambda a: a.max(1)[0], lambda a: a.max(1)[0], [normal((4, 5))]),
    ("min_dim", lambda a: a.min(0, keepdim=True)[0], lambda a: a.min(0, keepdim=True)[0], [normal((4, 5))]),
    ("amax", lambda a: a.amax((0, 1)), lambda a: a.amax((0, 1)), [normal((2, 3, 4))]),
    ("var", lambda a: a.var(1), lambda a: a.var(1), [normal((3, 6))]),
    ("std", lambda a: a.std(), lambda a: a.std(), [normal((5, 3))]),
    ("var_biased", lambda a: a.var(0, unbiased=False, keepdim=True), lambda a: a.var(0, unbiased=False, keepdim=True), [normal((5, 3))]),
    ("matmul", lambda a, b: a @ b, lambda a, b: a @ b, [normal((3, 5)), normal((5, 7))]),
    ("matmul_batched", ember.matmul, torch.matmul, [normal((2, 3, 5)), normal((2, 5, 4))]),
    ("matvec", ember.matmul, torch.matmul, [normal((3, 5)), normal((5,))]),
    ("reshape", lambda a: a.reshape(5, 6) * 2, lambda a: a.reshape(5, 6) * 2, [normal((2, 3, 5))]),
    ("view", lambda a: a.view(-1, 3) * 2, lambda a: a.view(-1, 3) * 2, [normal((4, 3))]),
    ("permute", lambda a: a.permute(2, 0, 1) * 2, lambda a: a.permute(2, 0, 1) * 2, [normal((2, 3, 5))]),
    ("transpose", lambda a: a.transpose(0, 1).contiguous(), lambda a: a.transpose(0, 1).contiguous(), [normal((3, 4))]),
    ("index", lambda a: a[1:, ::2, None, 1] * 3, lambda a: a[1:, ::2, None, 1] * 3, [normal((3, 5, 4))]),
    ("index_ellipsis", lambda a: a[..., 0] + a[0], lambda a: a[..., 0] + a[0], [normal((4, 4))]),
    ("expand", lambda a: a.expand(3, 4, 5), lambda a: a.expand(3, 4, 5), [normal((4, 1))]),
    ("squeeze_unsqueeze", lambda a: a.unsqueeze(0).squeeze(2), lambda a: a.unsqueeze(0).squeeze(2), [normal((3, 1, 2))]),
    ("flatten", lambda a: a.flatten(1), lambda a: a.flatten(1), [normal((2, 3, 4))]),
    ("cat", lambda a, b: ember.cat([a, b], 1), lambda a, b: torch.cat([a, b], 1), [normal((2, 3)), normal((2, 5))]),
    ("stack", lambda a, b: ember.stack([a, b], -1), lambda a, b: torch.stack([a, b], -1), [normal((2, 3)), normal((2, 3))]),
    ("to_dtype", lambda a: a.to(ember.float64) * 2, lambda a: a.to(torch.float64) * 2, [normal((3,))]),
    ("relu", F.relu, TF.relu, [away_from_zero((3, 7))]),
    ("leaky_relu", lambda a: F.leaky_relu(a, 0.2), lambda a: TF.leaky_relu(a, 0.2), [away_from_zero((5, 3))]),
    ("sigmoid", F.sigmoid, torch.sigmoid, [normal((2, 5))]),
    ("tanh", F.tanh, torch.tanh, [normal((2, 5))]),
    ("gelu", F.gelu, TF.gelu, [normal((3, 7))]),
    ("gelu_tanh", lambda a: F.gelu(a, approximate="tanh"), lambda a: TF.gelu(a, approximate="tanh"), [normal((3, 7))]),
    ("silu", F.silu, TF.silu, [normal((3, 7))]),
    ("elu", lambda a: F.elu(a, alpha=0.7), lambda a: TF.elu(a, alpha=0.7), [away_from_zero((9,))]),
    ("softplus", lambda a: F.softplus(a, beta=2, threshold=3), lambda a: TF.softplus(a, beta=2, threshold=3), [normal((3, 7))]),
    ("hardtanh", lambda a: F.hardtanh(a, -0.5, 1.5), lambda a: TF.hardtanh(a, -0.5, 1.5), [normal((4, 9))]),
    ("relu6", lambda a: F.relu6(a * 4), lambda a: TF.relu6(a * 4), [normal((4, 9))]),
    ("softmax", lambda a: F.softmax(a, 1), lambda a: TF.softmax(a, 1), [normal((3, 7))]),
    ("log_softmax", lambda a: F.log_softmax(a, -1), lambda a: TF.log_softmax(a, -1), [normal((2, 3, 5))]),
    ("linear", F.linear, TF.linear, [normal((3, 5)), normal((7, 5)), normal((7,))]),
    ("linear_nobias", lambda x, w: F.linear(x, w), lambda x, w: TF.linear(x, w), [normal((2, 3, 5)), normal((4, 5))]),
    ("conv2d", F.conv2d, TF.conv2d, [normal((2, 3, 7, 9)), normal((5, 3, 3, 3)), normal((5,))]),
    ("conv2d_strided", lambda x, w: F.conv2d(x, w, stride=2, padding=(1, 2), dilation=(1, 2)),
     lambda x, w: TF.conv2d(x, w, stride=2, padding=(1, 2), dilation=(1, 2)), [normal((1, 2, 9, 8)), normal((3, 2, 3, 3))]),
    ("conv2d_groups", lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=3),
     lambda x, w, b: TF.conv2d(x, w, b, padding=1, groups=3), [normal((2, 6, 5, 5)), normal((9, 2, 3, 3)), normal((9,))]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [normal((2, 3, 7, 6))]),
    ("max_pool2d_pad", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
     lambda x: TF.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), [normal((1, 2, 9, 8))]),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
     lambda x: TF.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), [normal((2, 3, 7, 6))]),
    ("avg_pool2d_default", lambda x: F.avg_pool2d(x, 2), lambda x: TF.avg_pool2d(x, 2), [normal((1, 1, 5, 5))]),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 2)), lambda x: TF.adaptive_avg_pool2d(x, (3, 2)), [normal((2, 3, 7, 5))]),
    ("adaptive_avg_pool2d_1", lambda x: F.adaptive_avg_pool2d(x, 1), lambda x: TF.adaptive_avg_pool2d(x, 1), [normal((2, 3, 4, 4))]),
    ("batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True), [normal((4, 3, 5, 3)), normal((3,)), normal((3,))]),
    ("batch_norm_eval", lambda x, w, b: F.batch_norm(x, ember.full((3,), 0.2, dtype=x.dtype), ember.full((3,), 1.5, dtype=x.dtype), w, b),
     lambda x, w, b: TF.batch_norm(x, torch.full((3,), 0.2, dtype=x.dtype), torch.full((3,), 1.5, dtype=x.dtype), w, b),
     [normal((2, 3, 4, 5)), normal((3,)), normal((3,))]),
    ("rsqrt", ember.rsqrt, torch.rsqrt, [positive((4, 3))]),
    ("sub_fn", ember.sub, torch.sub, [normal((3, 1)), normal((1, 4))]),
    ("neg_fn", ember.neg, torch.neg, [normal((6,))]),
    ("mse_loss", F.mse_loss, TF.mse_loss, [normal((3, 5)), normal((3, 5))]),
    ("mse_loss_sum", lambda a, b: F.mse_loss(a, b, reduction="sum"), lambda a, b: TF.mse_loss(a, b, reduction="sum"), [normal((7,)), normal((7,))]),
    ("binary_cross_entropy", lambda x, y: F.binary_cross_entropy(x, y, ember.full((5,), 0.7, dtype=x.dtype)),
     lambda x, y: TF.binary_cross_entropy(x, y, torch.full((5,), 0.7, dtype=x.dtype)), [probability((4, 5)), probability((4, 5))]),
    ("binary_cross_entropy_sum", lambda x, y: F.binary_cross_entropy(x, y, reduction="sum"),
     lambda x, y: TF.binary_cross_entropy(x, y, reduction="sum"), [probability((7,)), probability((7,))]),
    ("bce_with_logits", F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits,
     [scaled_normal((3, 4), 8), probability((3, 4))]),
    ("bce_with_logits_pos_weight",
     lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none", pos_weight=ember.tensor([0.5, 1.0, 3.0], dtype=x.dtype)),
     lambda x, y: TF.binary_cross_entropy_with_logits(x, y, reduction="none", pos_weight=torch.tensor([0.5, 1.0, 3.0], dtype=x.dtype)),
     [scaled_normal((2, 5, 3), 8), probability((2, 5, 3))]),
]


@pytest.mark.parametrize("name,efn,tfn,makers", SPECS, ids=[s[0] for s in SPECS])
def test_op_forward_and_gradients(name, efn, tfn, makers, dtype, rng):
    arrays = [m(rng).astype(NP_DTYPE[dtype]) for m in makers]
    e_in = [ember.tensor(a, requires_grad=True) for a in arrays]
    # The reference in float64, so that float32's tolerance covers Ember's rounding only.
    t_in = [torch.tensor(a.astype(np.float64), requires_grad=True) for a in arrays]
    e_out, t_out = efn(*e_in), tfn(*t_in)
    close(e_out, t_out, dtype, f"{name} forward")
    # A random weighting makes every output element's gradient matter.
    w = rng.standard_normal(tuple(t_out.shape)).astype(np.float64)
    (e_out * ember.tensor(w, dtype=e_out.dtype)).sum().backward()
    (t_out * torch.tensor(w, dtype=t_out.dtype)).sum().backward()
    for i, (ei, ti) in enumerate(zip(e_in, t_in)):
        assert ei.grad is not None, f"{name}: no gradient for input {i}"
        close(ei.grad, ti.grad, dtype, f"{name} grad of input {i}")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy(reduction, smoothing, dtype, rng):
    n, c = 7, 5
    x = rng.standard_normal((n, c)).astype(NP_DTYPE[dtype])
    y = rng.integers(0, c, n)
    y[2] = -100
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eo = F.cross_entropy(ex, ember.tensor(y), reduction=reduction, label_smoothing=smoothing)
    to = TF.cross_entropy(tx, torch.tensor(y), reduction=reduction, label_smoothing=smoothing)
    close(eo, to, dtype, "cross_entropy")
    eo.sum().backward()
    to.sum().backward()
    close(ex.grad, tx.grad, dtype, "cross_entropy grad")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction, dtype, rng):
    x = rng.standard_normal((6, 4)).astype(NP_DTYPE[dtype])
    y = rng.integers(0, 4, 6)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eo = F.nll_loss(F.log_softmax(ex, 1), ember.tensor(y), ignore_index=y[0], reduction=reduction)
    to = TF.nll_loss(TF.log_softmax(tx, 1), torch.tensor(y), ignore_index=int(y[0]), reduction=reduction)
    close(eo, to, dtype, "nll_loss")
    eo.sum().backward()
    to.sum().backward()
    close(ex.grad, tx.grad, dtype, "nll_loss grad")


def test_batch_norm_running_stats_and_eval(dtype, rng):
    x = rng.standard_normal((5, 3, 4, 4)).astype(NP_DTYPE[dtype])
    rm, rv = np.zeros(3, NP_DTYPE[dtype]), np.ones(3, NP_DTYPE[dtype])
    erm, erv, trm, trv = ember.tensor(rm), ember.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    F.batch_norm(ember.tensor(x), erm, erv, training=True, momentum=0.3)
    TF.batch_norm(torch.tensor(x), trm, trv, training=True, momentum=0.3)
    close(erm, trm, dtype, "running_mean")
    close(erv, trv, dtype, "running_var")
    close(F.batch_norm(ember.tensor(x), erm, erv), TF.batch_norm(torch.tensor(x), trm, trv), dtype, "eval")


def test_max_pool2d_return_indices(rng):
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    ev, ei = F.max_pool2d(ember.tensor(x), 2, return_indices=True)
    tv, ti = TF.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


def test_dropout_statistics_and_mask_gradient():
    ember.manual_seed(0)
    x = ember.ones(10000, requires_grad=True)
    y = F.dropout(x, p=0.3)
    kept = (y != 0).sum().item() / 10000
    assert abs(kept - 0.7) < 0.03
    np.testing.assert_allclose(y.detach().numpy()[y.detach().numpy() != 0], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    assert F.dropout(x, 0.5, training=False).detach().tolist() == x.detach().tolist()


def test_functions_are_the_same_in_both_namespaces():
    for name in ["conv2d", "max_pool2d", "cross_entropy", "softmax", "linear"]:
        assert getattr(ember, name) is getattr(F, name)
    # torch.nn.functional's relu and dropout take inplace=, torch's top-level ones do not.
    x = ember.tensor([-1.0, 2.0])
    assert F.relu(x, inplace=False).tolist() == ember.relu(x).tolist() == [0.0, 2.0]
    assert F.dropout(x, 0.5, training=False, inplace=False).tolist() == x.tolist()


NONCONTIG = [
    ("add", lambda a, b: a + b, lambda a, b: a + b),
    ("mul", lambda a, b: a * b, lambda a, b: a * b),
    ("matmul", lambda a, b: a @ b, lambda a, b: a @ b),
    ("maximum", ember.maximum, torch.maximum),
    ("where", lambda a, b: ember.where(a > b, a, b), lambda a, b: torch.where(a > b, a, b)),
]


@pytest.mark.parametrize("name,efn,tfn", NONCONTIG, ids=[s[0] for s in NONCONTIG])
def test_non_contiguous_inputs(name, efn, tfn, dtype, rng):
    """Transposed and strided views as inputs, forward and gradients."""
    a = rng.standard_normal((5, 5)).astype(NP_DTYPE[dtype])
    b = rng.standard_normal((10, 5)).astype(NP_DTYPE[dtype])
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ev, tv = (ea.t(), eb[::2].t()), (ta.t(), tb[::2].t())
    if name == "matmul":
        ev, tv = (ea, eb[::2].t()), (ta, tb[::2].t())
    assert not ev[1].is_contiguous()
    e_out, t_out = efn(*ev), tfn(*tv)
    close(e_out, t_out, dtype, name)
    e_out.sum().backward()
    t_out.sum().backward()
    close(ea.grad, ta.grad, dtype, name + " grad a")
    close(eb.grad, tb.grad, dtype, name + " grad b")


def test_conv2d_non_contiguous_input(dtype, rng):
    x = rng.standard_normal((2, 7, 7, 3)).astype(NP_DTYPE[dtype])  # NHWC, viewed as NCHW
    w = rng.standard_normal((4, 3, 3, 3)).astype(NP_DTYPE[dtype])
    ex, ew = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    eo = F.conv2d(ex.permute(0, 3, 1, 2), ew, padding=1)
    to = TF.conv2d(tx.permute(0, 3, 1, 2), tw, padding=1)
    close(eo, to, dtype, "conv2d")
    eo.sum().backward()
    to.sum().backward()
    close(ex.grad, tx.grad, dtype, "conv2d grad x")
    close(ew.grad, tw.grad, dtype, "conv2d grad w")
