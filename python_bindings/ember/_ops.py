"""Indexing, sorting, scans, reordering, factories and maths with PyTorch's signatures, as
functions (ember.sort(x)) and Tensor methods (x.sort()), the named-tuple results PyTorch returns
(values/indices), and the in-place `op_` methods, which autograd follows (an in-place op on a
tensor that needs a gradient rebases its history, as in PyTorch)."""
import builtins
import collections

from . import _C

Tensor = _C.Tensor


class return_types:  # noqa: N801  (as torch.return_types)
    """The named tuples that max/min/sort/topk/kthvalue return: (values, indices)."""
    max = collections.namedtuple("max", ["values", "indices"])
    min = collections.namedtuple("min", ["values", "indices"])
    sort = collections.namedtuple("sort", ["values", "indices"])
    topk = collections.namedtuple("topk", ["values", "indices"])
    kthvalue = collections.namedtuple("kthvalue", ["values", "indices"])


def sort(input, dim=-1, descending=False, stable=False):
    """Sorted values and their positions along dim (always stable; NaN sorts last)."""
    return return_types.sort(*_C._sort(input, dim, descending))


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """The k largest (or smallest) values along dim and their positions, sorted."""
    return return_types.topk(*_C._topk(input, k, dim, largest, sorted))


def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest value along dim (1-based) and its position."""
    return return_types.kthvalue(*_C._kthvalue(input, k, dim, keepdim))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values in ascending order (always sorted), with, when asked, the inverse
    indices and the counts, as torch.unique."""
    values, inverse, counts = _C._unique(input, return_inverse, return_counts, dim)
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


def msort(input):
    return sort(input, 0).values


def where(condition, input=None, other=None):
    """where(cond, x, y): elementwise choice; where(cond): the indices of the true elements."""
    if input is None and other is None:
        return _C.nonzero(condition, as_tuple=True)
    return _C.where(condition, input, other)


def einsum(equation, *operands):
    """Einstein summation: einsum("ij,jk->ik", a, b) (operands also as one list)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _C._einsum(equation, list(operands))


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """The vector p-norm over dim (all elements by default); "fro" is the 2-norm."""
    if isinstance(dim, int):
        dim = (dim,)
    if p in ("fro", None):
        p = 2.0
    x = input if dtype is None else input.to(dtype)
    return _C._vector_norm(x, float(p), dim, keepdim)


def clip(input, min=None, max=None):  # noqa: A002
    return _C.clamp(input, min, max)


def _sizes(sizes):
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        return tuple(sizes[0])
    return tuple(sizes)


def _repeat(self, *sizes):
    return _C._repeat(self, list(_sizes(sizes)))


def _split(self, split_size, dim=0):
    return _C.split(self, split_size, dim)


# --- factories --------------------------------------------------------------------------------

def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _generator(generator):
    if generator is None:
        return None
    cpp = getattr(generator, "_cpp", None)
    if cpp is None:
        raise TypeError(f"generator must be an ember.Generator, got {type(generator).__name__}")
    return cpp


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False,
            low=None, high=None):
    """randint(high, size) or randint(low, high, size): integers uniform in [low, high), drawn
    on the device from the generator's Philox stream (the same numbers on every device)."""
    pos = list(args)
    if size is None and pos and isinstance(pos[-1], (tuple, list)):
        size = pos.pop()
    if high is None:
        high = pos.pop() if pos else None
    if low is None:
        low = pos.pop() if pos else 0
    if high is None or size is None or pos:
        raise TypeError("randint() expects (high, size) or (low, high, size)")
    if isinstance(size, int):
        size = (size,)
    t = _C._randint(int(low), int(high), tuple(size), dtype, device, _generator(generator))
    return _finish(t, requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0, ..., n - 1: the positions that sort n Philox draws."""
    return _finish(_C._randperm(int(n), dtype, device, _generator(generator)), requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    return _finish(_C._linspace(float(start), float(end), int(steps), dtype, device),
                   requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    return _finish(_C._logspace(float(start), float(end), int(steps), float(base), dtype, device),
                   requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    return _finish(_C._eye(int(n), m, dtype, device), requires_grad)


# --- in-place methods -------------------------------------------------------------------------

def _tensors(*values):
    return [v for v in values if isinstance(v, Tensor)]


def _inplace(name, fn, *others):
    """An in-place method: self's values become fn(self); others are the tensors fn reads."""
    def method(self, *args, **kwargs):
        return _C._apply_inplace(self, name, _tensors(*args, *kwargs.values()),
                                 lambda s: fn(s, *args, **kwargs))
    method.__name__ = name
    return method


def _add(s, other, *, alpha=1):
    return s + (other if alpha == 1 else other * alpha)


def _sub(s, other, *, alpha=1):
    return s - (other if alpha == 1 else other * alpha)


def _copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        src = _C.tensor(src)
    if src.device != self.device:
        src = src.to(self.device)
    return _C._apply_inplace(self, "copy_", [src], lambda s: src.to(s.dtype).expand(s.shape))


def _filled(s, value):
    """s's shape, dtype and device, every element `value` (a number or a 0-d tensor)."""
    if isinstance(value, Tensor):
        return value.to(s.dtype).expand(s.shape)
    if isinstance(value, int) and not isinstance(value, builtins.bool):
        return _C._full_int(tuple(s.shape), value, s.dtype, s.device)
    return _C._full(tuple(s.shape), float(value), s.dtype, s.device)


def _direct(self, src):
    """Whether an in-place write of src's values into self can skip autograd: nothing to record
    (grad mode off, or neither requires grad) and src a tensor of self's dtype and device, so
    that the op's own checks are the recorded form's."""
    return (isinstance(src, Tensor) and src.dtype == self.dtype and src.device == self.device
            and not (_C.is_grad_enabled() and (self.requires_grad or src.requires_grad)))


def _scatter_add_(self, dim, index, src):
    if _direct(self, src):
        _C._scatter_direct_(self, dim, index, src, True)
        return self
    return _C._apply_inplace(self, "scatter_add_", _tensors(index, src),
                             lambda s: _C.scatter_add(s, dim, index, src))


def _index_add_(self, dim, index, source, *, alpha=1):
    if alpha == 1 and _direct(self, source):
        _C._index_add_direct_(self, dim, index, source)
        return self
    return _C._apply_inplace(self, "index_add_", _tensors(index, source),
                             lambda s: _C.index_add(s, dim, index, source, alpha=alpha))


def _scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    if reduce not in (None, "add"):
        raise ValueError(f"scatter_: reduce must be None or 'add', got {reduce!r}")
    source = src if src is not None else value
    if _direct(self, source):
        _C._scatter_direct_(self, dim, index, source, reduce == "add")
        return self
    fn = _C.scatter_add if reduce == "add" else _C.scatter
    return _C._apply_inplace(self, "scatter_", _tensors(index, source),
                             lambda s: fn(s, dim, index, source))


def _index_put_(self, indices, values, accumulate=False):
    return _C._index_put_(self, tuple(indices), values, accumulate)


def _index_fill_(self, dim, index, value):
    shape = list(self.shape)
    shape[dim] = index.numel()
    src = value.expand(shape) if isinstance(value, Tensor) else None
    if src is None:
        src = _C._full(tuple(shape), float(value), self.dtype, self.device)
    return _C._apply_inplace(self, "index_fill_", _tensors(index, src),
                             lambda s: _index_copy(s, dim, index, src))


def _index_copy(s, dim, index, src):
    """s with s.select(dim, index[i]) = src.select(dim, i), as index_copy."""
    items = (slice(None),) * (dim % builtins.max(s.ndim, 1)) + (index,)
    return _C.index_put(s, items, src.to(s.dtype), False)


_INPLACE = {
    "fill_": _filled,
    "zero_": lambda s: _filled(s, 0),
    "add_": _add,
    "sub_": _sub,
    "mul_": lambda s, other: s * other,
    "div_": lambda s, other: s / other,
    "pow_": lambda s, e: s ** e,
    "clamp_": lambda s, min=None, max=None: _C.clamp(s, min, max),  # noqa: A002
    "clip_": lambda s, min=None, max=None: _C.clamp(s, min, max),  # noqa: A002
    "neg_": lambda s: -s,
    "abs_": lambda s: _C.abs(s),
    "exp_": lambda s: _C.exp(s),
    "log_": lambda s: _C.log(s),
    "sqrt_": lambda s: _C.sqrt(s),
    "round_": lambda s, decimals=0: _C.round(s, decimals=decimals),
    "relu_": lambda s: _C.relu(s),
    "sigmoid_": lambda s: _C.sigmoid(s),
    "tanh_": lambda s: _C.tanh(s),

    "lerp_": lambda s, end, weight: _C.lerp(s, end, weight),
    "masked_fill_": lambda s, mask, value: _C.masked_fill(s, mask, value),
    "index_copy_": lambda s, dim, index, source: _index_copy(s, dim, index, source),
    "tril_": lambda s, diagonal=0: _C.tril(s, diagonal),
    "triu_": lambda s, diagonal=0: _C.triu(s, diagonal),
}


_cpp_fill = Tensor.fill_  # the C++ fill: the value's bytes repeated, no autograd record


def _fills_directly(self, value):
    """Whether fill_(value) / zero_() can go straight into self's memory: autograd has nothing
    to record (self does not require grad, or grad mode is off) and the value is a number a
    double holds exactly. Otherwise the in-place op runs under autograd (Note [In-place ops])."""
    exact = isinstance(value, (builtins.bool, float)) or (
        isinstance(value, int) and -2**53 <= value <= 2**53)
    if exact and not (self.requires_grad and _C.is_grad_enabled()):
        _cpp_fill(self, float(value))
        return True
    return False


def _direct_fill(recorded):
    def fill_(self, value):
        return self if _fills_directly(self, value) else recorded(self, value)
    fill_.__doc__ = recorded.__doc__
    return fill_


def _direct_zero(recorded):
    def zero_(self):
        return self if _fills_directly(self, 0) else recorded(self)
    zero_.__doc__ = recorded.__doc__
    return zero_


_cpp_max, _cpp_min = Tensor.max, Tensor.min


def _max(self, dim=None, keepdim=False):
    """max(): the largest element; max(dim): (values, indices); max(other): elementwise."""
    if isinstance(dim, Tensor):
        return _C.maximum(self, dim)
    r = _cpp_max(self, dim, keepdim)
    return return_types.max(*r) if isinstance(r, tuple) else r


def _min(self, dim=None, keepdim=False):
    if isinstance(dim, Tensor):
        return _C.minimum(self, dim)
    r = _cpp_min(self, dim, keepdim)
    return return_types.min(*r) if isinstance(r, tuple) else r


# Functions of one tensor (and of two, for the binary ones) that are also methods, with an
# in-place form where PyTorch has one.
_UNARY = ("sign", "floor", "ceil", "trunc", "sin", "cos", "erf", "isnan", "isinf", "isfinite",
          "logical_not")
_UNARY_INPLACE = ("sign", "floor", "ceil", "trunc", "sin", "cos", "erf")
_BINARY = ("fmod", "remainder")


def _install():
    methods = {}
    for name in _UNARY + _BINARY:
        fn = getattr(_C, name)
        methods[name] = (lambda f: lambda self, *args: f(self, *args))(fn)
    for name in _UNARY_INPLACE + _BINARY:
        fn = getattr(_C, name)
        _INPLACE[name + "_"] = (lambda f: lambda s, *args: f(s, *args))(fn)
    methods.update({
        "max": _max,
        "min": _min,
        "gather": lambda self, dim, index: _C.gather(self, dim, index),
        "index_select": lambda self, dim, index: _C.index_select(self, dim, index),
        "take_along_dim": lambda self, indices, dim=None: _C.take_along_dim(self, indices, dim),
        "masked_select": lambda self, mask: _C.masked_select(self, mask),
        "masked_fill": lambda self, mask, value: _C.masked_fill(self, mask, value),
        "scatter": lambda self, dim, index, src=None, value=None: _C.scatter(
            self, dim, index, src if src is not None else value),
        "scatter_add": lambda self, dim, index, src: _C.scatter_add(self, dim, index, src),
        "index_add": lambda self, dim, index, source, *, alpha=1: _C.index_add(
            self, dim, index, source, alpha=alpha),
        "index_put": lambda self, indices, values, accumulate=False: _C.index_put(
            self, tuple(indices), values, accumulate),
        "nonzero": lambda self, *, as_tuple=False: _C.nonzero(self, as_tuple=as_tuple),
        "sort": sort,
        "argsort": lambda self, dim=-1, descending=False, *, stable=False: _C.argsort(
            self, dim, descending, stable=stable),
        "msort": msort,
        "topk": topk,
        "kthvalue": kthvalue,
        "unique": unique,
        "cumsum": lambda self, dim, *, dtype=None: _C.cumsum(self, dim, dtype=dtype),
        "cumprod": lambda self, dim, *, dtype=None: _C.cumprod(self, dim, dtype=dtype),
        "flip": lambda self, *dims: _C.flip(self, list(_sizes(dims))),
        "fliplr": lambda self: _C.flip(self, [1]),
        "flipud": lambda self: _C.flip(self, [0]),
        "roll": lambda self, shifts, dims=None: _C.roll(self, shifts, dims),
        "narrow": lambda self, dim, start, length: _C.narrow(self, dim, start, length),
        "split": _split,
        "chunk": lambda self, chunks, dim=0: _C.chunk(self, chunks, dim),
        "unbind": lambda self, dim=0: _C.unbind(self, dim),
        "movedim": lambda self, source, destination: _C.movedim(self, source, destination),
        "moveaxis": lambda self, source, destination: _C.movedim(self, source, destination),
        "repeat": _repeat,
        "tile": lambda self, *dims: _C.tile(self, list(_sizes(dims))),
        "repeat_interleave": lambda self, repeats, dim=None: _C.repeat_interleave(
            self, repeats, dim),
        "tril": lambda self, diagonal=0: _C.tril(self, diagonal),
        "triu": lambda self, diagonal=0: _C.triu(self, diagonal),
        "expand_as": lambda self, other: self.expand(*other.shape),
        "round": lambda self, *, decimals=0: _C.round(self, decimals=decimals),

        "lerp": lambda self, end, weight: _C.lerp(self, end, weight),
        "any": lambda self, dim=None, keepdim=False: _C.any(self, dim, keepdim),
        "all": lambda self, dim=None, keepdim=False: _C.all(self, dim, keepdim),
        "logsumexp": lambda self, dim, keepdim=False: _C.logsumexp(self, dim, keepdim),
        "norm": norm,
        "outer": lambda self, vec2: _C.outer(self, vec2),
        "addmm": lambda self, mat1, mat2, *, beta=1, alpha=1: _C.addmm(
            self, mat1, mat2, beta=beta, alpha=alpha),
        "baddbmm": lambda self, b1, b2, *, beta=1, alpha=1: _C.baddbmm(
            self, b1, b2, beta=beta, alpha=alpha),
        "clip": clip,
        "copy_": _copy_,
        "scatter_": _scatter_,
        "scatter_add_": _scatter_add_,
        "index_add_": _index_add_,
        "index_put_": _index_put_,
        "index_fill_": _index_fill_,
    })
    for name, fn in _INPLACE.items():
        methods[name] = _inplace(name, fn)
    methods["fill_"] = _direct_fill(methods["fill_"])
    methods["zero_"] = _direct_zero(methods["zero_"])
    for name, fn in methods.items():
        setattr(Tensor, name, fn)


_install()
