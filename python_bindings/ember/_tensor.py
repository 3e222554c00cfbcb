"""Tensor methods written in Python on top of the C++ ones."""
import builtins

from . import _C
from ._factories import new_empty, new_full, new_ones, new_zeros
from ._tensor_str import tensor_repr

Tensor = _C.Tensor


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    for i in builtins.range(len(self)):
        yield self[i]


def _array(self, dtype=None):
    a = self.detach().cpu().numpy()
    return a if dtype is None else a.astype(dtype)


def _format(self, spec):
    if self.ndim == 0:
        return format(self.item(), spec)
    return object.__format__(repr(self), spec)


def _data_get(self):
    return self.detach()


def _data_set(self, value):
    self._set_data(value)


def _any(self):
    return (self != 0).sum() > 0


def _all(self):
    return (self != 0).sum() == self.numel()


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return _C.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)


def _type_as(self, other):
    return self.to(other.dtype)


_methods = {
    "__repr__": tensor_repr,
    "__str__": tensor_repr,
    "__iter__": _iter,
    "__array__": _array,
    "__format__": _format,
    "T": property(lambda self: self.permute(*reversed(builtins.range(self.ndim)))),
    "mT": property(lambda self: self.transpose(-2, -1)),
    "data": property(_data_get, _data_set),
    "add": lambda self, other: self + other,
    "sub": lambda self, other: self - other,
    "mul": lambda self, other: self * other,
    "div": lambda self, other: self / other,
    "pow": lambda self, exponent: self ** exponent,
    "matmul": lambda self, other: _C.matmul(self, other),
    "maximum": lambda self, other: _C.maximum(self, other),
    "minimum": lambda self, other: _C.minimum(self, other),
    "eq": lambda self, other: self == other,
    "ne": lambda self, other: self != other,
    "lt": lambda self, other: self < other,
    "le": lambda self, other: self <= other,
    "gt": lambda self, other: self > other,
    "ge": lambda self, other: self >= other,
    "any": _any,
    "all": _all,
    "new_tensor": _new_tensor,
    "new_zeros": new_zeros,
    "new_ones": new_ones,
    "new_empty": new_empty,
    "new_full": new_full,
    "type_as": _type_as,
    "view_as": lambda self, other: self.view(other.shape),
    "reshape_as": lambda self, other: self.reshape(other.shape),
    "__array_priority__": 1000,
}
for _name, _fn in _methods.items():
    setattr(Tensor, _name, _fn)
