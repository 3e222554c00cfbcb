"""Convolution algorithm policy: force an algorithm, restrict to deterministic ones, time the
candidates once per convolution (the benchmark policy, like torch.backends.cudnn.benchmark), keep
the measurements in a file, and see the ranking for a convolution (docs/conv.md).

    import ember
    ember.backends.conv.benchmark = True        # same as set_policy("benchmark")
    ember.backends.conv.load_cache("conv_cache.json")
    ...
    ember.backends.conv.save_cache("conv_cache.json")
"""
import sys
import types

from .. import _C


def set_algo(name):
    """Forces every convolution to use `name` ("" or None clears it). ember.ValueError lists the
    valid names for an unknown one."""
    _C._conv_set_algo(name or "")


def forced_algo():
    return _C._conv_forced_algo()


def set_deterministic(on):
    """Deterministic algorithms only. With the benchmark on as well, the benchmark times the
    deterministic algorithms only (as PyTorch's benchmark + deterministic)."""
    _C._conv_set_deterministic(bool(on))


def deterministic():
    return _C._conv_deterministic()


def set_benchmark(on):
    """Turns the benchmark policy on or off (the deterministic flag is left as it is)."""
    _C._conv_set_benchmark(bool(on))


def set_policy(name):
    """"heuristic", "benchmark" or "deterministic" (as EMBER_CONV_POLICY); ember.ValueError
    otherwise. A forced algorithm (set_algo) still takes precedence."""
    _C._conv_set_policy(name)


def policy():
    """The policy in effect: "forced", "benchmark", "deterministic" or "heuristic"."""
    return _C._conv_policy()


def set_workspace_limit(nbytes):
    """The benchmark times only candidates whose workspace is at most `nbytes` (default 1 GiB,
    or EMBER_CONV_WORKSPACE_LIMIT)."""
    _C._conv_set_workspace_limit(int(nbytes))


def workspace_limit():
    return _C._conv_workspace_limit()


def save_cache(path):
    """Writes the benchmark's measurements to `path`; returns how many. ember.IOError when the
    file cannot be written."""
    return _C._conv_save_cache(str(path))


def load_cache(path):
    """Adds the measurements of a file save_cache wrote; returns how many were taken.
    ember.FormatError (naming the file and the reason) for a corrupt, truncated or foreign file
    (another device, library version or algorithm set); ember.IOError when it cannot be read."""
    return _C._conv_load_cache(str(path))


def benchmark_stats():
    """Counters of the benchmark's work: keys_timed, candidates_timed, cache_hits,
    entries_loaded."""
    return _C._conv_benchmark_stats()


def algo_names():
    return _C._conv_algo_names()


def clear_cache():
    """Forgets the rankings and the benchmark's measurements."""
    _C._conv_clear_cache()


def explain(input_shape, weight_shape, stride=1, padding=0, dilation=1, groups=1,
            direction="forward", dtype=None, device="cpu"):
    """The policy's ranking of every algorithm for one convolution: a dict with "key", "policy",
    "chosen", "reason", "source" (where the benchmark's measurement comes from) and "candidates"
    (name, backend, supported, rank, workspace_bytes, time_ms, reason ...)."""
    return _C._explain_conv_algos(list(input_shape), list(weight_shape), stride, padding, dilation,
                                  groups, direction, dtype, device)


explain_conv_algos = explain


def _switch(get, set_):
    """A module attribute that reads get() and writes set_(bool(value))."""
    return property(lambda self: get(), lambda self, on: set_(bool(on)))


class _ConvModule(types.ModuleType):
    """Gives the module a `benchmark` attribute that reads and sets the policy, as
    torch.backends.cudnn.benchmark does."""

    benchmark = _switch(_C._conv_benchmark, _C._conv_set_benchmark)


sys.modules[__name__].__class__ = _ConvModule
