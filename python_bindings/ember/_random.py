"""Random generators and the host-side random choices data loading needs: ember.Generator (a
seeded Philox stream, runtime/rng.h), ember.manual_seed, randperm and randint (as PyTorch's), and
the weighted draws of WeightedRandomSampler.

randperm and randint are computed on the host from the generator's uniform draws (argsort of
float64 keys for a permutation, floor(low + u * (high - low)) for integers) and then moved to the
device asked for; they do not reproduce PyTorch's numbers for the same seed (a different
generator), but are reproducible from Ember's."""
import os

import numpy as np

from . import _C

_TORCH_DEFAULT_SEED = 67280421310721


class Generator:
    """A random generator with its own state: ``g = ember.Generator().manual_seed(0)``.
    Pass it as ``generator=`` to samplers, random_split, randperm and randint."""

    def __init__(self, device="cpu"):
        self.device = _C.device(device) if isinstance(device, str) else device
        self._cpp = _C._Generator(_TORCH_DEFAULT_SEED)

    @classmethod
    def _wrap(cls, cpp):
        g = cls.__new__(cls)
        g.device = _C.device("cpu")
        g._cpp = cpp
        return g

    def manual_seed(self, seed):
        """Seeds the generator; returns it (so ``Generator().manual_seed(0)`` reads well)."""
        seed = int(seed)
        if seed < -(2**63) or seed >= 2**64:
            raise RuntimeError("Overflow when unpacking long")
        self._cpp.manual_seed(seed & (2**64 - 1))
        return self

    def seed(self):
        """Seeds the generator from the operating system's entropy; returns the seed."""
        s = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._cpp.seed()

    def get_state(self):
        """The state: an int64 tensor [seed, offset]."""
        return _C.tensor([self._cpp.seed(), self._cpp.offset()], dtype=_C.int64)

    def set_state(self, state):
        seed, offset = (int(v) for v in state.tolist())
        self._cpp.set_state(seed, offset)
        return self

    def __repr__(self):
        return f"<ember.Generator object at {hex(id(self))}>"


default_generator = Generator._wrap(_C._default_generator())


def manual_seed(seed):
    """Seeds the default generator (every random op and initialiser without a generator=);
    returns it."""
    return default_generator.manual_seed(seed)


def _uniform(n, generator):
    g = generator if generator is not None else default_generator
    if not isinstance(g, Generator):
        raise TypeError(f"generator must be an ember.Generator, got {type(g).__name__}")
    return _C._uniform_draws(int(n), g._cpp).numpy()


def _draw_seed(generator=None):
    """A seed drawn from `generator` (the default one when None), as PyTorch's samplers and
    loaders draw theirs."""
    return int(_uniform(1, generator)[0] * 2**53)


def _finish(values, dtype, device, requires_grad=False):
    t = _C.tensor(values, dtype=dtype or _C.int64)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0, ..., n - 1 (int64 by default)."""
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    keys = _uniform(n, generator)
    return _finish(np.argsort(keys, kind="stable").astype(np.int64), dtype, device, requires_grad)


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False,
            low=None, high=None):
    """randint(high, size) or randint(low, high, size): integers uniform in [low, high)."""
    pos = list(args)
    if size is None and pos and isinstance(pos[-1], (tuple, list)):
        size = pos.pop()
    if high is None:
        high = pos.pop() if pos else None
    if low is None:
        low = pos.pop() if pos else 0
    if high is None or size is None or pos:
        raise TypeError("randint() expects (high, size) or (low, high, size)")
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    size = tuple(size)
    n = int(np.prod(size)) if size else 1
    u = _uniform(n, generator)
    v = np.minimum(low + np.floor(u * (high - low)), high - 1).astype(np.int64).reshape(size)
    return _finish(v, dtype, device, requires_grad)


def _multinomial(weights, num_samples, replacement, generator):
    """num_samples indices drawn in proportion to `weights` (float64 host tensor): inverse CDF
    with replacement; without, the num_samples largest keys u ** (1 / w) (Efraimidis-Spirakis),
    which draws one index at a time in proportion to the weights left, as PyTorch does."""
    w = weights.detach().cpu().numpy().astype(np.float64)
    if w.ndim != 1 or w.size == 0:
        raise ValueError("multinomial: expected a non-empty 1-D weight vector")
    if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError("multinomial: invalid distribution (weights must be finite, >= 0, with "
                         "a positive sum)")
    u = _uniform(num_samples if replacement else w.size, generator)
    if replacement:
        cdf = np.cumsum(w) / w.sum()
        idx = np.minimum(np.searchsorted(cdf, u, side="right"), w.size - 1)
        # The first index whose cumulative weight exceeds u: never one of weight 0.
        return _C.tensor(idx.astype(np.int64))
    if num_samples > np.count_nonzero(w):
        raise ValueError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples "
                         "without replacement (not enough categories of non-zero weight)")
    with np.errstate(divide="ignore"):
        keys = np.where(w > 0, np.log(np.maximum(u, 1e-300)) / np.where(w > 0, w, 1), -np.inf)
    return _C.tensor(np.argsort(-keys, kind="stable")[:num_samples].astype(np.int64))
