"""Tensors: creation, attributes, operators, indexing, methods, repr."""
import numpy as np
import pytest

import ember
from conftest import torch


def test_tensor_from_lists_infers_dtype():
    assert ember.tensor([1, 2, 3]).dtype == ember.int64
    assert ember.tensor([1.0, 2]).dtype == ember.float32
    assert ember.tensor([True, False]).dtype == ember.bool
    assert ember.tensor(3.5).shape == ()
    assert ember.tensor([[1, 2], [3, 4]], dtype=ember.float64).dtype == ember.float64
    assert ember.tensor([]).shape == (0,)
    t = ember.tensor([[1, 2, 3], [4, 5, 6]])
    assert t.shape == (2, 3) and t.ndim == 2 and t.numel() == 6 and t.is_contiguous()
    assert t.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert ember.tensor(np.float32(2.5)).item() == 2.5


def test_tensor_from_numpy_copies():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = ember.tensor(a)
    a[0, 0] = 100
    assert t[0, 0].item() == 0.0 and t.dtype == ember.float64


@pytest.mark.parametrize("bad", [[[1, 2], [3]], [[1, 2], 3], [1, [2, 3]], [[[1]], [2]]])
def test_ragged_lists_raise_value_error(bad):
    with pytest.raises(ValueError, match="ragged"):
        ember.tensor(bad)


@pytest.mark.parametrize("bad", [["a", "b"], [1, None], [{}], "abc", object()])
def test_non_numeric_input_raises_type_error(bad):
    with pytest.raises(TypeError):
        ember.tensor(bad)


def test_factories():
    assert ember.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert ember.ones((2,), dtype=ember.int32).tolist() == [1, 1]
    assert ember.full((2, 2), 7).dtype == ember.int64
    assert ember.full((2,), 1.5).tolist() == [1.5, 1.5]
    assert ember.arange(5).tolist() == [0, 1, 2, 3, 4] and ember.arange(5).dtype == ember.int64
    assert ember.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert ember.empty(3, 4).shape == (3, 4)
    ember.manual_seed(7)
    a = ember.rand(100)
    ember.manual_seed(7)
    b = ember.rand(100)
    assert a.tolist() == b.tolist()
    assert 0 <= a.min().item() and a.max().item() < 1
    r = ember.randn(10000, dtype=ember.float64)
    assert abs(r.mean().item()) < 0.05 and abs(r.std().item() - 1) < 0.05
    assert ember.zeros(2, requires_grad=True).requires_grad


def test_dtypes_and_devices():
    for name in ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"]:
        d = getattr(ember, name)
        assert repr(d) == "ember." + name
        assert ember.zeros(2, dtype=d).dtype == d
    assert ember.float32.is_floating_point and not ember.int64.is_floating_point
    assert ember.device("cpu") == "cpu" and str(ember.device("emu:0")) == "emu:0"
    assert ember.zeros(1).device == ember.device("cpu")
    with pytest.raises(ember.DeviceError):
        ember.device("tpu")


def test_arithmetic_and_broadcasting_match_torch(rng):
    a = rng.standard_normal((3, 1, 4)).astype(np.float32)
    b = rng.standard_normal((5, 1)).astype(np.float32)
    ea, eb, ta, tb = ember.tensor(a), ember.tensor(b), torch.tensor(a), torch.tensor(b)
    for f in [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y,
              lambda x, y: -x + 2.5, lambda x, y: 3 - x, lambda x, y: 2 / (x * x + 1),
              lambda x, y: x ** 2, lambda x, y: abs(x) ** 0.5, lambda x, y: 2 ** x, lambda x, y: 1.5 * y]:
        np.testing.assert_allclose(f(ea, eb).numpy(), f(ta, tb).numpy(), rtol=1e-5, atol=1e-6)
    for f in [lambda x, y: x < y, lambda x, y: x <= y, lambda x, y: x > 0, lambda x, y: x >= y,
              lambda x, y: x == x, lambda x, y: x != y]:
        r = f(ea, eb)
        assert r.dtype == ember.bool
        np.testing.assert_array_equal(r.numpy(), f(ta, tb).numpy())
    m1, m2 = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    np.testing.assert_allclose((ember.tensor(m1) @ ember.tensor(m2)).numpy(), m1 @ m2, rtol=1e-10)


def test_scalar_promotion_follows_torch():
    i = ember.tensor([1, 2, 3])
    assert (i + 1).dtype == ember.int64
    assert (i * 1.5).dtype == ember.float32
    assert (i / 2).dtype == ember.float32
    assert (ember.tensor([1.0], dtype=ember.float64) * 2.0).dtype == ember.float64
    assert (ember.tensor([1.0]) + 1).dtype == ember.float32
    assert (i ** 2).tolist() == [1, 4, 9]


def test_indexing_returns_views(rng):
    a = rng.standard_normal((4, 5, 6))
    e = ember.tensor(a)
    for idx in [0, -1, (1, 2), (slice(None), 1), (slice(1, 4, 2), slice(None, None, 3)),
                (Ellipsis, 2), (None, 1), (1, None, slice(2, 5)), (Ellipsis, None),
                slice(-3, None), (2, Ellipsis, slice(1, 2)), (slice(10, 20),)]:
        np.testing.assert_array_equal(e[idx].numpy(), a[idx])
    v = e[1, ::2]
    assert v.data_ptr() == e.data_ptr() + (1 * 30) * 8
    with pytest.raises(IndexError):
        e[4]
    with pytest.raises(IndexError):
        e[0, 0, 0, 0]
    with pytest.raises(TypeError):
        e["a"]
    with pytest.raises(ValueError):
        e[::-1]


def test_setitem():
    t = ember.zeros(3, 4)
    t[1] = 5
    t[:, 2] = ember.tensor([1.0, 2.0, 3.0])
    t[0, 0:2] = 7.5
    expected = np.zeros((3, 4), dtype=np.float32)
    expected[1] = 5
    expected[:, 2] = [1, 2, 3]
    expected[0, 0:2] = 7.5
    np.testing.assert_array_equal(t.numpy(), expected)


def test_views_and_shape_methods(rng):
    a = rng.standard_normal((2, 3, 4))
    e = ember.tensor(a)
    assert e.reshape(6, 4).shape == (6, 4) and e.view(-1).shape == (24,)
    np.testing.assert_array_equal(e.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(e.transpose(0, 2).numpy(), a.swapaxes(0, 2))
    assert not e.transpose(0, 2).is_contiguous() and e.transpose(0, 2).contiguous().is_contiguous()
    with pytest.raises(ember.ShapeError):
        e.transpose(0, 2).view(24)
    assert e.unsqueeze(1).shape == (2, 1, 3, 4) and e[:, :1].squeeze(1).shape == (2, 4)
    assert e.flatten().shape == (24,) and e.flatten(1).shape == (2, 12)
    assert ember.tensor([[1.0], [2.0]]).expand(2, 3).tolist() == [[1, 1, 1], [2, 2, 2]]
    c = e.clone()
    c[0, 0, 0] = 99
    assert e[0, 0, 0].item() == a[0, 0, 0]
    assert e.to(ember.float32).dtype == ember.float32 and e.float().double().dtype == ember.float64
    assert e.cpu().device == ember.device("cpu")
    assert len(e) == 2 and [x.shape for x in e] == [(3, 4), (3, 4)]
    assert e.T.shape == (4, 3, 2)


def test_reductions_match_torch(rng):
    a = rng.standard_normal((3, 4, 5))
    e, t = ember.tensor(a), torch.tensor(a)
    # A sum of mixed signs can cancel to near zero, where a relative tolerance means nothing: two
    # summation orders of n terms may differ by up to n * eps * sum|a|, so that is the bound.
    eps = np.finfo(np.float64).eps

    def sums_close(got, want, n, abs_sum):
        err = np.abs(np.asarray(got) - np.asarray(want))
        assert np.all(err <= n * eps * abs_sum), f"sums differ by {err.max()}, bound {n * eps * np.max(abs_sum)}"

    sums_close(e.sum().item(), t.sum().item(), a.size, np.abs(a).sum())
    sums_close(e.sum(dim=1).numpy(), t.sum(dim=1).numpy(), a.shape[1], np.abs(a).sum(axis=1))
    sums_close(e.mean((0, 2), keepdim=True).numpy(), t.mean((0, 2), keepdim=True).numpy(), a.size,
               np.abs(a).mean(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(e.std().item(), t.std().item(), rtol=1e-12)
    np.testing.assert_allclose(e.var(1).numpy(), t.var(1).numpy(), rtol=1e-12)
    np.testing.assert_allclose(e.var(1, unbiased=False).numpy(), t.var(1, unbiased=False).numpy(), rtol=1e-12)
    assert e.max().item() == t.max().item() and e.min().item() == t.min().item()
    v, i = e.max(dim=2)
    tv, ti = t.max(dim=2)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(e.argmax(1).numpy(), t.argmax(1).numpy())
    assert e.argmax().item() == t.argmax().item()
    np.testing.assert_allclose(e.exp().log().numpy(), a, rtol=1e-12, atol=4 * eps)
    assert ember.sum(e, 0).shape == (4, 5) and ember.max(e).item() == a.max()


def test_item_bool_float_int():
    assert ember.tensor(3).item() == 3 and isinstance(ember.tensor(3).item(), int)
    assert float(ember.tensor(2.5)) == 2.5 and int(ember.tensor(7)) == 7
    assert bool(ember.tensor([1.0])) is True
    with pytest.raises(ValueError):
        bool(ember.ones(2))
    with pytest.raises(ValueError):
        ember.ones(2).item()


def test_repr_is_the_cpp_printed_form():
    t = ember.tensor([[1.0, 2.0], [3.0, 4.5]])
    assert repr(t) == "tensor([[1.0000, 2.0000],\n        [3.0000, 4.5000]])"
    assert repr(ember.tensor([1, 2])) == "tensor([1, 2])"
    assert "float64" in repr(ember.zeros(2, dtype=ember.float64))


def test_inplace_ops():
    t = ember.ones(3)
    t += 1
    t *= ember.tensor([1.0, 2.0, 3.0])
    assert t.tolist() == [2.0, 4.0, 6.0]
    p = ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError):
        p += 1
    with ember.no_grad():
        p -= 0.5
    assert p.tolist() == [0.5, 0.5]


def test_fill_and_zero_write_in_place_and_keep_autograd_rules():
    # Where autograd records nothing, fill_ and zero_ write straight into the tensor's memory.
    x = ember.ones(3, 4)
    v0 = x._version
    assert x.zero_() is x and x.tolist() == [[0.0] * 4] * 3
    assert x._version > v0
    x[1].fill_(2.5)  # through a view: the base sees it
    assert x.tolist() == [[0.0] * 4, [2.5] * 4, [0.0] * 4]
    i = ember.zeros(3, dtype=ember.int64)
    i.fill_(2**60 + 1)  # beyond a double's integers: exact all the same
    assert i.tolist() == [2**60 + 1] * 3
    assert ember.zeros(2, dtype=ember.bool).fill_(True).tolist() == [True, True]
    assert ember.zeros(2, dtype=ember.int32).fill_(-7.9).tolist() == [-7, -7]
    h = ember.zeros(2, dtype=ember.float16).fill_(1 / 3)
    assert h.tolist() == [0.333251953125] * 2
    p = ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="leaf tensor that requires grad"):
        p.fill_(1.0)
    with ember.no_grad():
        p.zero_()
    assert p.tolist() == [0.0, 0.0]
    # A tensor saved for backward and filled since is reported when the backward runs.
    a = ember.ones(3, requires_grad=True)
    b = a * 1.0
    c = b * b
    with ember.no_grad():
        b.fill_(5.0)
    with pytest.raises(Exception, match="modified by an inplace operation|version"):
        c.sum().backward()
    # Under autograd the write is recorded: the gradient of what was overwritten is zero.
    d = a * 2.0
    d.fill_(7.0)
    (d * a).sum().backward()
    assert a.grad.tolist() == [7.0, 7.0, 7.0]


def test_fill_needs_a_value_and_zero_takes_none():
    # PyTorch's signatures: fill_(value), zero_(); a stray or missing argument is a TypeError,
    # on the direct path and under autograd alike, and leaves the tensor as it was.
    for requires_grad in (False, True):
        x = ember.ones(2, requires_grad=requires_grad) * 1.0
        with pytest.raises(TypeError):
            x.zero_(5)
        with pytest.raises(TypeError):
            x.fill_()
        assert x.tolist() == [1.0, 1.0]
    assert ember.Tensor.fill_.__name__ == "fill_" and ember.Tensor.zero_.__name__ == "zero_"


def test_integer_overflow_is_a_value_error():
    with pytest.raises(ValueError, match="int64"):
        ember.tensor([1, 2**70])
