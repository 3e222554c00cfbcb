"""cuDNN on `cuda`, with PyTorch's names (torch.backends.cudnn):

    import ember
    ember.backends.cudnn.enabled = False      # Ember's kernels only (EMBER_CUDNN=0 likewise)
    ember.backends.cudnn.benchmark = True     # time cuDNN's and Ember's candidates, keep the fastest
    ember.backends.cudnn.deterministic = True # deterministic algorithms only
    ember.backends.cudnn.allow_tf32 = True    # float32 may use TF32 tensor-core engines

Unlike PyTorch, allow_tf32 is False by default: float32 stays strict FMA math unless asked.
`benchmark` and `deterministic` are the convolution policy of ember.backends.conv (one setting,
two names). `preference` is the convolution's "prefer-cudnn" (the default: cuDNN's ranked engines
first under the heuristic policy), "prefer-ember" (Ember's kernels first) or "benchmark" (cuda
convolutions under the benchmark policy). set_preference(op, name) sets it per op: "conv2d",
"activation" (relu, sigmoid, tanh, elu, silu, relu6), "softmax", "pooling" (max, average, adaptive
average) and "batch_norm"; there "benchmark" times cuDNN's call and Ember's kernel on the first
call of each shape and keeps the faster. `batch_norm_persistent = True` lets training batch norm
use cuDNN's faster SPATIAL_PERSISTENT mode, which can overflow (off by default). Without a GPU,
or without a usable cuDNN, every op runs on Ember's kernels and `is_available()` says why not.
"""
import contextlib
import sys

from .. import _C
from .conv import _ConvModule, _switch


def set_preference(op, name):
    """Who runs `op` ("conv2d", "activation", "softmax", "pooling" or "batch_norm") on cuda:
    "prefer-cudnn" (the default), "prefer-ember" or "benchmark". ember.ValueError for another op
    or name."""
    _C._cudnn_set_preference(str(op), str(name))


def preference_of(op):
    return _C._cudnn_preference(str(op))


def version():
    """The loaded cuDNN's version (91900 for 9.19.0), or None when none is loaded."""
    v = _C._cudnn_version()
    return v or None


def is_available():
    """Whether cuDNN can serve convolutions here (a GPU, a driver and a cuDNN that fits)."""
    return _C._cudnn_verdict()[0]


def unavailable_reason():
    """Why is_available() is False ("" when it is True)."""
    return _C._cudnn_verdict()[1]


def is_acceptable(tensor):
    """Whether cuDNN could run ops on this tensor: a cuda tensor of a floating dtype, with cuDNN
    enabled and available."""
    return (tensor.device.type == "cuda" and tensor.dtype.is_floating_point and
            _C._cudnn_enabled() and is_available())


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, deterministic=False, allow_tf32=True):
    """Sets the switches for the body of a `with` block and restores them after, as
    torch.backends.cudnn.flags (same defaults)."""
    module = sys.modules[__name__]
    saved = (module.enabled, module.benchmark, module.deterministic, module.allow_tf32)
    try:
        module.enabled, module.benchmark = enabled, benchmark
        module.deterministic, module.allow_tf32 = deterministic, allow_tf32
        yield
    finally:
        (module.enabled, module.benchmark, module.deterministic, module.allow_tf32) = saved


class _CudnnModule(_ConvModule):
    """`benchmark` from ember.backends.conv (the same setting), and cuDNN's own switches."""

    enabled = _switch(_C._cudnn_enabled, _C._cudnn_set_enabled)
    deterministic = _switch(_C._conv_deterministic, _C._conv_set_deterministic)
    allow_tf32 = _switch(_C._conv_allow_tf32, _C._conv_set_allow_tf32)
    batch_norm_persistent = _switch(_C._cudnn_bn_persistent, _C._cudnn_set_bn_persistent)
    # PyTorch's cap on how many cuDNN algorithms its benchmark tries; Ember's benchmark times
    # every supported candidate under a workspace limit (ember.backends.conv), so it is kept
    # only for scripts that set it.
    benchmark_limit = 10

    @property
    def preference(self):
        return _C._conv_backend_preference()

    @preference.setter
    def preference(self, name):
        _C._conv_set_backend_preference(str(name))


sys.modules[__name__].__class__ = _CudnnModule
