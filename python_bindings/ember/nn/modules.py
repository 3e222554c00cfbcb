"""Module and Parameter, as in PyTorch: assigning a Parameter or a Module to an attribute
registers it; parameters(), state_dict() and friends walk the tree with dotted names."""
from collections import OrderedDict

from .. import _C
from ..autograd import no_grad


class Parameter(_C.Tensor):
    """A tensor that is a module's parameter: a leaf that requires grad (by default).

    Parameter(t) shares t's memory but is a new leaf. Parameters of the C++ layers are the very
    tensors the C++ layer uses (Parameter._wrap), so gradients and updates are shared."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C._empty((0,), None, None)
        _C.Tensor.__init__(self, data.detach())
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _wrap(cls, t):
        p = cls.__new__(cls)
        _C.Tensor.__init__(p, t)
        return p

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        raise TypeError("ember tensors are not picklable; use ember.save / ember.load")


class Module:
    """Base class of every layer and model; subclass it and define forward()."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # --- registration ---------------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign attributes before Module.__init__() is called")
        params, bufs, mods = self._parameters, self._buffers, self._modules
        if isinstance(value, Parameter):
            self._set_parameter(name, value)
        elif isinstance(value, Module):
            params.pop(name, None)
            bufs.pop(name, None)
            mods[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as parameter '{name}' "
                                "(ember.nn.Parameter or None expected)")
            params[name] = None
        elif name in bufs:
            bufs[name] = value
        else:
            mods.pop(name, None)
            object.__setattr__(self, name, value)

    def _set_parameter(self, name, value):
        self._modules.pop(name, None)
        self._buffers.pop(name, None)
        self.__dict__.pop(name, None)
        self._parameters[name] = value

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        if param is None:
            self._parameters[name] = None
        else:
            self._set_parameter(name, param if isinstance(param, Parameter) else Parameter(param))

    def register_buffer(self, name, tensor, persistent=True):
        self._buffers[name] = tensor

    def add_module(self, name, module):
        self._modules[name] = module

    register_module = add_module

    # --- calling -------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # --- traversal -------------------------------------------------------------------------------
    def named_modules(self, prefix=""):
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_parameters(self, prefix="", recurse=True):
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for name, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield mp + ("." if mp else "") + name, p

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for name, b in m._buffers.items():
                if b is not None:
                    yield mp + ("." if mp else "") + name, b

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # --- state ---------------------------------------------------------------------------------
    def state_dict(self, prefix=""):
        """Parameters and buffers by dotted name, in registration order (PyTorch's keys)."""
        sd = OrderedDict()
        for mp, m in self.named_modules():
            for store in (m._parameters, m._buffers):
                for name, t in store.items():
                    if t is not None:
                        sd[prefix + mp + ("." if mp else "") + name] = t.detach()
        return sd

    def load_state_dict(self, state_dict, strict=True):
        """Copies values in by name (converted to each tensor's dtype). strict: missing or
        unexpected keys raise ember.ValueError listing them (as the C++ Module does). A shape
        mismatch always raises ember.ShapeError naming the key."""
        own = OrderedDict()
        for mp, m in self.named_modules():
            for store in (m._parameters, m._buffers):
                for name, t in store.items():
                    if t is not None:
                        own[mp + ("." if mp else "") + name] = t
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            _C._raise("value", f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        with no_grad():
            for k, t in own.items():
                if k not in state_dict:
                    continue
                v = state_dict[k]
                if not isinstance(v, _C.Tensor):
                    v = _C.from_numpy(v) if hasattr(v, "__array_interface__") else _C.tensor(v)
                if tuple(v.shape) != tuple(t.shape):
                    _C._raise("shape", f"load_state_dict: '{k}' has shape {tuple(v.shape)} in the "
                                       f"state dict but {tuple(t.shape)} in the module")
                t.copy_(v)
        return missing, unexpected

    # --- modes and moves -------------------------------------------------------------------------
    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
            m._on_train(mode)
        return self

    def _on_train(self, mode):
        pass

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            p.grad = None

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def to(self, *args, **kwargs):
        """Moves parameters and buffers in place (the same tensor objects, new data)."""
        with no_grad():
            for t in list(self.parameters()) + list(self.buffers()):
                new = t.to(*args, **kwargs)
                if not new.dtype.is_floating_point or not t.dtype.is_floating_point:
                    new = t.to(device=new.device)  # integer buffers keep their dtype
                if not new._is_same(t):
                    t._set_data(new)
        return self

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(_C.float64)

    def float(self):
        return self.to(_C.float32)

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # --- printing --------------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {sub}")
        head = type(self).__name__ + "(" + self.extra_repr()
        if not lines:
            return head + ")"
        return head + "\n" + "\n".join(lines) + "\n)"


class Sequential(Module):
    """Runs its modules in order; children are named "0", "1", ... (or by an OrderedDict)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return Sequential(*mods[i])
        return mods[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, m):
        self.add_module(str(len(self._modules)), m)
        return self

