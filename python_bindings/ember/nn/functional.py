"""Neural-network functions with PyTorch's names, arguments and defaults (torch.nn.functional)."""
import warnings

from .. import _C
from ..autograd import no_grad
from .._C import (  # noqa: F401
    conv2d, conv1d, conv_transpose2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d, batch_norm,
    gelu, sigmoid, tanh, softplus, linear, softmax, log_softmax,
    layer_norm, group_norm, instance_norm, pad, pixel_shuffle, pixel_unshuffle, prelu,
    scaled_dot_product_attention, one_hot,
    cross_entropy, nll_loss, mse_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
    l1_loss, smooth_l1_loss, huber_loss, kl_div, cosine_embedding_loss, margin_ranking_loss,
)


def _inplace(fn, x, inplace, name="inplace"):
    """fn(x); with inplace, the result is written into x's memory and x is returned, as PyTorch's
    in-place functions return their input. Autograd follows the write as it follows every in-place
    op (Note [In-place ops] in autograd/inplace.h): x's history becomes the result's, through views
    too, and a leaf that requires grad cannot be written outside no_grad()."""
    if not inplace:
        return fn(x)
    return _C._apply_inplace(x, name, [], fn)


def relu(input, inplace=False):
    return _inplace(_C.relu, input, inplace, "relu_")


def relu6(input, inplace=False):
    return _inplace(_C.relu6, input, inplace, "relu6_")


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _inplace(lambda s: _C.leaky_relu(s, negative_slope), input, inplace, "leaky_relu_")


def elu(input, alpha=1.0, inplace=False):
    return _inplace(lambda s: _C.elu(s, alpha), input, inplace, "elu_")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _inplace(lambda s: _C.hardtanh(s, min_val, max_val), input, inplace, "hardtanh_")


def silu(input, inplace=False):
    return _inplace(_C.silu, input, inplace, "silu_")


def hardswish(input, inplace=False):
    return _inplace(_C._hardswish, input, inplace, "hardswish_")


def hardsigmoid(input, inplace=False):
    return _inplace(_C._hardsigmoid, input, inplace, "hardsigmoid_")


def mish(input, inplace=False):
    return _inplace(_C._mish, input, inplace, "mish_")


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _inplace(lambda s: _C.dropout(s, p, training), input, inplace, "dropout_")


def _feature_dropout(name, batched_dims, input, p, training, inplace):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    dims = input.dim()
    if dims not in (batched_dims - 1, batched_dims):
        raise _C.ShapeError(f"{name}: expected a {batched_dims - 1}-D (unbatched) or "
                            f"{batched_dims}-D input, got shape {tuple(input.shape)}")
    def drop(x):
        if dims == batched_dims - 1:  # no batch dim: channels first
            y = _C._feature_dropout(x.reshape((1,) + tuple(x.shape)), p, training)
            return y.reshape(tuple(x.shape))
        return _C._feature_dropout(x, p, training)
    return _inplace(drop, input, inplace, name + "_")


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of [N, C, L] (or unbatched [C, L]) with probability p."""
    return _feature_dropout("dropout1d", 3, input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of [N, C, H, W] with probability p, as PyTorch 1.13: a 3-D input is
    read as [N, C, L] (channel-wise 1-D dropout), with PyTorch's warning."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is "
                      "deprecated; dropout2d exists for 3-D or 4-D inputs.")
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L).")
    return _inplace(lambda s: _C._feature_dropout(s, p, training), input, inplace, "dropout2d_")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of [N, C, D, H, W] (or unbatched [C, D, H, W]) with probability p."""
    return _feature_dropout("dropout3d", 5, input, p, training, inplace)


def _spatial(value, dims, what, kind):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        if len(value) != dims:
            raise ValueError(f"Input and {what} must have the same number of spatial dimensions: "
                             f"got {dims} spatial dimensions and {what} {tuple(value)}")
        return [kind(v) for v in value]
    return [kind(value)] * dims


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Modes 'nearest' (3-D and 4-D input), 'linear' (3-D) and 'bilinear' (4-D), with PyTorch's
    output-size and source-index rules (docs/python.md)."""
    if antialias:
        raise ValueError("interpolate: antialias=True is not supported by Ember")
    dims = input.dim() - 2
    sizes = _spatial(size, dims, "output size", int)
    scales = _spatial(scale_factor, dims, "scale_factor", float)
    return _C._interpolate(input, sizes, scales, mode, align_corners, recompute_scale_factor)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.")
    return interpolate(input, size, scale_factor, mode, align_corners)



def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight picked by the integer indices in input: input.shape + (embedding_dim,).
    With max_norm, the rows looked up are first renormalised in place, as PyTorch does."""
    if sparse:
        raise ValueError("embedding: sparse gradients are not supported by Ember; use sparse=False")
    if max_norm is not None:
        with no_grad():
            _C._embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    return _C.embedding(input, weight, padding_idx, scale_grad_by_freq)
