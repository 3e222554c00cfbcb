"""Data loading over Python sequences, NumPy arrays and tensors: TensorDataset and DataLoader
with batch_size, shuffle, drop_last and a default collate for (input, label) tuples."""
import random

from .. import _C


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class TensorDataset(Dataset):
    """Examples are tuples of the i-th rows of each tensor (or array)."""

    def __init__(self, *tensors):
        n = len(tensors[0])
        if any(len(t) != n for t in tensors):
            raise ValueError("TensorDataset: every tensor must have the same first dimension")
        self.tensors = tensors

    def __getitem__(self, i):
        return tuple(t[i] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


def default_collate(batch):
    """Stacks a list of examples: tensors and arrays are stacked, numbers become a tensor, and
    tuples/lists/dicts are collated field by field."""
    first = batch[0]
    if isinstance(first, _C.Tensor):
        return _C.stack(list(batch))
    if type(first).__module__ == "numpy":
        import numpy as np
        return _C.tensor(np.stack([np.asarray(b) for b in batch]))
    if isinstance(first, (bool, int, float)):
        return _C.tensor(list(batch))
    if isinstance(first, (tuple, list)):
        return type(first)(default_collate([b[i] for b in batch]) for i in range(len(first))) \
            if isinstance(first, tuple) else [default_collate([b[i] for b in batch]) for i in range(len(first))]
    if isinstance(first, dict):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    raise TypeError(f"default_collate: cannot batch elements of type {type(first).__name__}")


class DataLoader:
    """Iterates over `dataset` (anything with __len__ and __getitem__) in batches."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None,
                 seed=None):
        if batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be >= 1, got {batch_size}")
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, shuffle, drop_last
        self.collate_fn = collate_fn or default_collate
        self._rng = random.Random(seed)

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        order = list(range(len(self.dataset)))
        if self.shuffle:
            self._rng.shuffle(order)
        for b in range(len(self)):
            idx = order[b * self.batch_size:(b + 1) * self.batch_size]
            yield self.collate_fn([self.dataset[i] for i in idx])
