"""Autograd from Python: backward, autograd.grad, no_grad, gradcheck, custom Functions."""
import numpy as np
import pytest

import ember
from conftest import torch


def test_backward_accumulates_and_retain_graph():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0, 12.0]
    with pytest.raises(ember.Error):
        y.backward()
    x.grad = None
    assert x.grad is None


def test_backward_with_gradient_argument():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 3
    y.backward(ember.tensor([[1.0, 0.0], [0.5, 2.0]]))
    assert x.grad.tolist() == [[3.0, 0.0], [1.5, 6.0]]
    assert x.is_leaf and not y.is_leaf and y.grad_fn is not None and x.grad_fn is None


def test_autograd_grad_matches_torch(rng):
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4,))
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ga, gb = ember.autograd.grad((ea * eb).exp().sum(), [ea, eb])
    tga, tgb = torch.autograd.grad((ta * tb).exp().sum(), [ta, tb])
    np.testing.assert_allclose(ga.numpy(), tga.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), tgb.numpy(), rtol=1e-10)
    assert ea.grad is None  # returned, not accumulated
    unused = ember.ones(2, requires_grad=True)
    with pytest.raises(ember.Error):
        ember.autograd.grad((ea * 2).sum(), [ea, unused])
    g = ember.autograd.grad((ea * 2).sum(), [ea, unused], allow_unused=True)
    assert g[1] is None
    (g2,) = ember.autograd.grad(ea * 2, ea, grad_outputs=ember.ones(3, 4, dtype=ember.float64))
    assert g2.tolist() == [[2.0] * 4] * 3


def test_no_grad_context_and_decorator():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        y = x * 2
        assert not ember.is_grad_enabled()
        with ember.enable_grad():
            assert (x * 2).requires_grad
    assert not y.requires_grad and ember.is_grad_enabled()

    @ember.no_grad()
    def f(t):
        return t * 3

    assert not f(x).requires_grad and (x * 3).requires_grad

    @ember.no_grad
    def g(t):
        return t * 3
    assert not g(x).requires_grad


def test_requires_grad_and_detach():
    x = ember.zeros(3)
    assert not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad
    d = (x * 2).detach()
    assert not d.requires_grad
    with pytest.raises(ember.DTypeError):
        ember.zeros(2, dtype=ember.int64).requires_grad_()


def test_gradcheck_passes_and_fails():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(5, 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: ember.nn.functional.linear(a, b).tanh(), (x, w))
    assert ember.autograd.gradcheck(lambda a: a.max(1)[0] * a.var(1), (x,), eps=1e-6, atol=1e-5, rtol=1e-3)

    class Wrong(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * a

        @staticmethod
        def backward(ctx, grad):
            return grad  # should be 2 * a * grad

    with pytest.raises(ember.autograd.GradcheckError):
        ember.autograd.gradcheck(Wrong.apply, (x,))
    assert ember.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False


class Cube(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x * ctx.scale, None


def test_custom_function_matches_analytic_gradient():
    x = ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64, requires_grad=True)
    y = Cube.apply(x, 2.0)
    assert y.grad_fn.name() == "CubeBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.array([1.0, 4.0, 0.25]))
    assert ember.autograd.gradcheck(lambda a: Cube.apply(a, 0.5), (ember.randn(4, dtype=ember.float64, requires_grad=True),))


def test_custom_function_saved_tensor_modified_in_place_is_an_error():
    x = ember.ones(3, requires_grad=True)
    y = x * 1
    z = Cube.apply(y, 1.0)
    with ember.no_grad():
        y += 1
    with pytest.raises(ember.Error):
        z.sum().backward()


def test_custom_function_backward_errors_propagate():
    class Bad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            raise KeyError("boom")

    x = ember.ones(2, requires_grad=True)
    with pytest.raises(KeyError):
        Bad.apply(x).sum().backward()

    class WrongCount(Bad):
        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(ValueError, match="expected 1"):
        WrongCount.apply(x).sum().backward()


def test_python_backward_from_several_threads():
    """backward() releases the GIL and a Python backward takes it again: threads that train
    with custom Functions at once neither deadlock nor mix up their gradients."""
    import threading

    results, errors = {}, []

    def work(k):
        try:
            for _ in range(30):
                x = ember.full((50,), float(k), dtype=ember.float64, requires_grad=True)
                Cube.apply(x, 1.0).sum().backward()
                assert x.grad.tolist() == [3.0 * k * k] * 50
            results[k] = True
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and len(results) == 4
