"""The losses, attention and containers of ember.nn against PyTorch 1.13 on fresh random inputs:
values and gradients with class weights, probability targets, pos_weight, ignore_index, label
smoothing and every reduction; MultiheadAttention with every mask and layout option, and
scaled_dot_product_attention (not in torch 1.13) against a float64 reference written here; the
modules' attributes and state_dict keys."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from conftest import NP_DTYPE, close, torch
from nn_vs_torch import TF, both, normal, positive, probs, run_pair


def _weights(c, dtype, rng):
    return rng.uniform(0.2, 3.0, c).astype(NP_DTYPE[dtype])


def _f64(a):
    """A torch tensor for run_pair's float64 reference."""
    return torch.tensor(a, dtype=torch.float64)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("ignore", [-100, 2])
def test_cross_entropy_weighted(reduction, smoothing, ignore, dtype, rng):
    x = normal(6, 4, 3)(rng).astype(NP_DTYPE[dtype])
    y = rng.integers(0, 4, (6, 3))
    y[1, 2] = ignore if ignore >= 0 else -100
    w = _weights(4, dtype, rng)
    run_pair(lambda a: F.cross_entropy(a, ember.tensor(y), ember.tensor(w), ignore_index=ignore,
                                       reduction=reduction, label_smoothing=smoothing),
             lambda a: TF.cross_entropy(a, torch.tensor(y), _f64(w), ignore_index=ignore,
                                        reduction=reduction, label_smoothing=smoothing),
             [x], dtype, rng, "cross_entropy weighted")
    run_pair(lambda a: F.nll_loss(a, ember.tensor(y), weight=ember.tensor(w), ignore_index=ignore,
                                  reduction=reduction),
             lambda a: TF.nll_loss(a, torch.tensor(y), weight=_f64(w), ignore_index=ignore,
                                   reduction=reduction),
             [x], dtype, rng, "nll_loss weighted")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_probability_targets(reduction, smoothing, weighted, dtype, rng):
    x, p = normal(5, 4, 2)(rng).astype(NP_DTYPE[dtype]), probs(5, 4, 2)(rng).astype(NP_DTYPE[dtype])
    w = _weights(4, dtype, rng) if weighted else None
    ew, tw = (ember.tensor(w), _f64(w)) if weighted else (None, None)
    run_pair(lambda a, b: F.cross_entropy(a, b, ew, reduction=reduction, label_smoothing=smoothing),
             lambda a, b: TF.cross_entropy(a, b, tw, reduction=reduction, label_smoothing=smoothing),
             [x, p], dtype, rng, "cross_entropy probabilities")


LOSS_SPECS = [
    ("l1_loss", {}, [normal(3, 5), normal(3, 5)]),
    ("smooth_l1_loss", dict(beta=0.5), [normal(3, 5), normal(3, 5)]),
    ("smooth_l1_loss", dict(beta=0.0), [normal(3, 5), normal(3, 5)]),
    ("huber_loss", dict(delta=0.7), [normal(3, 5), normal(3, 5)]),
    ("kl_div", {}, [normal(3, 5), positive(3, 5)]),
    ("kl_div", dict(log_target=True), [normal(3, 5), normal(3, 5)]),
    ("mse_loss", {}, [normal(4, 2), normal(4, 2)]),
    ("binary_cross_entropy_with_logits", {}, [normal(3, 4), positive(3, 4)]),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,kw,makers", LOSS_SPECS, ids=[f"{s[0]}{s[1]}" for s in LOSS_SPECS])
def test_regression_losses(name, kw, makers, reduction, dtype, rng):
    efn, tfn = both(name, reduction=reduction, **kw)
    run_pair(efn, tfn, [m(rng).astype(NP_DTYPE[dtype]) for m in makers], dtype, rng, name)


def test_kl_div_batchmean(dtype, rng):
    efn, tfn = both("kl_div", reduction="batchmean")
    run_pair(efn, tfn, [normal(4, 5)(rng).astype(NP_DTYPE[dtype]),
                        positive(4, 5)(rng).astype(NP_DTYPE[dtype])], dtype, rng, "batchmean")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_embedding_losses(reduction, dtype, rng):
    y = np.array([1, -1, 1, -1, -1], dtype=NP_DTYPE[dtype])
    for margin in (0.0, 0.3):
        run_pair(lambda a, b: F.cosine_embedding_loss(a, b, ember.tensor(y), margin, reduction=reduction),
                 lambda a, b: TF.cosine_embedding_loss(a, b, torch.tensor(y), margin, reduction=reduction),
                 [normal(5, 4)(rng).astype(NP_DTYPE[dtype]), normal(5, 4)(rng).astype(NP_DTYPE[dtype])],
                 dtype, rng, "cosine_embedding_loss")
        run_pair(lambda a, b: F.margin_ranking_loss(a, b, ember.tensor(y), margin, reduction=reduction),
                 lambda a, b: TF.margin_ranking_loss(a, b, torch.tensor(y), margin, reduction=reduction),
                 [normal(5)(rng).astype(NP_DTYPE[dtype]), normal(5)(rng).astype(NP_DTYPE[dtype])],
                 dtype, rng, "margin_ranking_loss")


def test_bce_losses_weighted(dtype, rng):
    x, p = normal(4, 3)(rng).astype(NP_DTYPE[dtype]), positive(4, 3)(rng).astype(NP_DTYPE[dtype])
    w, pw = _weights(3, dtype, rng), _weights(3, dtype, rng)
    for reduction in ("mean", "sum", "none"):
        e = nn.BCEWithLogitsLoss(weight=ember.tensor(w), reduction=reduction, pos_weight=ember.tensor(pw))
        t = torch.nn.BCEWithLogitsLoss(weight=torch.tensor(w), reduction=reduction, pos_weight=torch.tensor(pw))
        run_pair(e, t, [x, p], dtype, rng, "BCEWithLogitsLoss")
        assert list(e.state_dict()) == list(t.state_dict()) == ["weight", "pos_weight"]
        sig = 1 / (1 + np.exp(-x))
        run_pair(nn.BCELoss(ember.tensor(w), reduction=reduction),
                 torch.nn.BCELoss(torch.tensor(w), reduction=reduction), [sig, p], dtype, rng, "BCELoss")


def test_loss_modules_attributes():
    w = np.array([1.0, 2.0, 0.5], np.float32)
    pairs = [
        (nn.CrossEntropyLoss(ember.tensor(w), ignore_index=1, label_smoothing=0.1),
         torch.nn.CrossEntropyLoss(torch.tensor(w), ignore_index=1, label_smoothing=0.1),
         ("reduction", "ignore_index", "label_smoothing")),
        (nn.NLLLoss(reduction="sum"), torch.nn.NLLLoss(reduction="sum"), ("reduction", "ignore_index")),
        (nn.SmoothL1Loss(beta=0.3), torch.nn.SmoothL1Loss(beta=0.3), ("reduction", "beta")),
        (nn.HuberLoss(delta=2.0), torch.nn.HuberLoss(delta=2.0), ("reduction", "delta")),
        (nn.KLDivLoss(reduction="batchmean", log_target=True),
         torch.nn.KLDivLoss(reduction="batchmean", log_target=True), ("reduction", "log_target")),
        (nn.CosineEmbeddingLoss(0.2), torch.nn.CosineEmbeddingLoss(0.2), ("margin", "reduction")),
        (nn.MarginRankingLoss(0.2), torch.nn.MarginRankingLoss(0.2), ("margin", "reduction")),
        (nn.L1Loss(size_average=False), torch.nn.L1Loss(size_average=False), ("reduction",)),
    ]
    for e, t, attrs in pairs:
        for a in attrs:
            assert getattr(e, a) == getattr(t, a), (type(t).__name__, a)
        assert list(e.state_dict()) == list(t.state_dict())
    with pytest.raises(ember.ShapeError, match="weight of shape \\[3\\]"):
        F.cross_entropy(ember.zeros(2, 3), ember.tensor([0, 1]), weight=ember.ones(4))
    with pytest.raises(ember.ShapeError):
        F.cross_entropy(ember.zeros(2, 3), ember.tensor([[0, 1]]))
    with pytest.raises(ember.ShapeError):
        F.l1_loss(ember.zeros(2, 3), ember.zeros(3, 2))
    with pytest.raises(ember.ValueError, match="ignore_index"):
        F.cross_entropy(ember.zeros(2, 3), ember.zeros(2, 3), ignore_index=0)


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True), dict(bias=False),
                                dict(add_bias_kv=True), dict(add_zero_attn=True),
                                dict(kdim=3, vdim=5)],
                         ids=["default", "batch_first", "no_bias", "bias_kv", "zero_attn", "kdim_vdim"])
@pytest.mark.parametrize("masks", ["none", "bool", "float"])
def test_multihead_attention(kw, masks, dtype, rng):
    e_dim, heads, L, S, N = 8, 2, 4, 5, 3
    torch.manual_seed(4)
    t = torch.nn.MultiheadAttention(e_dim, heads, **kw)
    t = t.to(torch.float64)  # the reference: run_pair compares with float64
    e = nn.MultiheadAttention(e_dim, heads, **kw).to(dtype)
    assert list(e.state_dict()) == list(t.state_dict())
    for a in ("embed_dim", "kdim", "vdim", "_qkv_same_embed_dim", "num_heads", "dropout",
              "batch_first", "head_dim"):
        assert getattr(e, a) == getattr(t, a), a
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    bf = kw.get("batch_first", False)
    kd, vd = kw.get("kdim", e_dim), kw.get("vdim", e_dim)
    q = normal(*((N, L, e_dim) if bf else (L, N, e_dim)))(rng).astype(NP_DTYPE[dtype])
    k = normal(*((N, S, kd) if bf else (S, N, kd)))(rng).astype(NP_DTYPE[dtype])
    v = normal(*((N, S, vd) if bf else (S, N, vd)))(rng).astype(NP_DTYPE[dtype])
    kpm = np.zeros((N, S), bool)
    kpm[0, 1] = kpm[2, 4] = True
    am = rng.uniform(size=(L, S)) < 0.3
    am[:, 0] = False  # every query keeps a key
    if masks == "float":
        kpm_t, am_t = None, np.where(am, -1.5, 0.25).astype(NP_DTYPE[dtype])
    elif masks == "bool":
        kpm_t, am_t = kpm, am
    else:
        kpm_t = am_t = None

    def call(m, lib, average):
        def f(q_, k_, v_):
            am = am_t if am_t is None or lib is ember or am_t.dtype == bool else am_t.astype(np.float64)
            out, w = m(q_, k_, v_, key_padding_mask=None if kpm_t is None else lib.tensor(kpm_t),
                       attn_mask=None if am is None else lib.tensor(am),
                       average_attn_weights=average)
            return out + 0.5 * w.sum() if w is not None else out
        return f

    for average in (True, False):
        run_pair(call(e, ember, average), call(t, torch, average), [q, k, v], dtype, rng, "MHA")
    for (name, p) in t.named_parameters():
        close(dict(e.named_parameters())[name].grad, p.grad, dtype, f"grad of {name}")
    e.eval(), t.eval()
    eo, ew = e(ember.tensor(q), ember.tensor(k), ember.tensor(v), need_weights=False)
    assert ew is None


def test_multihead_attention_self_unbatched_and_dropout(rng):
    torch.manual_seed(6)
    t = torch.nn.MultiheadAttention(6, 3)
    e = nn.MultiheadAttention(6, 3, dropout=0.5)
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = normal(4, 6)(rng).astype(np.float32)
    e.eval()
    eo, ew = e(ember.tensor(x), ember.tensor(x), ember.tensor(x))
    to, tw = t(torch.tensor(x), torch.tensor(x), torch.tensor(x))
    close(eo, to, ember.float32, "unbatched")
    close(ew, tw, ember.float32, "unbatched weights")
    e.train()
    _, w = e(ember.tensor(x), ember.tensor(x), ember.tensor(x), average_attn_weights=False)
    assert (w.detach().numpy() == 0).any()  # dropout acts on the weights in training
    with pytest.raises(ember.ValueError, match="divisible"):
        nn.MultiheadAttention(6, 4)


def _sdpa_reference(q, k, v, mask=None, causal=False, scale=None):
    """softmax(q k^T * scale + bias) v in float64 (PyTorch 2's definition)."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    L, S = q.shape[-2], k.shape[-2]
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = s + np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf)
    elif mask is not None:
        s = s + (np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return p @ v, p


@pytest.mark.parametrize("variant", ["plain", "bool_mask", "float_mask", "causal", "scale"])
def test_scaled_dot_product_attention(variant, dtype, rng):
    q, k, v = (normal(2, 3, n, 4)(rng).astype(NP_DTYPE[dtype]) for n in (5, 6, 6))
    kw, mask = {}, None
    if variant == "bool_mask":
        mask = rng.uniform(size=(5, 6)) < 0.6
        mask[:, 0] = True
        kw["attn_mask"] = ember.tensor(mask)
    elif variant == "float_mask":
        mask = rng.standard_normal((2, 1, 5, 6)).astype(NP_DTYPE[dtype])
        kw["attn_mask"] = ember.tensor(mask)
    elif variant == "causal":
        kw["is_causal"] = True
    elif variant == "scale":
        kw["scale"] = 0.3
    eq, ek, ev = (ember.tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(eq, ek, ev, **kw)
    want, p = _sdpa_reference(q, k, v, mask, variant == "causal", kw.get("scale"))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == ember.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out.detach().numpy(), want, **tol)
    # d sum(out * g) / dv = p^T g.
    g = rng.standard_normal(want.shape)
    (out * ember.tensor(g, dtype=out.dtype)).sum().backward()
    np.testing.assert_allclose(ev.grad.numpy(), np.swapaxes(p, -1, -2) @ g, **tol)
    with pytest.raises(ember.ValueError, match="is_causal"):
        F.scaled_dot_product_attention(eq, ek, ev, attn_mask=ember.ones(5, 6), is_causal=True)


def test_sdpa_dropout_is_applied(rng):
    q = ember.tensor(normal(1, 8, 4)(rng).astype(np.float32))
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.0)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.9)
    assert not np.allclose(a.numpy(), b.numpy())


def _container_net(lib, ones):
    """The same module tree in ember.nn or torch.nn."""
    net = lib.Module()
    net.layers = lib.ModuleList([lib.Linear(3, 4), lib.ReLU(), lib.Linear(4, 2)])
    net.heads = lib.ModuleDict({"a": lib.Linear(2, 1), "b": lib.Identity()})
    net.scales = lib.ParameterList([lib.Parameter(ones(2)) for _ in range(2)])
    net.extra = lib.ParameterDict({"bias": lib.Parameter(ones(1))})
    return net


def test_containers():
    enet, tnet = _container_net(nn, ember.ones), _container_net(torch.nn, torch.ones)
    assert list(enet.state_dict()) == list(tnet.state_dict())
    assert len(list(enet.parameters())) == len(list(tnet.parameters()))
    assert len(enet.layers) == 3 and isinstance(enet.layers[-1], nn.Linear)
    assert isinstance(enet.layers[1:], nn.ModuleList) and len(enet.layers[1:]) == 2
    enet.layers.insert(1, nn.Identity())
    assert [type(m).__name__ for m in enet.layers] == ["Linear", "Identity", "ReLU", "Linear"]
    del enet.layers[1]
    assert list(enet.state_dict()) == list(tnet.state_dict())
    assert list(enet.heads.keys()) == ["a", "b"] and "a" in enet.heads
    enet.heads["c"] = nn.Tanh()
    assert list(enet.heads.keys()) == ["a", "b", "c"]
    assert enet.extra["bias"].requires_grad and len(enet.scales) == 2
    h = ember.randn(5, 3)
    for m in enet.layers:
        h = m(h)
    assert tuple(enet.heads["a"](h).shape) == (5, 1)
    with pytest.raises(IndexError):
        enet.layers[7]
