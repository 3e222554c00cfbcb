"""DataLoader as torch.utils.data has it: a sampler (or batch sampler) picks indices, the dataset
gives examples, collate_fn makes batches. num_workers > 0 loads batches on that many threads (not
processes), ahead of the loop, and hands them over in order.

Threads share the interpreter: loading that is Python code runs one thread at a time, so workers
pay off when the dataset's work releases the GIL (NumPy, Ember's ops, file reads). Ember's ops
are thread-safe. pin_memory is accepted and does nothing (host memory is not pinned)."""
import collections.abc
import itertools
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ... import _C
from ..._random import Generator, _draw_seed
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

_COLLATE_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                "lists; found {}")
_STR_OBJ_DTYPE = re.compile(r"[SaUO]")


def _collate_tensor(batch, *, collate_fn_map=None):
    return _C.stack(list(batch), 0)


def _collate_numpy_array(batch, *, collate_fn_map=None):
    if _STR_OBJ_DTYPE.search(batch[0].dtype.str) is not None:
        raise TypeError(_COLLATE_ERR.format(batch[0].dtype))
    return collate([_C.tensor(np.ascontiguousarray(b)) for b in batch],
                   collate_fn_map=collate_fn_map)


def _collate_numpy_scalar(batch, *, collate_fn_map=None):
    return _C.tensor(np.array(batch))


def _collate_float(batch, *, collate_fn_map=None):
    return _C.tensor(list(batch), dtype=_C.float64)


def _collate_int(batch, *, collate_fn_map=None):
    return _C.tensor(list(batch))


def _collate_str(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    _C.Tensor: _collate_tensor,
    np.ndarray: _collate_numpy_array,
    (np.bool_, np.number, np.object_): _collate_numpy_scalar,
    float: _collate_float,
    int: _collate_int,
    (str, bytes): _collate_str,
}


def collate(batch, *, collate_fn_map=None):
    """Collates a batch by the type of its first element: collate_fn_map's function for that
    type, or, for mappings, named tuples and sequences, field by field."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for t in collate_fn_map:
            if isinstance(elem, t):
                return collate_fn_map[t](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        fields = {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem}
        try:
            return elem_type(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns  # a list, as PyTorch's (for backward compatibility there)
        try:
            return elem_type(columns)
        except TypeError:
            return columns
    raise TypeError(_COLLATE_ERR.format(elem_type))


def default_collate(batch):
    """Stacks a list of examples into a batch, as PyTorch's: tensors stacked along a new first
    dim, NumPy arrays and numbers made tensors (Python floats as float64, ints as int64, bools as
    bool), strings kept as a list, and dicts, named tuples, tuples and lists collated field by
    field (a tuple becomes a list)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """What a DataLoader without batching (batch_size=None) does to each example: NumPy arrays
    become tensors, containers are converted element by element."""
    if isinstance(data, _C.Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _STR_OBJ_DTYPE.search(data.dtype.str) else _C.tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return _C.tensor(np.array(data))
    if isinstance(data, collections.abc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


class WorkerInfo:
    """What get_worker_info() says inside a worker thread."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={self.dataset!r})")


_worker = threading.local()


def get_worker_info():
    """The WorkerInfo of the calling worker thread, or None outside the DataLoader's workers."""
    return getattr(_worker, "info", None)


class _Workers:
    """num_workers threads, each named by its id and set up by worker_init_fn once."""

    def __init__(self, loader, base_seed):
        self.pool = ThreadPoolExecutor(loader.num_workers, thread_name_prefix="ember-dataloader")
        self.ids = itertools.count()
        self.lock = threading.Lock()
        self.loader, self.base_seed = loader, base_seed

    def _start(self):
        if getattr(_worker, "info", None) is not None:
            return
        with self.lock:
            wid = next(self.ids)
        _worker.info = WorkerInfo(wid, self.loader.num_workers, self.base_seed + wid,
                                  self.loader.dataset)
        if self.loader.worker_init_fn is not None:
            self.loader.worker_init_fn(wid)

    def run(self, fn, arg):
        def task():
            self._start()
            return fn(arg)
        return self.pool.submit(task)

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


class DataLoader:
    """Iterates over `dataset` in batches, as torch.utils.data.DataLoader (same arguments and
    rules). Ember's own `seed=` seeds the shuffling when no generator is given."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=2, persistent_workers=False, pin_memory_device="", seed=None):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor != 2:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing.")
        if prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if generator is None and seed is not None:
            generator = Generator().manual_seed(seed)
        self.dataset = dataset
        self.num_workers, self.prefetch_factor = num_workers, prefetch_factor
        self.pin_memory, self.pin_memory_device, self.timeout = pin_memory, pin_memory_device, timeout
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.persistent_workers, self.generator = persistent_workers, generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (False, None):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._workers = None

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def _fetch(self, indices):
        if self._auto_collation:
            return self.collate_fn([self.dataset[i] for i in indices])
        return self.collate_fn(self.dataset[indices])

    def _index_stream(self):
        return iter(self.batch_sampler if self._auto_collation else self.sampler)

    def _iterable_batches(self):
        it = iter(self.dataset)
        if self.batch_size is None:
            for example in it:
                yield self.collate_fn(example)
            return
        while True:
            chunk = list(itertools.islice(it, self.batch_size))
            if not chunk or (self.drop_last and len(chunk) < self.batch_size):
                return
            yield self.collate_fn(chunk)

    def __iter__(self):
        if self._iterable:
            return self._iterable_batches()
        if self.num_workers == 0:
            return (self._fetch(idx) for idx in self._index_stream())
        return self._threaded()

    def _threaded(self):
        # Batches are submitted up to prefetch_factor * num_workers ahead and taken back in
        # submission order, so the order is the sampler's whatever thread finishes first.
        base_seed = _draw_seed(self.generator)
        workers = self._workers or _Workers(self, base_seed)
        if self.persistent_workers:
            self._workers = workers
        ahead = max(1, self.prefetch_factor * self.num_workers)
        pending = collections.deque()
        indices = self._index_stream()
        try:
            for idx in itertools.islice(indices, ahead):
                pending.append(workers.run(self._fetch, idx))
            while pending:
                batch = pending.popleft().result(timeout=self.timeout or None)
                for idx in itertools.islice(indices, 1):
                    pending.append(workers.run(self._fetch, idx))
                yield batch
        finally:
            for f in pending:
                f.cancel()
            if not self.persistent_workers:
                workers.close()

    def __del__(self):
        if getattr(self, "_workers", None) is not None:
            self._workers.close()
