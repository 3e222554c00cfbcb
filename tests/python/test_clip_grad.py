"""ember.nn.utils' clipping and parameter vectors against torch.nn.utils 1.13 on the same
gradients: clip_grad_norm_ for several norm types (the returned norm and the clipped gradients),
on cpu and emu, error_if_nonfinite, clip_grad_value_, parameters_to_vector and
vector_to_parameters."""
import math

import numpy as np
import pytest

import ember
from conftest import torch


def _params(rng, device="cpu", dtype=np.float64, scale=1.0):
    shapes = [(4, 3), (7,), (2, 2, 2), (5,)]
    es, ts = [], []
    for i, s in enumerate(shapes):
        v = rng.standard_normal(s).astype(dtype)
        e = ember.tensor(v, requires_grad=True, device=device)
        t = torch.tensor(v, requires_grad=True)
        if i != 3:  # the last one gets no gradient
            g = (rng.standard_normal(s) * scale).astype(dtype)
            e.grad = ember.tensor(g, device=device)
            t.grad = torch.tensor(g)
        es.append(e)
        ts.append(t)
    return es, ts


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0, 0.5, 0.0])
@pytest.mark.parametrize("max_norm", [0.3, 1e5])
@pytest.mark.parametrize("device", ["cpu", "emu"])
def test_clip_grad_norm_matches_torch(norm_type, max_norm, device, rng):
    dtype = np.float64 if device == "cpu" else np.float32
    es, ts = _params(rng, device, dtype)
    en = ember.nn.utils.clip_grad_norm_(es, max_norm, norm_type=norm_type)
    tn = torch.nn.utils.clip_grad_norm_(ts, max_norm, norm_type=norm_type)
    assert en.shape == () and en.device == ember.device(device)
    tol = dict(rtol=1e-12, atol=0) if dtype == np.float64 else dict(rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(en.item(), tn.item(), **tol)
    for e, t in zip(es, ts):
        if t.grad is None:
            assert e.grad is None
        else:
            np.testing.assert_allclose(e.grad.cpu().numpy(), t.grad.numpy(), **tol)


def test_clip_grad_norm_one_tensor_nonfinite_and_no_grads(rng):
    es, ts = _params(rng)
    en = ember.nn.utils.clip_grad_norm_(es[0], 0.1)
    tn = torch.nn.utils.clip_grad_norm_(ts[0], 0.1)
    np.testing.assert_allclose(en.item(), tn.item(), rtol=1e-12)
    np.testing.assert_allclose(es[0].grad.numpy(), ts[0].grad.numpy(), rtol=1e-12)
    es[1].grad = ember.tensor([math.inf] + [1.0] * 6, dtype=ember.float64)
    ts[1].grad = torch.tensor([math.inf] + [1.0] * 6, dtype=torch.float64)
    for lib, ps in ((ember, es), (torch, ts)):
        with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                                               "`parameters` is non-finite, so it cannot be "
                                               "clipped"):
            lib.nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    en = ember.nn.utils.clip_grad_norm_(es, 1.0)
    tn = torch.nn.utils.clip_grad_norm_(ts, 1.0)
    assert math.isinf(en.item()) and math.isinf(tn.item())
    np.testing.assert_array_equal(es[0].grad.numpy(), ts[0].grad.numpy())  # all zeros
    z = ember.zeros(3, requires_grad=True)
    assert ember.nn.utils.clip_grad_norm_([z], 1.0).item() == 0.0


def test_clip_grad_value_and_vectors_match_torch(rng):
    es, ts = _params(rng, scale=3.0)
    ember.nn.utils.clip_grad_value_(es, 1.5)
    torch.nn.utils.clip_grad_value_(ts, 1.5)
    for e, t in zip(es, ts):
        if t.grad is not None:
            np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())
    ev = ember.nn.utils.parameters_to_vector(es)
    tv = torch.nn.utils.parameters_to_vector(ts)
    np.testing.assert_array_equal(ev.detach().numpy(), tv.detach().numpy())
    assert ev.grad_fn is not None and tv.grad_fn is not None
    new = rng.standard_normal(ev.shape[0])
    ember.nn.utils.vector_to_parameters(ember.tensor(new), es)
    torch.nn.utils.vector_to_parameters(torch.tensor(new), ts)
    for e, t in zip(es, ts):
        np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())
    with pytest.raises(TypeError, match="expected Tensor, but got: list"):
        ember.nn.utils.vector_to_parameters([1.0], es)
    with pytest.raises(ember.ShapeError, match="has 3 elements but the parameters have"):
        ember.nn.utils.vector_to_parameters(ember.zeros(3, dtype=ember.float64), es)
