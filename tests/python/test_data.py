"""ember.utils.data against torch.utils.data 1.13: samplers' index sequences where torch's random
generator is not involved (sequential, batches, subsets, concatenation, the DataLoader's
batching, collation), the distributions where it is (permutations, uniform and weighted draws,
random_split), reproducibility from ember.manual_seed and ember.Generator, worker threads giving
the batches in order, and PyTorch's messages."""
import collections

import numpy as np
import pytest

import ember
from conftest import torch

E, T = ember.utils.data, torch.utils.data


def _np(x):
    """Collated batches as nested Python lists/dicts of numpy arrays, for comparison."""
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return [_np(v) for v in x]
    if hasattr(x, "_fields"):
        return (type(x).__name__, [_np(v) for v in x])
    if hasattr(x, "detach"):
        return (x.detach().cpu().numpy().tolist(), str(x.dtype).split(".")[-1])
    return x


class Squares(E.Dataset):
    def __init__(self, n, lib):
        self.n, self.lib = n, lib

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = self.lib.tensor([float(i), float(i * i)])
        return {"x": x, "y": i, "name": f"n{i}", "pair": (np.float32(i), [i, i + 0.5])}


def test_sequential_batch_sampler_and_default_collate_match_torch():
    for drop_last in (False, True):
        e = list(E.BatchSampler(E.SequentialSampler(range(10)), 3, drop_last))
        t = list(T.BatchSampler(T.SequentialSampler(range(10)), 3, drop_last))
        assert e == t
        assert len(E.BatchSampler(range(10), 3, drop_last)) == len(t)
    el = E.DataLoader(Squares(7, ember), batch_size=3)
    tl = T.DataLoader(Squares(7, torch), batch_size=3)
    assert len(el) == len(tl) == 3
    for eb, tb in zip(el, tl):
        assert _np(eb) == _np(tb)


Point = collections.namedtuple("Point", "a b")


@pytest.mark.parametrize("batch", [
    [1, 2, 3], [1.5, 2.0], [True, False], ["a", "b"],
    [(1, 2.0), (3, 4.0)], [[1, 2], [3, 4]], [{"k": 1, "v": [1.0, 2.0]}, {"k": 2, "v": [3.0, 4.0]}],
    [Point(1, 2.5), Point(3, 4.5)],
    [np.arange(3, dtype=np.int32), np.arange(3, 6, dtype=np.int32)],
    [np.float64(1.5), np.float64(2.5)], [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
])
def test_default_collate_matches_torch(batch):
    assert _np(E.default_collate(batch)) == _np(T.default_collate(batch))


def test_default_collate_of_tensors_and_errors():
    xs = [ember.tensor([[1.0, 2.0]]), ember.tensor([[3.0, 4.0]])]
    assert E.default_collate(xs).shape == (2, 1, 2)
    for lib in (E, T):
        with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy "
                                            "arrays, numbers, dicts or lists; found"):
            lib.default_collate([object(), object()])
        with pytest.raises(RuntimeError, match="each element in list of batch should be of equal "
                                               "size"):
            lib.default_collate([[1, 2], [3]])


def test_subset_concat_and_subset_sampler():
    es = E.ConcatDataset([list(range(5)), list(range(10, 13))])
    ts = T.ConcatDataset([list(range(5)), list(range(10, 13))])
    assert [es[i] for i in range(-8, 8)] == [ts[i] for i in range(-8, 8)]
    assert es.cumulative_sizes == ts.cumulative_sizes and len(es) == len(ts)
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        es[-9]
    sub = E.Subset(list("abcdef"), [4, 0, 2])
    assert [sub[i] for i in range(3)] == ["e", "a", "c"] and len(sub) == 3
    g = ember.Generator().manual_seed(5)
    order = list(E.SubsetRandomSampler([7, 8, 9, 10], generator=g))
    assert sorted(order) == [7, 8, 9, 10]
    assert order == list(E.SubsetRandomSampler([7, 8, 9, 10],
                                               generator=ember.Generator().manual_seed(5)))


def test_random_sampler_permutations_reproducible_and_uniform(rng):
    data = range(6)
    seed = int(rng.integers(2**31))
    a = list(E.RandomSampler(data, generator=ember.Generator().manual_seed(seed)))
    b = list(E.RandomSampler(data, generator=ember.Generator().manual_seed(seed)))
    assert a == b and sorted(a) == list(range(6))
    ember.manual_seed(seed)
    c = list(E.RandomSampler(data))
    ember.manual_seed(seed)
    assert list(E.RandomSampler(data)) == c
    # num_samples past the length: whole permutations, then part of one.
    d = list(E.RandomSampler(data, num_samples=14, generator=ember.Generator().manual_seed(1)))
    assert len(d) == 14 and sorted(d[:6]) == sorted(d[6:12]) == list(range(6))
    # Each position uniform over the items: 6000 permutations, expected 1000 per cell.
    g = ember.Generator().manual_seed(seed)
    counts = np.zeros((6, 6))
    for _ in range(6000):
        for pos, v in enumerate(E.RandomSampler(data, generator=g)):
            counts[pos, v] += 1
    assert np.abs(counts - 1000).max() < 6 * np.sqrt(1000 * 5 / 6)
    # With replacement: uniform draws.
    r = np.array(list(E.RandomSampler(range(5), replacement=True, num_samples=50000, generator=g)))
    assert np.abs(np.bincount(r, minlength=5) - 10000).max() < 6 * np.sqrt(10000 * 0.8)
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got "
                                        "replacement=1"):
        E.RandomSampler(data, replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but "
                                         "got num_samples=0"):
        E.RandomSampler(data, num_samples=0)


def test_weighted_random_sampler_distribution(rng):
    w = [0.1, 0.0, 0.6, 0.3]
    g = ember.Generator().manual_seed(int(rng.integers(2**31)))
    n = 40000
    draws = np.array(list(E.WeightedRandomSampler(w, n, generator=g)))
    counts = np.bincount(draws, minlength=4)
    assert counts[1] == 0
    expect = np.array(w) * n
    assert np.all(np.abs(counts - expect) < 6 * np.sqrt(expect * (1 - np.array(w))) + 1)
    # Without replacement: each index once, the first pick in proportion to the weights.
    firsts = np.zeros(4)
    for _ in range(6000):
        pick = list(E.WeightedRandomSampler(w, 3, replacement=False, generator=g))
        assert sorted(pick) == [0, 2, 3]
        firsts[pick[0]] += 1
    assert np.all(np.abs(firsts - np.array(w) * 6000) < 6 * np.sqrt(6000 * 0.25) + 1)
    # Torch's draw of the second pick given the first (0.6 then 0.1 / 0.4 and 0.3 / 0.4), checked
    # on the ember draws too.
    seconds = collections.Counter()
    for _ in range(4000):
        pick = list(E.WeightedRandomSampler(w, 2, replacement=False, generator=g))
        if pick[0] == 2:
            seconds[pick[1]] += 1
    total = sum(seconds.values())
    assert abs(seconds[0] / total - 0.25) < 0.05 and abs(seconds[3] / total - 0.75) < 0.05
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        E.WeightedRandomSampler([[0.5]], 2)
    with pytest.raises(ValueError, match="cannot sample n_sample > prob_dist.size"):
        list(E.WeightedRandomSampler(w, 4, replacement=False))


def test_random_split_lengths_fractions_and_generator():
    ds = list(range(10))
    for lengths in ([3, 7], [0.5, 0.3, 0.2], [0.33, 0.33, 0.34], [0.3, 0.3, 0.4]):
        e = E.random_split(ds, lengths, generator=ember.Generator().manual_seed(0))
        t = T.random_split(ds, lengths, generator=torch.Generator().manual_seed(0))
        assert [len(s) for s in e] == [len(s) for s in t]
        assert sorted(i for s in e for i in s) == ds
    a = E.random_split(ds, [4, 6], generator=ember.Generator().manual_seed(3))
    b = E.random_split(ds, [4, 6], generator=ember.Generator().manual_seed(3))
    assert list(a[0]) == list(b[0])
    for lib in (E, T):
        with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of "
                                             "the input dataset!"):
            lib.random_split(ds, [3, 3])


def test_dataloader_with_sampler_collate_fn_and_threads():
    ds = Squares(23, ember)
    collate = lambda items: (E.default_collate([it["x"] for it in items]),  # noqa: E731
                             [it["name"] for it in items])
    sampler = E.SubsetRandomSampler(list(range(0, 23, 2)), generator=ember.Generator().manual_seed(4))
    plain = list(E.DataLoader(ds, batch_size=4, sampler=sampler, collate_fn=collate))
    started = []
    sampler.generator.manual_seed(4)
    threaded = list(E.DataLoader(ds, batch_size=4, sampler=sampler, collate_fn=collate,
                                 num_workers=3, worker_init_fn=started.append, pin_memory=True))
    sampler.generator.manual_seed(4)
    again = list(E.DataLoader(ds, batch_size=4, sampler=sampler, collate_fn=collate,
                              num_workers=3, prefetch_factor=1))
    # Worker threads hand the batches over in the sampler's order.
    assert [n for _, n in threaded] == [n for _, n in plain] == [n for _, n in again]
    for (x1, _), (x2, _) in zip(threaded, plain):
        assert x1.tolist() == x2.tolist()
    assert sorted(started) == list(range(len(started))) and 1 <= len(started) <= 3
    assert len(plain) == len(threaded) == 3
    names = [n for _, names in threaded for n in names]
    assert sorted(names, key=lambda s: int(s[1:])) == [f"n{i}" for i in range(0, 23, 2)]
    # batch_sampler, drop_last and the worker info.
    bs = E.BatchSampler(E.SequentialSampler(ds), 5, drop_last=True)
    seen = []

    def remember(items):
        seen.append(E.get_worker_info().num_workers)
        return len(items)
    assert list(E.DataLoader(ds, batch_sampler=bs, collate_fn=remember, num_workers=2)) == [5] * 4
    assert seen == [2] * 4 and E.get_worker_info() is None
    # Shuffling reproducible from the default generator, as PyTorch's.
    ember.manual_seed(11)
    first = [b.tolist() for b in E.DataLoader(list(range(9)), batch_size=4, shuffle=True)]
    ember.manual_seed(11)
    assert [b.tolist() for b in E.DataLoader(list(range(9)), batch_size=4, shuffle=True)] == first
    gl = E.DataLoader(list(range(9)), batch_size=4, shuffle=True,
                      generator=ember.Generator().manual_seed(2))
    epoch1, epoch2 = [b.tolist() for b in gl], [b.tolist() for b in gl]
    assert epoch1 != epoch2 and sorted(sum(epoch1, [])) == list(range(9))
    # Errors from a worker reach the loop, in order.
    bad = E.DataLoader(list(range(8)), batch_size=2, num_workers=2,
                       collate_fn=lambda b: 1 // (b[0] - 4))
    with pytest.raises(ZeroDivisionError):
        list(bad)


@pytest.mark.parametrize("kwargs, message", [
    (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive with "
                                              "batch_size, shuffle, sampler, and drop_last"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching and "
                                            "is mutually exclusive with drop_last"),
    (dict(num_workers=-1), "num_workers option should be non-negative; use num_workers=0 to "
                           "disable multiprocessing."),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
])
def test_dataloader_argument_errors_are_torchs(kwargs, message):
    for lib in (E, T):
        with pytest.raises(ValueError) as info:
            lib.DataLoader(list(range(4)), **kwargs)
        assert str(info.value) == message


def test_iterable_dataset_and_no_batching():
    class Stream(E.IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in E.DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in E.DataLoader(Stream(), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        E.DataLoader(Stream(), shuffle=True)
    out = list(E.DataLoader([np.arange(2), np.arange(2, 4)], batch_size=None))
    assert [o.tolist() for o in out] == [[0, 1], [2, 3]]


def test_randperm_and_randint():
    g = ember.Generator().manual_seed(0)
    p = ember.randperm(10, generator=g)
    assert p.dtype == ember.int64 and sorted(p.tolist()) == list(range(10))
    assert ember.randperm(10, generator=ember.Generator().manual_seed(0)).tolist() == p.tolist()
    r = ember.randint(3, 7, (4, 5), generator=g)
    assert r.shape == (4, 5) and r.min().item() >= 3 and r.max().item() < 7
    assert ember.randint(5, (3,)).shape == (3,)
    state = g.get_state()
    a = ember.randperm(8, generator=g).tolist()
    g.set_state(state)
    assert ember.randperm(8, generator=g).tolist() == a
    assert ember.manual_seed(3) is ember.default_generator and ember.initial_seed() == 3
