"""Neural-network functions with PyTorch's names, arguments and defaults (torch.nn.functional)."""
import warnings

from .. import _C
from ..autograd import no_grad
from .._C import (  # noqa: F401
    conv2d, conv1d, conv_transpose2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d, batch_norm,
    gelu, sigmoid, tanh, softplus, linear, softmax, log_softmax,
    layer_norm, group_norm, instance_norm, pad, pixel_shuffle, pixel_unshuffle, prelu,
    scaled_dot_product_attention,
    cross_entropy, nll_loss, mse_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
    l1_loss, smooth_l1_loss, huber_loss, kl_div, cosine_embedding_loss, margin_ranking_loss,
)


def _inplace(y, x, inplace):
    """The result y of a function of x; with inplace, x takes y's values (and, where autograd
    recorded y, its history) and is returned, as PyTorch's in-place functions return their input.

    Outside autograd (no grad needed) the values are written into x's memory, so every view of
    it sees them. Where autograd records, x's handle takes the result and its history instead:
    the gradient is PyTorch's, but other views of x's old memory keep the old values."""
    if not inplace:
        return y
    if _C.is_grad_enabled() and x.requires_grad:
        if x.is_leaf:
            _C._raise("value", "a leaf tensor that requires grad is being used in an in-place "
                               "operation (inplace=True); use inplace=False or ember.no_grad()")
        _C._take_result(x, y)
        return x
    with no_grad():
        x.copy_(y)
    return x


def relu(input, inplace=False):
    return _inplace(_C.relu(input), input, inplace)


def relu6(input, inplace=False):
    return _inplace(_C.relu6(input), input, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _inplace(_C.leaky_relu(input, negative_slope), input, inplace)


def elu(input, alpha=1.0, inplace=False):
    return _inplace(_C.elu(input, alpha), input, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _inplace(_C.hardtanh(input, min_val, max_val), input, inplace)


def silu(input, inplace=False):
    return _inplace(_C.silu(input), input, inplace)


def hardswish(input, inplace=False):
    return _inplace(_C._hardswish(input), input, inplace)


def hardsigmoid(input, inplace=False):
    return _inplace(_C._hardsigmoid(input), input, inplace)


def mish(input, inplace=False):
    return _inplace(_C._mish(input), input, inplace)


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _inplace(_C.dropout(input, p, training), input, inplace)


def _feature_dropout(name, batched_dims, input, p, training, inplace):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    dims = input.dim()
    if dims not in (batched_dims - 1, batched_dims):
        raise _C.ShapeError(f"{name}: expected a {batched_dims - 1}-D (unbatched) or "
                            f"{batched_dims}-D input, got shape {tuple(input.shape)}")
    if dims == batched_dims - 1:  # no batch dim: channels first
        y = _C._feature_dropout(input.reshape((1,) + tuple(input.shape)), p, training)
        y = y.reshape(tuple(input.shape))
    else:
        y = _C._feature_dropout(input, p, training)
    return _inplace(y, input, inplace)


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
    return _inplace(_C._feature_dropout(input, p, training), input, inplace)


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

