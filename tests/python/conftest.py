"""Shared helpers for the Python tests: PyTorch (Debian's CPU build) is the reference."""
import os

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

TOL = {ember.float32: dict(rtol=1e-4, atol=1e-5), ember.float64: dict(rtol=1e-10, atol=1e-12)}
TORCH_DTYPE = {ember.float32: torch.float32, ember.float64: torch.float64}
NP_DTYPE = {ember.float32: np.float32, ember.float64: np.float64}


@pytest.fixture(params=[ember.float32, ember.float64], ids=["f32", "f64"])
def dtype(request):
    return request.param


@pytest.fixture
def rng():
    # A fresh seed per test run, printed with a failure's output; EMBER_TEST_SEED replays one.
    replay = os.environ.get("EMBER_TEST_SEED")
    seed = int(replay) if replay else np.random.SeedSequence().entropy % (2**32)
    print(f"numpy seed {seed}")  # shown with a failure's captured output, to replay it
    return np.random.default_rng(seed)


def pair(a, requires_grad=True):
    """The same values as an ember tensor and a torch tensor (both leaves)."""
    e = ember.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f")
    t = torch.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f")
    return e, t


def close(e, t, dtype=None, what=""):
    """Asserts an ember tensor equals a torch tensor within the dtype's tolerance."""
    dtype = dtype or e.dtype
    tol = TOL.get(dtype, dict(rtol=0, atol=0))
    en = e.detach().numpy()
    tn = t.detach().numpy()
    assert en.shape == tn.shape, f"{what}: shape {en.shape} vs {tn.shape}"
    np.testing.assert_allclose(en, tn, err_msg=what, **tol)
