"""Random generators and the host-side random choices data loading needs: ember.Generator (a
seeded Philox stream, runtime/rng.h), ember.manual_seed, and the weighted draws of
WeightedRandomSampler. randperm and randint are ember.randperm and ember.randint (_ops.py),
drawn on the device from a generator's stream; they do not reproduce PyTorch's numbers for the
same seed (a different generator), but are reproducible from Ember's."""
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
