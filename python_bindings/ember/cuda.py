"""CUDA availability, said plainly: is_available() and, when not, why_unavailable().
`ember.cuda.amp.GradScaler` and `ember.cuda.amp.autocast` are ember.amp's under PyTorch's
torch.cuda.amp names and signatures (no device argument)."""
import sys
import types

from . import _C
from . import amp as _amp


class _CudaGradScaler(_amp.GradScaler):
    """torch.cuda.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval,
    enabled): ember.amp.GradScaler with device "cuda"."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


class _CudaAutocast(_amp.autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True): ember.autocast
    with device_type "cuda"."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype, enabled, cache_enabled)


_CudaGradScaler.__name__ = _CudaGradScaler.__qualname__ = "GradScaler"
_CudaAutocast.__name__ = _CudaAutocast.__qualname__ = "autocast"
amp = types.ModuleType(__name__ + ".amp",
                       "torch.cuda.amp's names: GradScaler and autocast (ember.amp).")
amp.GradScaler = _CudaGradScaler
amp.autocast = _CudaAutocast
sys.modules[amp.__name__] = amp


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
