"""ONNX nodes for Ember's operations, shared by the layers (LAYERS: class -> emitter) and the
functions and Tensor methods (_ops.py). Emitters take ONNX names and return the output's name;
each writes exactly what Ember computes, or refuses through Graph.fail."""
import math

import numpy as np

from ..nn import conv as nn_conv, layers, normalization, upsample
from ._graph import Value, np_dtype


def ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


# --- elementwise activations -------------------------------------------------------------------
def activation(g, kind, x, dtype, **p):
    """The name of kind(x) for the activation `kind` (Ember's and PyTorch's function name)."""
    s = lambda v: g.scalar(v, dtype)  # noqa: E731
    plain = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "erf": "Erf", "exp": "Exp",
             "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "neg": "Neg", "reciprocal": "Reciprocal"}
    if kind in plain:
        return g.node(plain[kind], [x])
    if kind == "leaky_relu":
        return g.node("LeakyRelu", [x], alpha=float(p.get("negative_slope", 0.01)))
    if kind == "elu":
        return g.node("Elu", [x], alpha=float(p.get("alpha", 1.0)))
    if kind in ("hardtanh", "relu6", "clamp"):
        lo, hi = ((0.0, 6.0) if kind == "relu6"
                  else (p.get("min_val", -1.0), p.get("max_val", 1.0)))
        return g.node("Clip", [x, "" if lo is None else s(lo), "" if hi is None else s(hi)])
    if kind == "hardsigmoid":
        return g.node("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5)
    if kind == "hardswish":
        if g.opset >= 14:
            return g.node("HardSwish", [x])
        return g.node("Mul", [x, g.node("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5)])
    if kind == "silu":
        return g.node("Mul", [x, g.node("Sigmoid", [x])])
    if kind == "mish":
        return g.node("Mul", [x, g.node("Tanh", [activation(g, "softplus", x, dtype)])])
    if kind == "gelu":
        # Gelu is an ONNX operator only from opset 20: its formula, as PyTorch exports it.
        if p.get("approximate", "none") == "tanh":
            cube = g.node("Mul", [g.node("Mul", [x, x]), x])
            inner = g.node("Add", [x, g.node("Mul", [cube, s(0.044715)])])
            t = g.node("Tanh", [g.node("Mul", [inner, s(math.sqrt(2.0 / math.pi))])])
        else:
            t = g.node("Erf", [g.node("Div", [x, s(math.sqrt(2.0))])])
        return g.node("Mul", [g.node("Mul", [x, s(0.5)]), g.node("Add", [t, s(1.0)])])
    if kind == "softplus":
        # PyTorch's softplus is x itself where beta * x > threshold: a Where keeps that exact.
        beta, threshold = float(p.get("beta", 1.0)), float(p.get("threshold", 20.0))
        bx = x if beta == 1.0 else g.node("Mul", [x, s(beta)])
        soft = g.node("Softplus", [bx])
        if beta != 1.0:
            soft = g.node("Div", [soft, s(beta)])
        return g.node("Where", [g.node("Greater", [bx, s(threshold)]), x, soft])
    g.fail(kind)


# --- shapes ------------------------------------------------------------------------------------
def reshape(g, x, in_shape, out_shape, requested=None):
    """Reshape to out_shape. Leading dims equal to the input's are written 0 (copy), and a -1 the
    caller asked for stays -1, so the graph keeps working when those dims change (the batch)."""
    dims, leading = [], True
    requested = list(requested) if requested is not None else list(out_shape)
    for i, d in enumerate(out_shape):
        leading = leading and i < len(in_shape) and in_shape[i] == d
        if leading:
            dims.append(0)
        elif i < len(requested) and requested[i] == -1:
            dims.append(-1)
        else:
            dims.append(int(d))
    if 0 in out_shape:
        g.fail("reshape to an empty shape")
    return g.node("Reshape", [x, g.ints(dims)])


def flatten(g, x, shape, start_dim=0, end_dim=-1):
    n = len(shape)
    if n == 0:
        return g.node("Reshape", [x, g.ints([1])])
    start, end = start_dim % n, end_dim % n
    if start == 1 and end == n - 1:
        return g.node("Flatten", [x], axis=1)
    out = list(shape[:start]) + [int(np.prod(shape[start:end + 1]))] + list(shape[end + 1:])
    requested = list(shape[:start]) + [-1] + list(shape[end + 1:])
    return reshape(g, x, shape, out, requested)


# --- convolution, pooling ------------------------------------------------------------------------
def conv_pads(padding, kernel, dilation, dims):
    """(begin pads, end pads) of a convolution's `padding` (ints or 'same'/'valid')."""
    if padding == "valid":
        return [0] * dims, [0] * dims
    if padding == "same":  # as PyTorch: the odd one out goes at the end
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [t // 2 for t in total], [t - t // 2 for t in total]
    p = list(ntuple(padding, dims))
    return p, p


def conv(g, x, w, b, kernel, stride, padding, dilation, groups, dims, padding_mode="zeros",
         shape=None):
    dilation = list(ntuple(dilation, dims))
    lo, hi = conv_pads(padding, kernel, dilation, dims)
    if padding_mode != "zeros" and any(lo + hi):
        modes = {"reflect": "reflect", "replicate": "edge"}
        if padding_mode not in modes:
            g.fail(f"padding_mode='{padding_mode}'",
                   "ONNX's Pad wraps around only from opset 19")
        x = g.node("Pad", [x, g.ints([0, 0] + lo + [0, 0] + hi, "pads")],
                   mode=modes[padding_mode])
        lo, hi = [0] * dims, [0] * dims
    inputs = [x, w] + ([b] if b is not None else [])
    return g.node("Conv", inputs, kernel_shape=list(kernel), strides=list(ntuple(stride, dims)),
                  pads=lo + hi, dilations=dilation, group=int(groups))


def pool(g, op, x, in_hw, out_hw, kernel, stride, padding, dilation=1, ceil_mode=False,
         count_include_pad=True):
    kernel = list(ntuple(kernel, 2))
    stride = list(ntuple(stride if stride else kernel, 2))
    pads = list(ntuple(padding, 2))
    dil = list(ntuple(dilation, 2))
    floor_hw = [(i + 2 * p - d * (k - 1) - 1) // s + 1
                for i, p, d, k, s in zip(in_hw, pads, dil, kernel, stride)]
    ceil_hw = [-(-(i + 2 * p - d * (k - 1) - 1) // s) + 1
               for i, p, d, k, s in zip(in_hw, pads, dil, kernel, stride)]
    use_ceil = 0
    if list(out_hw) != floor_hw:
        if not ceil_mode or list(out_hw) != ceil_hw or op == "AveragePool":
            g.fail(f"{op} with ceil_mode=True",
                   "its last, partial window is not defined the same way in ONNX")
        use_ceil = 1
    attrs = dict(kernel_shape=kernel, strides=stride, pads=pads + pads, ceil_mode=use_ceil)
    if op == "MaxPool":
        attrs["dilations"] = dil
    else:
        attrs["count_include_pad"] = int(bool(count_include_pad))
    return g.node(op, [x], **attrs)


def adaptive_avg_pool(g, x, in_hw, out_hw):
    if all(o == 1 for o in out_hw):
        return g.node("GlobalAveragePool", [x])
    if any(i % o for i, o in zip(in_hw, out_hw)):
        g.fail(f"adaptive average pooling from {tuple(in_hw)} to {tuple(out_hw)}",
               "ONNX has it only when the output size is 1 or divides the input size")
    k = [i // o for i, o in zip(in_hw, out_hw)]
    return g.node("AveragePool", [x], kernel_shape=k, strides=k, pads=[0, 0, 0, 0])


# --- normalisation -----------------------------------------------------------------------------
def ones_zeros(g, n, dtype):
    return (g.const(np.ones(n, np_dtype(dtype)), "ones"),
            g.const(np.zeros(n, np_dtype(dtype)), "zeros"))


def moments_norm(g, x, axes, eps, dtype):
    """(x - mean) / sqrt(var + eps) over `axes` (biased variance), from basic operators."""
    centred = g.node("Sub", [x, g.node("ReduceMean", [x], axes=axes, keepdims=1)])
    var = g.node("ReduceMean", [g.node("Mul", [centred, centred])], axes=axes, keepdims=1)
    std = g.node("Sqrt", [g.node("Add", [var, g.scalar(eps, dtype)])])
    return g.node("Div", [centred, std])


def layer_norm(g, x, norm_shape, w, b, eps, dtype):
    k = len(norm_shape)
    if g.opset >= 17:
        if w is None:
            w = g.const(np.ones(norm_shape, np_dtype(dtype)), "ones")
        return g.node("LayerNormalization", [x, w] + ([b] if b is not None else []),
                      axis=-k, epsilon=float(eps))
    y = moments_norm(g, x, list(range(-k, 0)), eps, dtype)
    if w is not None:
        y = g.node("Mul", [y, w])
    return y if b is None else g.node("Add", [y, b])


def batch_norm(g, x, channels, mean, var, w, b, eps, dtype):
    ones, zeros = ones_zeros(g, channels, dtype)
    return g.node("BatchNormalization", [x, w or ones, b or zeros, mean, var],
                  epsilon=float(eps))


# --- resampling ----------------------------------------------------------------------------------
def resize(g, x, shape, out_shape, size, scale_factor, mode, align_corners,
           recompute_scale_factor):
    if mode == "nearest":
        attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                     nearest_mode="floor")
    elif mode in ("linear", "bilinear"):
        attrs = dict(mode="linear", coordinate_transformation_mode=(
            "align_corners" if align_corners else "pytorch_half_pixel"))
    else:
        g.fail(f"interpolate(mode='{mode}')")
    dims = len(shape) - 2
    if scale_factor is not None and not recompute_scale_factor:
        scales = [1.0, 1.0] + [float(f) for f in ntuple(scale_factor, dims)]
        return g.node("Resize", [x, "", g.const(np.asarray(scales, np.float32), "scales")],
                      **attrs)
    # Sizes: batch and channels from the input's shape, so a dynamic batch keeps working.
    nc = g.node("Slice", [g.node("Shape", [x]), g.ints([0], "starts"), g.ints([2], "ends")])
    sizes = g.node("Concat", [nc, g.ints(out_shape[2:], "sizes")], axis=0)
    return g.node("Resize", [x, "", "", sizes], **attrs)


# --- the layers ----------------------------------------------------------------------------------
def _p(g, m, key):
    t = m._parameters.get(key) if key in m._parameters else m._buffers.get(key)
    if t is None:
        return None
    path = g.path[-1][0]
    return g.param(t, f"{path}.{key}" if path else key)


def _inplace(m, x, name):
    if getattr(m, "inplace", False):  # x's tensor now holds the result: so does its name
        x._name = name
    return name


def _conv_layer(g, m, out, x, *rest):
    w = m._parameters["weight"]
    dims = w.ndim - 2
    return conv(g, x._name, _p(g, m, "weight"), _p(g, m, "bias"), tuple(w.shape[2:]), m.stride,
                m.padding, m.dilation, m.groups, dims, m.padding_mode)


def _conv_transpose_layer(g, m, out, x, *rest):
    w = m._parameters["weight"]
    k, s, p, d = tuple(w.shape[2:]), m.stride, list(m.padding), m.dilation
    # output_padding from the real output: it covers forward(x, output_size) too.
    out_pad = [o - ((i - 1) * st - 2 * pp + dd * (kk - 1) + 1)
               for o, i, st, pp, dd, kk in zip(out.shape[2:], x.shape[2:], s, p, d, k)]
    bias = _p(g, m, "bias")
    inputs = [x._name, _p(g, m, "weight")] + ([bias] if bias is not None else [])
    return g.node("ConvTranspose", inputs, kernel_shape=list(k), strides=list(s), pads=p + p,
                  dilations=list(d), group=int(m.groups), output_padding=out_pad)


def linear(g, x, ndim, w, b, weight_t=None):
    """x @ w.T + b; weight_t: the name of w.T when the caller has it as an initializer."""
    if ndim == 2:
        return g.node("Gemm", [x, w] + ([b] if b is not None else []), transB=1)
    y = g.node("MatMul", [x, weight_t or g.node("Transpose", [w], perm=[1, 0])])
    return y if b is None else g.node("Add", [y, b])


def _linear_layer(g, m, out, x):
    w = m._parameters["weight"]
    path = g.path[-1][0]
    weight_t = None if x.ndim == 2 else g.const(w.detach().cpu().numpy().T, f"{path}.weight_t")
    return linear(g, x._name, x.ndim, None if weight_t else _p(g, m, "weight"), _p(g, m, "bias"),
                  weight_t)


def _batch_norm_layer(g, m, out, x):
    if m._buffers.get("running_mean") is None:
        g.fail("batch normalisation without running statistics (track_running_stats=False)",
               "in eval mode it normalises with the batch's own statistics")
    return batch_norm(g, x._name, x.shape[1], _p(g, m, "running_mean"),
                      _p(g, m, "running_var"), _p(g, m, "weight"), _p(g, m, "bias"), m.eps,
                      x.dtype)


def _instance_norm_layer(g, m, out, x):
    if m._buffers.get("running_mean") is not None:  # eval with running stats: a batch norm
        return _batch_norm_layer(g, m, out, x)
    ones, zeros = ones_zeros(g, x.shape[1], x.dtype)
    return g.node("InstanceNormalization",
                  [x._name, _p(g, m, "weight") or ones, _p(g, m, "bias") or zeros],
                  epsilon=float(m.eps))


def _channel_const(g, m, key, ndim):
    """A per-channel parameter as [C, 1, ...] so it broadcasts over an [N, C, ...] input."""
    t = m._parameters.get(key)
    if t is None:
        return None
    a = t.detach().cpu().numpy()
    return g.const(a.reshape((a.shape[0],) + (1,) * (ndim - 2)), f"{g.path[-1][0]}.{key}")


def _group_norm_layer(g, m, out, x):
    grouped = g.node("Reshape", [x._name, g.ints([0, m.num_groups, -1])])
    y = moments_norm(g, grouped, [2], m.eps, x.dtype)
    y = g.node("Reshape", [y, g.ints([0] + list(x.shape[1:]))])
    w, b = _channel_const(g, m, "weight", x.ndim), _channel_const(g, m, "bias", x.ndim)
    if w is not None:
        y = g.node("Mul", [y, w])
    return y if b is None else g.node("Add", [y, b])


def _layer_norm_layer(g, m, out, x):
    return layer_norm(g, x._name, list(m.normalized_shape), _p(g, m, "weight"),
                      _p(g, m, "bias"), m.eps, x.dtype)


def _pool_layer(op):
    def emit(g, m, out, x):
        return pool(g, op, x._name, x.shape[2:], out.shape[2:], m.kernel_size, m.stride,
                    m.padding, getattr(m, "dilation", 1), m.ceil_mode,
                    getattr(m, "count_include_pad", True))
    return emit


def _activation_layer(kind, **params):
    def emit(g, m, out, x):
        p = {k: getattr(m, k) for k in params}
        return _inplace(m, x, activation(g, kind, x._name, x.dtype, **p))
    return emit


def _prelu_layer(g, m, out, x):
    slope = _channel_const(g, m, "weight", max(x.ndim, 2)) if x.ndim > 2 else _p(g, m, "weight")
    return g.node("PRelu", [x._name, slope])


def _pass(g, m, out, x, *rest):
    return x._name


def _upsample_layer(g, m, out, x):
    return resize(g, x._name, x.shape, tuple(out.shape), m.size, m.scale_factor, m.mode,
                  m.align_corners, m.recompute_scale_factor)


LAYERS = {
    nn_conv.Conv1d: _conv_layer,
    nn_conv.Conv2d: _conv_layer,
    nn_conv.ConvTranspose2d: _conv_transpose_layer,
    layers.Linear: _linear_layer,
    layers.BatchNorm2d: _batch_norm_layer,
    normalization.BatchNorm1d: _batch_norm_layer,
    normalization.InstanceNorm2d: _instance_norm_layer,
    normalization.GroupNorm: _group_norm_layer,
    normalization.LayerNorm: _layer_norm_layer,
    layers.MaxPool2d: _pool_layer("MaxPool"),
    layers.AvgPool2d: _pool_layer("AveragePool"),
    layers.AdaptiveAvgPool2d: lambda g, m, out, x: adaptive_avg_pool(g, x._name, x.shape[2:],
                                                                     out.shape[2:]),
    layers.Flatten: lambda g, m, out, x: flatten(g, x._name, x.shape, m.start_dim, m.end_dim),
    layers.Dropout: _pass,
    layers.Dropout2d: _pass,
    layers.Identity: _pass,
    layers.ReLU: _activation_layer("relu"),
    layers.LeakyReLU: _activation_layer("leaky_relu", negative_slope=0),
    layers.Sigmoid: _activation_layer("sigmoid"),
    layers.Tanh: _activation_layer("tanh"),
    layers.GELU: _activation_layer("gelu", approximate=0),
    layers.SiLU: _activation_layer("silu"),
    layers.ELU: _activation_layer("elu", alpha=0),
    layers.Softplus: _activation_layer("softplus", beta=0, threshold=0),
    layers.Hardtanh: _activation_layer("hardtanh", min_val=0, max_val=0),
    layers.ReLU6: _activation_layer("relu6"),
    layers.Hardswish: _activation_layer("hardswish"),
    layers.Hardsigmoid: _activation_layer("hardsigmoid"),
    layers.Mish: _activation_layer("mish"),
    layers.PReLU: _prelu_layer,
    layers.Softmax2d: lambda g, m, out, x: g.node("Softmax", [x._name], axis=-3),
    upsample.Upsample: _upsample_layer,
}


def emit_layer(g, m, cls, out, args, kwargs):
    """The layer m (whose emitter is LAYERS[cls]) applied to args: its output Value."""
    if not args or not isinstance(args[0], Value) or any(isinstance(a, Value) for a in
                                                         list(args[1:]) + list(kwargs.values())):
        g.fail(f"{cls.__name__} called with a traced tensor that is not its first argument")
    if not args[0].dtype.is_floating_point:
        g.fail(f"{cls.__name__} on {args[0].dtype.name} tensors")
    return g.value(out, LAYERS[cls](g, m, out, *args, **kwargs))
