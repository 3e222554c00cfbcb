"""What the ember.nn-vs-PyTorch tests share: input makers and one forward-and-gradient
comparison."""
import numpy as np

import ember
import ember.nn.functional as F
from conftest import close, torch

TF = torch.nn.functional


def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def positive(*shape):
    return lambda rng: rng.uniform(0.1, 1.0, shape)


def away_from_zero(*shape):
    def make(rng):
        x = rng.standard_normal(shape) * 2
        return np.where(np.abs(x) < 0.05, 0.5, x)
    return make


def away_from(kinks, *shape):
    # Inputs at least 0.05 from each kink (hardswish's -3 and 3, say), where finite precision
    # could land on either side.
    def make(rng):
        x = rng.uniform(-5, 5, shape)
        for k in kinks:
            x = np.where(np.abs(x - k) < 0.05, k + 0.5, x)
        return x
    return make


def probs(*shape):
    def make(rng):
        p = rng.uniform(0.05, 1.0, shape)
        return p / p.sum(axis=1, keepdims=True)
    return make


def run_pair(efn, tfn, arrays, dtype, rng, name, grads=True, grad_dtype=None):
    """Runs efn on the arrays and tfn on the same values widened to float64: the reference is
    computed in float64, so the tolerance covers Ember's rounding only (PyTorch's float32
    gradients of a small group norm can be off by 7e-4 where Ember's are within 3e-6)."""
    e_in = [ember.tensor(a, requires_grad=a.dtype.kind == "f" and grads) for a in arrays]
    t_in = [torch.tensor(a.astype(np.float64) if a.dtype.kind == "f" else a,
                         requires_grad=a.dtype.kind == "f" and grads) for a in arrays]
    if isinstance(tfn, torch.nn.Module):
        tfn.double()  # in place: the caller reads its parameters and buffers afterwards
    e_out, t_out = efn(*e_in), tfn(*t_in)
    close(e_out, t_out, dtype, f"{name} forward")
    if not grads:
        return
    w = rng.standard_normal(tuple(t_out.shape))
    (e_out * ember.tensor(w, dtype=e_out.dtype)).sum().backward()
    (t_out * torch.tensor(w, dtype=t_out.dtype)).sum().backward()
    for i, (ei, ti) in enumerate(zip(e_in, t_in)):
        if ti.grad is None:
            continue
        assert ei.grad is not None, f"{name}: no gradient for input {i}"
        close(ei.grad, ti.grad, grad_dtype or dtype, f"{name} grad of input {i}")


def both(fn_name, *args, **kwargs):
    """The same call on F and on torch's functional."""
    return (lambda *x: getattr(F, fn_name)(*x, *args, **kwargs),
            lambda *x: getattr(TF, fn_name)(*x, *args, **kwargs))


