"""Indexing, sorting, scans, reordering, factories, the added maths and in-place ops against
PyTorch on fresh random inputs: values and gradients, every index form Python allows (ints,
slices, None, Ellipsis, tensors, lists, bool masks, mixed), on the cpu and on the emulated GPU."""
import numpy as np
import pytest

import ember
from conftest import close, torch

DEVICES = ["cpu", "emu"]


def both(a, device="cpu", requires_grad=False):
    e = ember.tensor(a, device=device, requires_grad=requires_grad)
    t = torch.tensor(a, requires_grad=requires_grad)
    return e, t


def check(e, t, what="", rtol=1e-5, atol=1e-6):
    en = e.detach().cpu().numpy()
    tn = t.detach().numpy()
    assert en.shape == tn.shape, f"{what}: shape {en.shape} vs {tn.shape}"
    if en.dtype.kind in "biu":
        np.testing.assert_array_equal(en, tn, err_msg=what)
    else:
        np.testing.assert_allclose(en, tn, rtol=rtol, atol=atol, err_msg=what)


# (id, index builder taking (module, device)) for x of shape (4, 5, 6).
INDEXES = [
    ("int_list", lambda m, d: [0, 3, 3, -1]),
    ("tensor", lambda m, d: m.tensor([[1, 2], [0, 1]], device=d)),
    ("slice_then_tensor", lambda m, d: (slice(None), m.tensor([4, 0, 3], device=d))),
    ("split_tensors", lambda m, d: (m.tensor([0, 2], device=d), slice(1, 3), m.tensor([5, 1], device=d))),
    ("adjacent_broadcast", lambda m, d: (slice(None), m.tensor([[0], [2]], device=d), m.tensor([1, 5, 3], device=d))),
    ("int_then_tensor", lambda m, d: (1, slice(None), m.tensor([0, 2], device=d))),
    ("ellipsis_tensor", lambda m, d: (Ellipsis, m.tensor([5, 2, 0], device=d))),
    ("none_tensor", lambda m, d: (None, m.tensor([1, 0], device=d))),
    ("mask_2d", lambda m, d: m.tensor(np.arange(20).reshape(4, 5) % 3 == 0, device=d)),
    ("mask_and_slice", lambda m, d: (slice(None), m.tensor([True, False, True, True, False], device=d))),
    ("bool_true", lambda m, d: True),
    ("bool_false", lambda m, d: (False, 0)),
    ("empty_list", lambda m, d: []),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,make", INDEXES, ids=[i[0] for i in INDEXES])
def test_getitem_and_its_gradient(name, make, device, rng):
    a = rng.standard_normal((4, 5, 6))
    e, t = both(a, device, requires_grad=True)
    ei, ti = e[make(ember, device)], t[make(torch, "cpu")]
    check(ei, ti, name)
    w = rng.standard_normal(tuple(ti.shape))
    (ei * ember.tensor(w, device=device)).sum().backward()
    (ti * torch.tensor(w)).sum().backward()
    check(e.grad, t.grad, name + " grad")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,make", INDEXES[:-3], ids=[i[0] for i in INDEXES[:-3]])
def test_setitem_assign_and_accumulate(name, make, device, rng):
    a = rng.standard_normal((4, 5, 6))
    e, t = both(a, device)
    shape = tuple(t[make(torch, "cpu")].shape)
    v = rng.standard_normal(shape)
    if name in ("int_list", "tensor"):
        # Repeated indices: assignment is only defined without repeats, so compare index_put_'s
        # accumulation, which is.
        e.index_put_(_as_tuple(ember, make(ember, device), device), ember.tensor(v, device=device),
                     accumulate=True)
        t.index_put_(_as_tuple(torch, make(torch, "cpu"), "cpu"), torch.tensor(v), accumulate=True)
    else:
        e[make(ember, device)] = ember.tensor(v, device=device)
        t[make(torch, "cpu")] = torch.tensor(v)
    check(e, t, name)
    e[make(ember, device)] = 0.5  # a Python scalar broadcasts
    t[make(torch, "cpu")] = 0.5
    check(e, t, name + " scalar")


def _as_tuple(m, idx, device):
    """An index as index_put_ takes it: a tuple of tensors of library m."""
    if isinstance(idx, list):
        return (m.tensor(idx, device=device),)
    return idx if isinstance(idx, tuple) else (idx,)


def test_setitem_tracks_autograd_like_pytorch(rng):
    a, v = rng.standard_normal((4, 3)), rng.standard_normal((2, 3))
    e, t = both(a, requires_grad=True)
    ev, tv = both(v, requires_grad=True)
    ey, ty = e * 2, t * 2
    ey[[0, 2]] = ev * ev
    ty[[0, 2]] = tv * tv
    ey.sum().backward()
    ty.sum().backward()
    check(e.grad, t.grad, "x grad")
    check(ev.grad, tv.grad, "v grad")
    with pytest.raises(ember.ValueError, match="leaf tensor that requires grad"):
        e[0] = 1.0


def test_out_of_range_index_is_an_index_error():
    x = ember.zeros(5, 3, device="emu")
    with pytest.raises(ember.IndexError, match="index 7 is out of bounds for dimension 0 with size 5"):
        x[ember.tensor([1, 7], device="emu")]
    with pytest.raises(IndexError):  # ember.IndexError is Python's IndexError
        x[[0, -6]]
    with pytest.raises(ember.IndexError, match="shape of the mask"):
        x[ember.tensor([True, False], device="emu")]
    with pytest.raises(TypeError, match="valid tensor indices"):
        x["a"]


@pytest.mark.parametrize("device", DEVICES)
def test_gather_scatter_index_select_index_add(device, rng):
    a = rng.standard_normal((4, 6))
    idx = rng.integers(0, 6, (4, 3))
    e, t = both(a, device, requires_grad=True)
    ei, ti = ember.tensor(idx, device=device), torch.tensor(idx)
    src = rng.standard_normal((4, 3))
    es, ts = both(src, device, requires_grad=True)
    for op in ("gather", "scatter_add", "index_select", "index_add", "take_along_dim"):
        if op == "gather":
            eo, to = e.gather(1, ei), t.gather(1, ti)
        elif op == "scatter_add":
            eo, to = e.scatter_add(1, ei, es), t.scatter_add(1, ti, ts)
        elif op == "index_select":
            eo, to = ember.index_select(e, 1, ei[0]), torch.index_select(t, 1, ti[0])
        elif op == "index_add":
            eo = e.index_add(1, ei[0], es, alpha=2.0)
            to = t.index_add(1, ti[0], ts, alpha=2.0)
        else:
            eo, to = ember.take_along_dim(e, ei, 1), torch.take_along_dim(t, ti, 1)
        check(eo, to, op)
        eo.sum().backward()
        to.sum().backward()
        check(e.grad, t.grad, op + " grad")
        if es.grad is not None:
            check(es.grad, ts.grad, op + " src grad")
        for p in (e, t, es, ts):
            p.grad = None
    # scatter_ with distinct indices per row, in place, and scatter of a scalar.
    perm = np.stack([rng.permutation(6)[:3] for _ in range(4)])
    ep, tp = ember.tensor(perm, device=device), torch.tensor(perm)
    x1, y1 = both(a, device)
    x1.scatter_(1, ep, ember.tensor(src, device=device))
    y1.scatter_(1, tp, torch.tensor(src))
    check(x1, y1, "scatter_")
    check(ember.scatter(x1, 1, ep, 2.5), torch.scatter(y1, 1, tp, 2.5), "scatter value")
    x1.scatter_(1, ep, ember.tensor(src, device=device), reduce="add")
    y1.scatter_(1, tp, torch.tensor(src), reduce="add")
    check(x1, y1, "scatter_ reduce add")


@pytest.mark.parametrize("device", DEVICES)
def test_masks_nonzero_where(device, rng):
    a = rng.standard_normal((3, 4))
    e, t = both(a, device)
    m = a > 0.2
    em, tm = ember.tensor(m, device=device), torch.tensor(m)
    check(ember.masked_select(e, em), torch.masked_select(t, tm))
    check(e.masked_fill(em, -1.0), t.masked_fill(tm, -1.0))
    check(ember.nonzero(em), torch.nonzero(tm))
    for eo, to in zip(ember.where(em), torch.where(tm)):
        check(eo, to)
    for eo, to in zip(em.nonzero(as_tuple=True), tm.nonzero(as_tuple=True)):
        check(eo, to)


@pytest.mark.parametrize("device", DEVICES)
def test_sort_topk_kthvalue_unique_max(device, rng):
    a = np.round(rng.standard_normal((3, 40)) * 2) / 2  # ties
    a[0, 5] = np.nan
    e, t = both(a, device, requires_grad=True)
    for desc in (False, True):
        es, ts = ember.sort(e, dim=1, descending=desc), torch.sort(t, dim=1, descending=desc, stable=True)
        check(es.values, ts.values, "sort values")
        check(es.indices, ts.indices, "sort indices")
        check(e.argsort(1, desc), ts.indices, "argsort")
    b = rng.standard_normal((3, 40))  # no ties: topk's order is then defined
    eb, tb = both(b, device, requires_grad=True)
    et, tt = eb.topk(5, dim=1), tb.topk(5, dim=1)
    check(et.values, tt.values)
    check(et.indices, tt.indices)
    (et.values * 2).sum().backward()
    (tt.values * 2).sum().backward()
    check(eb.grad, tb.grad, "topk grad")
    ek, tk = eb.kthvalue(7, 1, keepdim=True), tb.kthvalue(7, 1, keepdim=True)
    check(ek.values, tk.values)
    check(ek.indices, tk.indices)
    em, tm = eb.max(1), tb.max(1)
    assert type(em).__name__ == "max" and em._fields == ("values", "indices")
    check(em.values, tm.values)
    check(em.indices, tm.indices)
    ints = rng.integers(-3, 4, (5, 6))
    ei, ti = both(ints, device)
    for ea, ta in zip(ember.unique(ei, return_inverse=True, return_counts=True),
                      torch.unique(ti, return_inverse=True, return_counts=True)):
        check(ea, ta, "unique")
    check(ember.unique(ei, dim=1)[:, :], torch.unique(ti, dim=1), "unique dim")


@pytest.mark.parametrize("device", DEVICES)
def test_cumsum_cumprod_and_gradients(device, rng):
    a = rng.uniform(0.5, 1.5, (3, 7))
    a[1, 3] = 0.0  # cumprod's gradient at a zero
    e, t = both(a, device, requires_grad=True)
    for dim in (0, 1):
        for op in ("cumsum", "cumprod"):
            eo, to = getattr(e, op)(dim), getattr(t, op)(dim)
            check(eo, to, op)
            w = rng.standard_normal(a.shape)
            (eo * ember.tensor(w, device=device)).sum().backward()
            (to * torch.tensor(w)).sum().backward()
            check(e.grad, t.grad, op + " grad")
            e.grad, t.grad = None, None
    ints = rng.integers(-5, 5, (4, 3)).astype(np.int32)
    check(ember.cumsum(ember.tensor(ints, device=device), 0), torch.cumsum(torch.tensor(ints), 0))


@pytest.mark.parametrize("device", DEVICES)
def test_shape_ops(device, rng):
    a = rng.standard_normal((3, 4, 5))
    e, t = both(a, device, requires_grad=True)
    cases = [
        ("flip", lambda x: x.flip(0, 2)),
        ("roll", lambda x: x.roll((1, -2), (1, 2))),
        ("roll_flat", lambda x: x.roll(3)),
        ("repeat", lambda x: x.repeat(2, 1, 1, 2)),
        ("tile", lambda x: x.tile((2,))),
        ("repeat_interleave", lambda x: x.repeat_interleave(2, dim=1)),
        ("repeat_interleave_flat", lambda x: x.repeat_interleave(2)),
        ("narrow", lambda x: x.narrow(2, 1, 3)),
        ("movedim", lambda x: x.movedim(0, 2)),
        ("tril", lambda x: x.tril(1)),
        ("triu", lambda x: x.triu(-1)),
        ("expand_as", lambda x: x[:, :1].expand_as(x)),
    ]
    for name, f in cases:
        eo, to = f(e), f(t)
        check(eo, to, name)
        eo.sum().backward()
        to.sum().backward()
        check(e.grad, t.grad, name + " grad")
        e.grad, t.grad = None, None
    for ep, tp in zip(e.split(2, dim=1), t.split(2, dim=1)):
        check(ep, tp, "split")
    for ep, tp in zip(e.split([1, 3], dim=1), t.split([1, 3], dim=1)):
        check(ep, tp, "split sizes")
    for ep, tp in zip(e.chunk(3, 2), t.chunk(3, 2)):
        check(ep, tp, "chunk")
    for ep, tp in zip(e.unbind(1), t.unbind(1)):
        check(ep, tp, "unbind")
    reps = ember.tensor([2, 0, 1], device=device)
    check(ember.repeat_interleave(e, reps, dim=0), torch.repeat_interleave(t, torch.tensor([2, 0, 1]), dim=0))
    check(ember.repeat_interleave(reps), torch.repeat_interleave(torch.tensor([2, 0, 1])))


@pytest.mark.parametrize("device", DEVICES)
def test_maths(device, rng):
    a = rng.uniform(-3, 3, (4, 5))
    b = rng.uniform(0.5, 2, (5,)) * np.where(rng.random(5) < 0.5, -1, 1)
    e, t = both(a, device, requires_grad=True)
    eb, tb = both(b, device, requires_grad=True)
    cases = [
        ("sin", lambda m, x, y: m.sin(x)), ("cos", lambda m, x, y: m.cos(x)),
        ("erf", lambda m, x, y: m.erf(x)), ("fmod", lambda m, x, y: m.fmod(x, y)),
        ("remainder", lambda m, x, y: m.remainder(x, y)), ("mod_op", lambda m, x, y: x % y),
        ("floordiv", lambda m, x, y: (x // y).detach()),
        ("lerp", lambda m, x, y: m.lerp(x, y.expand(4, 5), 0.3)),
        ("logsumexp", lambda m, x, y: m.logsumexp(x, 1)),
        ("norm2", lambda m, x, y: m.linalg.vector_norm(x, dim=1)),
        ("norm1", lambda m, x, y: m.linalg.vector_norm(x, 1, dim=0)),
        ("norm_inf", lambda m, x, y: m.linalg.vector_norm(x, float("inf"))),
        ("norm_p3", lambda m, x, y: x.norm(3)),
        ("outer", lambda m, x, y: m.outer(x[0], y)),
        ("addmm", lambda m, x, y: m.addmm(y, x[:, :4], x[:4], beta=0.5, alpha=2)),
        ("baddbmm", lambda m, x, y: m.baddbmm(x[:, :1].reshape(4, 1, 1), x.reshape(4, 5, 1),
                                               y.reshape(1, 1, 5).expand(4, 1, 5), beta=0.5)),
        ("einsum", lambda m, x, y: m.einsum("ij,j->i", x, y)),
        ("einsum_outer", lambda m, x, y: m.einsum("i,j->ij", x[0], y)),
    ]
    for name, f in cases:
        eo, to = f(ember, e, eb), f(torch, t, tb)
        check(eo, to, name)
        if not to.requires_grad:
            continue
        eo.sum().backward()
        to.sum().backward()
        check(e.grad, t.grad, name + " grad")
        if tb.grad is not None:
            check(eb.grad, tb.grad, name + " grad b")
        for p in (e, t, eb, tb):
            p.grad = None
    check(ember.sign(ember.tensor([-2.0, 0.0, 3.0], device=device)), torch.tensor([-1.0, 0.0, 1.0]))
    x = ember.tensor([0.5, 1.5, 2.5, -0.5, 2.567], device=device)
    tx = torch.tensor([0.5, 1.5, 2.5, -0.5, 2.567])
    for name in ("floor", "ceil", "round", "trunc"):
        check(getattr(ember, name)(x), getattr(torch, name)(tx), name)
    check(ember.round(x, decimals=1), torch.round(tx, decimals=1), "round decimals")
    v = ember.tensor([1.0, float("nan"), float("inf"), -float("inf")], device=device)
    tv = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    for name in ("isnan", "isinf", "isfinite"):
        check(getattr(ember, name)(v), getattr(torch, name)(tv), name)
    check(ember.any(v > 5), torch.any(tv > 5))
    check((v > 0).all(), (tv > 0).all())
    check(ember.tensor([[1, 0], [1, 1]], device=device).all(1), torch.tensor([[1, 0], [1, 1]]).all(1))
    with pytest.raises(ember.ValueError, match="division by zero"):
        ember.fmod(ember.tensor([3], device=device), ember.tensor([0], device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_factories(device):
    check(ember.linspace(-1, 2, 7, device=device), torch.linspace(-1, 2, 7))
    check(ember.logspace(0, 2, 5, base=2, device=device), torch.logspace(0, 2, 5, base=2))
    check(ember.eye(3, 4, device=device), torch.eye(3, 4))
    ember.manual_seed(3)
    r = ember.randint(2, 9, (1000,), device=device)
    assert r.dtype == ember.int64 and int(r.min()) >= 2 and int(r.max()) <= 8
    assert len(set(r.tolist())) == 7  # every value drawn
    p = ember.randperm(30, device=device)
    assert sorted(p.tolist()) == list(range(30))
    x = ember.ones(2, 3, dtype=ember.float64, device=device)
    assert x.new_zeros(4).dtype == ember.float64 and x.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert x.new_ones((1, 2)).device == x.device


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_ops_match_pytorch(device, rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    cases = [
        ("add_", lambda x, y: x.add_(y, alpha=2)), ("sub_", lambda x, y: x.sub_(y)),
        ("mul_", lambda x, y: x.mul_(y)), ("div_", lambda x, y: x.div_(y.abs() + 1)),
        ("clamp_", lambda x, y: x.clamp_(-0.5, 0.5)), ("relu_", lambda x, y: x.relu_()),
        ("exp_", lambda x, y: x.exp_()), ("zero_", lambda x, y: x.zero_()),
        ("fill_", lambda x, y: x.fill_(2.5)), ("copy_", lambda x, y: x.copy_(y)),
        ("masked_fill_", lambda x, y: x.masked_fill_(y > 0, 1.0)),
        ("index_add_", lambda x, y: x.index_add_(1, _idx(x, [3, 0]), x[:, :2] * 1)),
        ("pow_", lambda x, y: x.pow_(2)), ("neg_", lambda x, y: x.neg_()),
    ]
    for name, f in cases:
        e, t = both(a, device, requires_grad=True)
        eb, tb = both(b, device, requires_grad=True)
        ey, ty = e * 1.5, t * 1.5  # non-leaf: in-place ops are allowed and differentiated
        r = f(ey, eb)
        assert r is ey, f"{name} must return the tensor it changed"
        f(ty, tb)
        check(ey, ty, name)
        (ey * ey).sum().backward()
        (ty * ty).sum().backward()
        check(e.grad, t.grad, name + " grad")
        if tb.grad is not None:
            check(eb.grad, tb.grad, name + " grad b")
        assert ey._version > 0


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_index_writes_without_autograd_match_pytorch(device, rng):
    # Nothing requires grad: scatter_, scatter_add_ and index_add_ write straight into x.
    a, s = rng.standard_normal((3, 5)), rng.standard_normal((3, 4))
    cases = [
        ("scatter_add_", lambda x, y: x.scatter_add_(1, _idx(x, [[0, 4, 4, 1]] * 3), y)),
        ("scatter_", lambda x, y: x.scatter_(1, _idx(x, [[0, 4, 2, 1]] * 3), y)),
        ("scatter_ add", lambda x, y: x.scatter_(1, _idx(x, [[3, 3, 3, 0]] * 3), y, reduce="add")),
        ("index_add_", lambda x, y: x.index_add_(1, _idx(x, [4, 0, 4, 2]), y)),
    ]
    for name, f in cases:
        e, t = both(a, device)
        es, ts = both(s, device)
        ev = e._version
        assert f(e, es) is e, f"{name} must return the tensor it changed"
        f(t, ts)
        check(e, t, name)
        assert e._version > ev
        with ember.no_grad():  # a leaf that requires grad, written under no_grad
            e2, t2 = both(a, device, requires_grad=True)
            f(e2, es)
        with torch.no_grad():
            f(t2, ts)
        check(e2.detach(), t2.detach(), name + " under no_grad")
    # A saved tensor written since is still reported, and a dtype that differs is refused.
    x = ember.ones(3, 5, requires_grad=True, device=device)
    y = x * 1.0
    z = y * y
    with ember.no_grad():
        y.index_add_(0, ember.tensor([0], device=device), ember.ones(1, 5, device=device))
    with pytest.raises(ember.Error, match="modified"):
        z.sum().backward()
    with pytest.raises(ember.Error):
        ember.zeros(3, dtype=ember.int64, device=device).scatter_add_(
            0, ember.tensor([0], device=device), ember.ones(1, device=device))


def _idx(x, values):
    """An index tensor of the same library and device as x."""
    if isinstance(x, ember.Tensor):
        return ember.tensor(values, device=x.device)
    return torch.tensor(values)


def test_inplace_version_counter_reports_stale_saved_tensors():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    z = y * y  # saves y
    y.add_(1)
    with pytest.raises(ember.Error, match="modified"):
        z.sum().backward()


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_and_one_hot(device, rng):
    tokens = rng.integers(0, 10, (4, 7))
    tokens[0, :3] = 2  # repeats, and the padding row
    for kwargs in ({}, {"padding_idx": 2}, {"scale_grad_by_freq": True}, {"max_norm": 1.0},
                   {"padding_idx": -1, "max_norm": 0.5, "norm_type": 1.0}):
        e = ember.nn.Embedding(10, 5, **kwargs).to(device)
        t = torch.nn.Embedding(10, 5, **kwargs)
        with torch.no_grad():
            t.weight.copy_(torch.tensor(e.weight.detach().cpu().numpy()))
        assert e.padding_idx == t.padding_idx and e.embedding_dim == 5
        eo, to = e(ember.tensor(tokens, device=device)), t(torch.tensor(tokens))
        check(eo, to, f"embedding {kwargs}")
        w = rng.standard_normal(tuple(to.shape))
        (eo * ember.tensor(w, device=device)).sum().backward()
        (to * torch.tensor(w)).sum().backward()
        check(e.weight.grad, t.weight.grad, f"embedding grad {kwargs}")
        check(e.weight, t.weight, f"embedding weight after renorm {kwargs}")
    fe = ember.nn.functional.embedding(ember.tensor([1, 1, 0], device=device),
                                       ember.eye(3, device=device))
    check(fe, torch.eye(3)[[1, 1, 0]])
    check(ember.nn.functional.one_hot(ember.tensor(tokens, device=device)),
          torch.nn.functional.one_hot(torch.tensor(tokens)))
    check(ember.nn.functional.one_hot(ember.tensor([0, 2], device=device), 4),
          torch.nn.functional.one_hot(torch.tensor([0, 2]), 4))
    with pytest.raises(ember.ValueError, match="out of range"):
        ember.nn.functional.one_hot(ember.tensor([0, 5], device=device), 3)
    with pytest.raises(ember.IndexError, match="out of bounds"):
        ember.nn.Embedding(4, 2).to(device)(ember.tensor([4], device=device))
