"""Convolution algorithm policy: force an algorithm, restrict to deterministic ones, and see the
ranking for a convolution (docs/conv.md)."""
from .. import _C


def set_algo(name):
    """Forces every convolution to use `name` ("" or None clears it). ember.ValueError lists the
    valid names for an unknown one."""
    _C._conv_set_algo(name or "")


def forced_algo():
    return _C._conv_forced_algo()


def set_deterministic(on):
    _C._conv_set_deterministic(bool(on))


def deterministic():
    return _C._conv_deterministic()


def algo_names():
    return _C._conv_algo_names()


def clear_cache():
    _C._conv_clear_cache()


def explain(input_shape, weight_shape, stride=1, padding=0, dilation=1, groups=1,
            direction="forward", dtype=None, device="cpu"):
    """The policy's ranking of every algorithm for one convolution: a dict with "key", "policy",
    "chosen", "reason" and "candidates" (name, backend, supported, rank, workspace_bytes,
    reason ...)."""
    return _C._explain_conv_algos(list(input_shape), list(weight_shape), stride, padding, dilation,
                                  groups, direction, dtype, device)


explain_conv_algos = explain
