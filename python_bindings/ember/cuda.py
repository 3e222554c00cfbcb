"""CUDA availability, said plainly: is_available() and, when not, why_unavailable()."""
from . import _C


def is_available():
    return _C._gpu_available("cuda")[0]


def why_unavailable():
    """The reason CUDA cannot be used here ("" when it can)."""
    usable, reason = _C._gpu_available("cuda")
    return "" if usable else reason


def device_count():
    return _C._gpu_device_count("cuda")


def memory_stats(device="cuda:0"):
    return _C.memory_stats(device)


def empty_cache(device="cuda:0"):
    _C.empty_cache(device)
