"""Ember: a small deep-learning runtime (C++/CUDA) with a PyTorch-like Python API.

    import ember
    x = ember.randn(4, 3, requires_grad=True)
    y = (x @ x.T).relu().sum()
    y.backward()
    print(x.grad)
"""
from . import _C
from . import _argcheck
_argcheck.install(_C, _C.Tensor)  # before the names below are taken from _C
from ._C import (  # noqa: F401
    Tensor, dtype, device,
    float32, float64, float16, bfloat16, int32, int64, uint8,
    Error, ShapeError, DTypeError, DeviceError, IndexError, ValueError, OutOfMemoryError,
    FormatError, IOError, CudaError, CudnnError, CublasError,
    tensor, from_numpy, from_dlpack, initial_seed, promote_types, set_num_threads,
    get_num_threads,
    memory_stats, reset_peak_memory_stats, empty_cache,
    add, sub, mul, div, pow, neg, exp, log, sqrt, rsqrt, abs, clamp, maximum, minimum,
    eq, ne, lt, le, gt, ge, matmul, mm, bmm, transpose, permute, reshape, flatten, cat, stack,
    detach, broadcast_shapes,
    conv2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d, batch_norm, relu, leaky_relu, sigmoid,
    tanh, gelu, silu, elu, softplus, hardtanh, relu6, dropout, linear, softmax, log_softmax,
    cross_entropy, nll_loss, mse_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
    is_grad_enabled, set_grad_enabled,
)
from . import _tensor  # noqa: F401  (Python-side Tensor methods)
from . import _ops  # noqa: F401  (indexing, sorting, in-place and more Tensor methods)
from ._factories import (  # noqa: F401
    zeros, ones, empty, full, arange, rand, randn, zeros_like, ones_like, full_like, empty_like,
    rand_like, randn_like, as_tensor,
)
from ._reductions import sum, mean, max, min, amax, amin, argmax, argmin, std, var  # noqa: F401
from ._C import (  # noqa: F401
    gather, index_select, take_along_dim, masked_select, masked_fill, scatter, scatter_add,
    index_add, index_put, nonzero, argsort, cumsum, cumprod, flip, roll, narrow, split, chunk,
    unbind, movedim, tile, repeat_interleave, tril, triu, sign, floor, ceil, round, trunc, sin,
    cos, erf, fmod, remainder, lerp, isnan, isinf, isfinite, logical_not, any, all, logsumexp,
    outer, addmm, baddbmm,
)
from ._ops import (  # noqa: F401
    sort, topk, kthvalue, unique, msort, where, einsum, norm, clip, randint, randperm, linspace,
    logspace, eye, return_types,
)
from . import linalg  # noqa: F401
from ._trace import trace  # noqa: F401
moveaxis = movedim
from .autograd import no_grad, enable_grad  # noqa: F401
from .serialization import load, save  # noqa: F401
from ._random import Generator, default_generator, manual_seed  # noqa: F401
from ._tensor_str import set_printoptions  # noqa: F401
from ._runtime import doctor  # noqa: F401
from . import amp, autograd, nn, optim, cuda, backends, utils, datasets  # noqa: F401
from .amp import autocast, is_autocast_enabled, get_autocast_dtype  # noqa: F401

from .backends import use_deterministic_algorithms, are_deterministic_algorithms_enabled  # noqa
from . import _docs, _factories, _random

bool = _C.bool  # noqa: A001  (ember.bool, as torch.bool)
# PyTorch's dtype aliases (ember has no int8, int16/short or complex dtypes).
float, double, half, long, int = float32, float64, float16, int64, int32  # noqa: A001
Size = tuple
__version__ = "0.1.0"

_argcheck.install_python(_factories, _random, _ops, nn.layers, nn.conv, nn.normalization,
                         nn.upsample, nn.attention, nn.loss, nn.sparse, nn.functional,
                         nn.clip_grad, utils.data.dataloader)
_docs.apply(globals(), nn)

# `from ember import *` must not shadow the built-in exceptions and types.
__all__ = [n for n in dir() if not n.startswith("_") and n not in
           ("IndexError", "ValueError", "IOError", "bool", "sum", "max", "min", "abs", "pow",
            "any", "all", "round", "float", "int")]


def __getattr__(name):
    # ember.distributed loads MPI and NCCL, ember.onnx protobuf: imported on first use, not with
    # `import ember`.
    if name in ("distributed", "onnx"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember' has no attribute '{name}'")
