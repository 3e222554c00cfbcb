"""Tensor factories with PyTorch's signatures: sizes as varargs or one sequence, keyword
dtype/device/requires_grad."""
import builtins

from . import _C


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_C._full(_size(size), 0.0, dtype, device), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_C._full(_size(size), 1.0, dtype, device), requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_C._empty(_size(size), dtype, device), requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    if isinstance(size, int):
        size = (size,)
    if dtype is None:
        dtype = (_C.bool if isinstance(fill_value, builtins.bool) else
                 _C.int64 if isinstance(fill_value, int) else _C.float32)
    if isinstance(fill_value, int) and not isinstance(fill_value, builtins.bool):
        return _finish(_C._full_int(tuple(size), fill_value, dtype, device), requires_grad)
    return _finish(_C._full(tuple(size), float(fill_value), dtype, device), requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = builtins.all(isinstance(v, int) for v in (start, end, step))
        dtype = _C.int64 if ints else _C.float32
    return _finish(_C._arange(float(start), float(end), float(step), dtype, device), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_C._rand(_size(size), dtype, device), requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_C._randn(_size(size), dtype, device), requires_grad)


def _check_tensor(t, fn):
    if not isinstance(t, _C.Tensor):
        from ._argcheck import arg_type_error
        raise arg_type_error(fn, "Tensor", t)


def _like(fn, t, dtype, device, requires_grad, *args):
    _check_tensor(t, fn.__name__ + "_like")
    return fn(t.shape, *args, dtype=dtype or t.dtype, device=device or t.device,
              requires_grad=requires_grad)


# The *_like factories: input's shape, dtype and device unless given. layout and memory_format
# are accepted for PyTorch's signatures (Ember's tensors are strided and contiguous).
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(zeros, input, dtype, device, requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    return _like(ones, input, dtype, device, requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(empty, input, dtype, device, requires_grad)


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    return _like(rand, input, dtype, device, requires_grad)


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(randn, input, dtype, device, requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    _check_tensor(input, "full_like")
    if not isinstance(fill_value, (builtins.bool, int, float)) and not (
            isinstance(fill_value, _C.Tensor) and fill_value.numel() == 1):
        from ._argcheck import arg_type_error
        raise arg_type_error("full_like", "Number", fill_value)
    if isinstance(fill_value, _C.Tensor):
        fill_value = fill_value.item()
    dtype = dtype or input.dtype
    if not dtype.is_floating_point and dtype != _C.bool:
        fill_value = int(fill_value)  # PyTorch truncates a float fill of an integer tensor
    return full(input.shape, fill_value, dtype=dtype, device=device or input.device,
                requires_grad=requires_grad)


# Tensor.new_*: a new tensor with this tensor's dtype and device unless given (size as varargs
# or one sequence).
def _new(fn, self, size, dtype, device, requires_grad, *args):
    return fn(_size(size), *args, dtype=dtype or self.dtype, device=device or self.device,
              requires_grad=requires_grad)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
              pin_memory=False):
    return _new(zeros, self, size, dtype, device, requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    return _new(ones, self, size, dtype, device, requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
              pin_memory=False):
    return _new(empty, self, size, dtype, device, requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False):
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like tensor(), but shares memory with a NumPy array or tensor when no conversion is needed."""
    if isinstance(data, _C.Tensor):
        return data.to(dtype=dtype or data.dtype, device=device or data.device)
    if type(data).__module__ == "numpy" and type(data).__name__ == "ndarray":
        t = _C.from_numpy(data)
        return t.to(dtype=dtype or t.dtype, device=device or t.device)
    return _C.tensor(data, dtype=dtype, device=device)
