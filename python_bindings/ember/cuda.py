"""CUDA availability, said plainly: is_available() and, when not, why_unavailable().
`ember.cuda.amp.GradScaler` is ember.amp.GradScaler under PyTorch's torch.cuda.amp name and
signature (no device argument)."""
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


_CudaGradScaler.__name__ = _CudaGradScaler.__qualname__ = "GradScaler"
amp = types.ModuleType(__name__ + ".amp", "torch.cuda.amp's names: GradScaler (ember.amp).")
amp.GradScaler = _CudaGradScaler
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
