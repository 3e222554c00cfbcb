"""Reductions as functions (ember.sum(x, dim) ...), the same as the Tensor methods."""
from . import _C


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001
    return input.sum(dim, keepdim, dtype)


def mean(input, dim=None, keepdim=False):
    return input.mean(dim, keepdim)


def max(input, dim=None, keepdim=False):  # noqa: A001
    """The largest element; with dim, the named tuple (values, indices); with a tensor as the
    second argument, the elementwise maximum (as torch.max)."""
    return input.max(dim, keepdim)


def min(input, dim=None, keepdim=False):  # noqa: A001
    return input.min(dim, keepdim)


def amax(input, dim=None, keepdim=False):
    return input.amax(dim, keepdim)


def amin(input, dim=None, keepdim=False):
    return input.amin(dim, keepdim)


def argmax(input, dim=None, keepdim=False):
    return input.argmax(dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    return input.argmin(dim, keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.std(dim, unbiased, keepdim, correction=correction)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.var(dim, unbiased, keepdim, correction=correction)
