"""Backend switches: ember.backends.conv (convolution algorithm policy), ember.backends.cudnn
(cuDNN for convolutions, PyTorch's names), ember.backends.matmul (the GPU GEMM); and
use_deterministic_algorithms, as torch's."""
from .. import _C
from . import conv  # noqa: F401
from . import cudnn  # noqa: F401
from . import matmul  # noqa: F401


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Deterministic convolutions only (the selector's deterministic policy, the same switch as
    ember.backends.cudnn.deterministic). Ember's other ops are deterministic already: their
    kernels use no atomics that reorder sums."""
    _C._conv_set_deterministic(bool(mode))


def are_deterministic_algorithms_enabled():
    return _C._conv_deterministic()
