"""The tensor operations a custom forward may use under ember.onnx.export: Value's operators and
methods, and the functions of ember and ember.nn.functional (FUNCTIONS). Each handler gets the
real result (computed by Ember on the real tensors) and the original arguments, writes the ONNX
nodes and returns the result's Value."""
import operator

import numpy as np

from .. import _C
from . import _emit
from ._graph import Value, unwrap


def _bind(g, name, spec, args, kwargs):
    """PyTorch-style argument binding: spec is [(parameter, default)], with no default marked
    by the class _Required."""
    if len(args) > len(spec):
        g.fail(f"{name} with {len(args)} positional arguments")
    bound = {}
    for (p, default), a in zip(spec, list(args) + [_Required] * (len(spec) - len(args))):
        bound[p] = kwargs.pop(p, default) if a is _Required else a
        if bound[p] is _Required:
            g.fail(f"{name} without its argument '{p}'")
    for k in kwargs:
        g.fail(f"{name}({k}=...)")
    return bound


class _Required:
    pass


R = _Required
INPUT = [("input", R)]


def _handler(spec):
    """A handler whose arguments bind to spec and whose emitter gets them as keywords."""
    def wrap(emit):
        def handler(g, out, name, *args, **kwargs):
            return emit(g, out, **_bind(g, name, spec, args, dict(kwargs)))
        return handler
    return wrap


def _input(g, x, name):
    if not isinstance(x, Value):
        g.fail(f"{name} on a tensor that is not traced, with traced arguments")
    return x


# --- elementwise -------------------------------------------------------------------------------
def _binary(op):
    @_handler([("input", R), ("other", R), ("alpha", 1), ("rounding_mode", None)])
    def emit(g, out, input, other, alpha, rounding_mode):
        if alpha != 1 or rounding_mode is not None:
            g.fail(f"{op}(alpha={alpha}, rounding_mode={rounding_mode})")
        if not out.dtype.is_floating_point:
            g.fail(f"{op} giving {out.dtype.name} values")
        return g.value(out, g.node(op, [g.operand(input, out.dtype), g.operand(other, out.dtype)]))
    return emit


def _activation(kind, spec=()):
    @_handler(INPUT + list(spec) + [("inplace", False)])
    def emit(g, out, input, inplace, **params):
        x = _input(g, input, kind)
        name = _emit.activation(g, kind, x._name, x.dtype, **params)
        if inplace:
            x._name = name
        return g.value(out, name)
    return emit


@_handler(INPUT + [("min", None), ("max", None)])
def _clamp(g, out, input, min, max):
    if not all(v is None or isinstance(v, (int, float)) for v in (min, max)):
        g.fail("clamp with tensor bounds")
    x = _input(g, input, "clamp")
    return g.value(out, _emit.activation(g, "clamp", x._name, x.dtype, min_val=min, max_val=max))


@_handler(INPUT + [("p", 0.5), ("training", True), ("inplace", False)])
def _dropout(g, out, input, p, training, inplace):
    if training and p > 0:
        g.fail("dropout(training=True)",
               "its output is random; pass training=self.training (export runs in eval mode)")
    return g.value(out, _input(g, input, "dropout")._name)


def _softmax(op):
    @_handler(INPUT + [("dim", None), ("_stacklevel", 3), ("dtype", None)])
    def emit(g, out, input, dim, _stacklevel, dtype):
        if dim is None or dtype is not None:
            g.fail(f"{op} without dim or with dtype")
        return g.value(out, g.node(op, [_input(g, input, op)._name], axis=int(dim)))
    return emit


# --- shapes ------------------------------------------------------------------------------------
def _sizes(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return list(shape[0])
    return list(shape)


def _reshape(g, out, name, input, *shape, **kwargs):
    x = _input(g, input, name)
    shape = _sizes(shape or [kwargs.pop("shape", None) or kwargs.pop("size", ())])
    if kwargs or not all(isinstance(d, int) for d in shape):
        g.fail(f"{name} with a shape that is not a list of ints")
    return g.value(out, _emit.reshape(g, x._name, x.shape, tuple(out.shape), shape))


def _reshape_as(g, out, name, input, other):
    return g.value(out, _emit.reshape(g, _input(g, input, name)._name, input.shape,
                                      tuple(out.shape)))


@_handler(INPUT + [("start_dim", 0), ("end_dim", -1)])
def _flatten(g, out, input, start_dim, end_dim):
    x = _input(g, input, "flatten")
    return g.value(out, _emit.flatten(g, x._name, x.shape, start_dim, end_dim))


def _permute(g, out, name, input, *dims, **kwargs):
    x = _input(g, input, name)
    dims = _sizes(dims or [kwargs.pop("dims", ())])
    return g.value(out, g.node("Transpose", [x._name], perm=[d % x.ndim for d in dims]))


@_handler(INPUT + [("dim0", R), ("dim1", R)])
def _transpose(g, out, input, dim0, dim1):
    x = _input(g, input, "transpose")
    perm = list(range(x.ndim))
    a, b = dim0 % x.ndim, dim1 % x.ndim
    perm[a], perm[b] = perm[b], perm[a]
    return g.value(out, g.node("Transpose", [x._name], perm=perm))


@_handler(INPUT)
def _t(g, out, input):
    x = _input(g, input, "t")
    return g.value(out, x._name if x.ndim < 2 else g.node("Transpose", [x._name], perm=[1, 0]))


@_handler(INPUT + [("dim", R)])
def _unsqueeze(g, out, input, dim):
    x = _input(g, input, "unsqueeze")
    return g.value(out, g.node("Unsqueeze", [x._name, g.ints([dim % (x.ndim + 1)], "axes")]))


@_handler(INPUT + [("dim", None)])
def _squeeze(g, out, input, dim):
    x = _input(g, input, "squeeze")
    dims = range(x.ndim) if dim is None else [d % x.ndim for d in np.atleast_1d(dim)]
    axes = [d for d in dims if x.shape[d] == 1]
    if not axes:
        return g.value(out, x._name)
    return g.value(out, g.node("Squeeze", [x._name, g.ints(axes, "axes")]))


@_handler(INPUT + [("memory_format", None)])
def _same(g, out, input, memory_format):
    return g.value(out, _input(g, input, "contiguous")._name)


def _cast_to(dtype):
    @_handler(INPUT)
    def emit(g, out, input):
        x = _input(g, input, dtype.name)
        return g.value(out, g.cast(x._name, x.dtype, dtype))
    return emit


def _concat(stack):
    @_handler([("tensors", R), ("dim", 0)])
    def emit(g, out, tensors, dim):
        names = [g.operand(t, out.dtype) for t in tensors]
        axis = dim % out.ndim
        if stack:
            names = [g.node("Unsqueeze", [n, g.ints([axis], "axes")]) for n in names]
        return g.value(out, g.node("Concat", names, axis=axis))
    return emit


# --- reductions --------------------------------------------------------------------------------
def _reduce(op):
    @_handler(INPUT + [("dim", None), ("keepdim", False), ("dtype", None)])
    def emit(g, out, input, dim, keepdim, dtype):
        x = _input(g, input, op)
        if dtype is not None:
            g.fail(f"{op}(dtype=...)")
        axes = (list(range(x.ndim)) if dim is None or dim == ()
                else [d % x.ndim for d in np.atleast_1d(dim).tolist()])
        if op == "ReduceSum":  # axes are an input from opset 13, an attribute of the others
            return g.value(out, g.node(op, [x._name, g.ints(axes, "axes")],
                                       keepdims=int(bool(keepdim))))
        return g.value(out, g.node(op, [x._name], axes=axes, keepdims=int(bool(keepdim))))
    return emit


# --- the functional layers -----------------------------------------------------------------------
@_handler(INPUT + [("weight", R), ("bias", None)])
def _linear(g, out, input, weight, bias):
    x = _input(g, input, "linear")
    b = None if bias is None else g.operand(bias, out.dtype)
    return g.value(out, _emit.linear(g, x._name, x.ndim, g.operand(weight, out.dtype), b))


def _conv(dims):
    @_handler(INPUT + [("weight", R), ("bias", None), ("stride", 1), ("padding", 0),
                       ("dilation", 1), ("groups", 1)])
    def emit(g, out, input, weight, bias, stride, padding, dilation, groups):
        x = _input(g, input, f"conv{dims}d")
        b = None if bias is None else g.operand(bias, out.dtype)
        return g.value(out, _emit.conv(g, x._name, g.operand(weight, out.dtype), b,
                                       tuple(weight.shape[2:]), stride, padding, dilation,
                                       groups, dims))
    return emit


@_handler(INPUT + [("kernel_size", R), ("stride", None), ("padding", 0), ("dilation", 1),
                   ("ceil_mode", False), ("return_indices", False)])
def _max_pool2d(g, out, input, kernel_size, stride, padding, dilation, ceil_mode,
                return_indices):
    x = _input(g, input, "max_pool2d")
    if return_indices:
        g.fail("max_pool2d(return_indices=True)")
    return g.value(out, _emit.pool(g, "MaxPool", x._name, x.shape[2:], out.shape[2:],
                                   kernel_size, stride, padding, dilation, ceil_mode))


@_handler(INPUT + [("kernel_size", R), ("stride", None), ("padding", 0), ("ceil_mode", False),
                   ("count_include_pad", True), ("divisor_override", None)])
def _avg_pool2d(g, out, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
    x = _input(g, input, "avg_pool2d")
    if divisor_override is not None:
        g.fail("avg_pool2d(divisor_override=...)")
    return g.value(out, _emit.pool(g, "AveragePool", x._name, x.shape[2:], out.shape[2:],
                                   kernel_size, stride, padding, 1, ceil_mode,
                                   count_include_pad))


@_handler(INPUT + [("output_size", R)])
def _adaptive_avg_pool2d(g, out, input, output_size):
    x = _input(g, input, "adaptive_avg_pool2d")
    return g.value(out, _emit.adaptive_avg_pool(g, x._name, x.shape[2:], out.shape[2:]))


@_handler(INPUT + [("running_mean", R), ("running_var", R), ("weight", None), ("bias", None),
                   ("training", False), ("momentum", 0.1), ("eps", 1e-5)])
def _batch_norm(g, out, input, running_mean, running_var, weight, bias, training, momentum,
                eps):
    x = _input(g, input, "batch_norm")
    if training or running_mean is None:
        g.fail("batch_norm(training=True)", "it normalises with the batch's own statistics")
    op = [None if v is None else g.operand(v, x.dtype)
          for v in (running_mean, running_var, weight, bias)]
    return g.value(out, _emit.batch_norm(g, x._name, x.shape[1], *op, eps, x.dtype))


@_handler(INPUT + [("normalized_shape", R), ("weight", None), ("bias", None), ("eps", 1e-5)])
def _layer_norm(g, out, input, normalized_shape, weight, bias, eps):
    x = _input(g, input, "layer_norm")
    w, b = (None if v is None else g.operand(v, x.dtype) for v in (weight, bias))
    return g.value(out, _emit.layer_norm(g, x._name, list(_emit.ntuple(normalized_shape, 1)),
                                         w, b, eps, x.dtype))


@_handler(INPUT + [("size", None), ("scale_factor", None), ("mode", "nearest"),
                   ("align_corners", None), ("recompute_scale_factor", None),
                   ("antialias", False)])
def _interpolate(g, out, input, size, scale_factor, mode, align_corners, recompute_scale_factor,
                 antialias):
    x = _input(g, input, "interpolate")
    return g.value(out, _emit.resize(g, x._name, x.shape, tuple(out.shape), size, scale_factor,
                                     mode, align_corners, recompute_scale_factor))


@_handler(INPUT + [("pad", R), ("mode", "constant"), ("value", None)])
def _pad(g, out, input, pad, mode, value):
    x = _input(g, input, "pad")
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}
    if mode not in modes:
        g.fail(f"pad(mode='{mode}')")
    begin, end = [0] * x.ndim, [0] * x.ndim
    for i in range(len(pad) // 2):  # PyTorch's pad lists the last dim first
        begin[x.ndim - 1 - i], end[x.ndim - 1 - i] = pad[2 * i], pad[2 * i + 1]
    inputs = [x._name, g.ints(begin + end, "pads")]
    if mode == "constant":
        inputs.append(g.scalar(value or 0.0, x.dtype))
    return g.value(out, g.node("Pad", inputs, mode=modes[mode]))


def _plain(op):
    @_handler([("input", R), ("other", R)])
    def emit(g, out, input, other):
        return g.value(out, g.node(op, [g.operand(input, out.dtype),
                                        g.operand(other, out.dtype)]))
    return emit


FUNCTIONS = {
    "add": _binary("Add"), "sub": _binary("Sub"), "mul": _binary("Mul"), "div": _binary("Div"),
    "pow": _plain("Pow"), "matmul": _plain("MatMul"), "mm": _plain("MatMul"),
    "maximum": _plain("Max"), "minimum": _plain("Min"),
    "leaky_relu": _activation("leaky_relu", [("negative_slope", 0.01)]),
    "elu": _activation("elu", [("alpha", 1.0)]),
    "hardtanh": _activation("hardtanh", [("min_val", -1.0), ("max_val", 1.0)]),
    "gelu": _handler(INPUT + [("approximate", "none")])(
        lambda g, out, input, approximate: g.value(out, _emit.activation(
            g, "gelu", _input(g, input, "gelu")._name, input.dtype, approximate=approximate))),
    "softplus": _handler(INPUT + [("beta", 1.0), ("threshold", 20.0)])(
        lambda g, out, input, beta, threshold: g.value(out, _emit.activation(
            g, "softplus", _input(g, input, "softplus")._name, input.dtype, beta=beta,
            threshold=threshold))),
    "clamp": _clamp, "clip": _clamp, "dropout": _dropout,
    "softmax": _softmax("Softmax"), "log_softmax": _softmax("LogSoftmax"),
    "flatten": _flatten, "transpose": _transpose, "t": _t, "unsqueeze": _unsqueeze,
    "squeeze": _squeeze, "contiguous": _same, "detach": _same, "clone": _same,
    "float": _cast_to(_C.float32), "double": _cast_to(_C.float64),
    "cat": _concat(False), "stack": _concat(True),
    "mean": _reduce("ReduceMean"), "sum": _reduce("ReduceSum"), "amax": _reduce("ReduceMax"),
    "amin": _reduce("ReduceMin"),
    "linear": _linear, "conv1d": _conv(1), "conv2d": _conv(2), "max_pool2d": _max_pool2d,
    "avg_pool2d": _avg_pool2d, "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "batch_norm": _batch_norm, "layer_norm": _layer_norm, "interpolate": _interpolate,
    "pad": _pad,
}
for _kind in ("relu", "sigmoid", "tanh", "erf", "exp", "log", "sqrt", "abs", "neg", "reciprocal",
              "silu", "mish", "hardswish", "hardsigmoid", "relu6"):
    FUNCTIONS[_kind] = _activation(_kind)
# Handlers that take the operation's name (their arguments vary in form: view(2, 3), view((2, 3)))
NAMED = {"reshape": _reshape, "view": _reshape, "permute": _permute,
         "view_as": _reshape_as, "reshape_as": _reshape_as}


def handle(g, name, out, args, kwargs):
    """The Value of `name`(*args, **kwargs) whose real result is `out`."""
    if name in NAMED:
        return NAMED[name](g, out, name, *args, **kwargs)
    return FUNCTIONS[name](g, out, name, *args, **kwargs)


def handles(name):
    return name in FUNCTIONS or name in NAMED


# --- Value's methods and operators ---------------------------------------------------------------
def _method(name):
    def method(self, *args, **kwargs):
        out = getattr(self._t, name)(*unwrap(args), **unwrap(kwargs))
        return handle(self._g, name, out, (self,) + args, kwargs)
    method.__name__ = name
    return method


def _operator(fn, name, reflected):
    def op(self, other):
        if reflected:
            return handle(self._g, name, fn(unwrap(other), self._t), (other, self), {})
        return handle(self._g, name, fn(self._t, unwrap(other)), (self, other), {})
    return op


for _name in sorted(set(FUNCTIONS) | set(NAMED)):
    if hasattr(_C.Tensor, _name):
        setattr(Value, _name, _method(_name))
for _dunder, _name in {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div",
                       "pow": "pow", "matmul": "matmul"}.items():
    _fn = getattr(operator, _dunder)
    setattr(Value, f"__{_dunder}__", _operator(_fn, _name, False))
    setattr(Value, f"__r{_dunder}__", _operator(_fn, _name, True))
Value.__neg__ = _method("neg")
Value.__pos__ = lambda self: self
