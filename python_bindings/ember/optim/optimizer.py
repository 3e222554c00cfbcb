"""The optimiser base class, PyTorch's torch.optim.Optimizer over Ember's C++ optimisers.

param_groups is a list of plain dicts, as in PyTorch. Before every step the numeric options of
each group are pushed to the C++ groups, so any edit (a scheduler's, or the user's) takes effect
at the next step; the update itself is one fused kernel per parameter (ops/optim.h)."""
from .. import _C


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


class Optimizer:
    """Base class. Ember's optimisers set _cpp_name and say how a group maps onto the C++ options
    (_cpp_options) and how PyTorch shows a parameter's state (_torch_state). A subclass written
    in Python, as for PyTorch, leaves _cpp_name unset, defines step() over self.param_groups and
    keeps what it needs in self.state (a dict per parameter, made on first use)."""

    _cpp_name = None

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._cpp = None
        self._py_state = _StateView({}) if self._cpp_name is None else None
        if isinstance(params, _C.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        self.param_groups = []
        for group in param_groups:
            self.add_param_group(group)

    # --- groups --------------------------------------------------------------------------------

    def add_param_group(self, param_group):
        """Adds a group (a dict with "params" and any options; the others come from defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param group must be a dict, got {_typename(param_group)}")
        params = param_group["params"]
        if isinstance(params, _C.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but "
                            "the ordering of tensors in sets will change between runs. Please use "
                            "a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, _C.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required optimization "
                                 "parameter " + name)
            param_group.setdefault(name, default)
        self._check_group(param_group)
        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        if self._cpp_name is None:
            self.param_groups.append(param_group)
            return
        options = self._cpp_options(param_group)
        if self._cpp is None:
            self._cpp = _C._make_optimizer(self._cpp_name, [(param_group["params"], options)],
                                           self._cpp_options(self._filled_defaults()))
        else:
            self._cpp.add_param_group(param_group["params"], options)
        self.param_groups.append(param_group)

    def _filled_defaults(self):
        # A required lr has no default: the C++ defaults take the first group's.
        d = dict(self.defaults)
        if d.get("lr") is required:
            d["lr"] = 0.0
        return d

    def _check_group(self, group):
        """Options Ember does not implement: a ValueError naming them."""
        if group.get("differentiable"):
            raise ValueError(f"{type(self).__name__}: differentiable=True is not supported by "
                             "Ember (its updates are fused kernels outside the graph)")

    def _cpp_options(self, group):
        raise NotImplementedError

    def _sync(self):
        """Pushes every group's options to the C++ groups; returns the C++ optimiser."""
        if self._cpp is None:
            return self
        for g, group in enumerate(self.param_groups):
            self._cpp.set_group_options(g, self._cpp_options(group))
        return self._cpp

    # --- steps ---------------------------------------------------------------------------------

    def step(self, closure=None):
        """One update of every parameter with a gradient; `closure` re-evaluates the loss."""
        if self._cpp is None:
            raise NotImplementedError(f"{type(self).__name__} must define step()")
        loss = None
        if closure is not None:
            from ..autograd import enable_grad
            with enable_grad():
                loss = closure()
        self._sync().step()
        return loss

    def zero_grad(self, set_to_none=False):
        """Zeroes the gradients in place (PyTorch 1.13's default) or, with set_to_none, drops
        them."""
        if set_to_none:
            for group in self.param_groups:
                for p in group["params"]:
                    p.grad = None
            return
        from ..autograd import no_grad
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is not None:
                        g.zero_()

    @property
    def lr(self):
        return self.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value):
        for group in self.param_groups:
            group["lr"] = value

    # --- state ---------------------------------------------------------------------------------

    def _state_by_index(self):
        """{flat parameter index: {name: value}} in PyTorch's form, from the C++ state."""
        if self._cpp is None:
            params = [p for g in self.param_groups for p in g["params"]]
            return {i: self._py_state[p] for i, p in enumerate(params) if p in self._py_state}
        raw = {}
        for key, t in self._cpp.state_dict():
            if key.startswith("state."):
                _, i, name = key.split(".", 2)
                raw.setdefault(int(i), {})[name] = t
        out = {}
        for i, entries in sorted(raw.items()):
            steps = int(entries.pop("step").item()) if "step" in entries else 0
            s = self._torch_state(steps, entries)
            if s:
                out[i] = s
        return out

    def _torch_state(self, steps, buffers):
        raise NotImplementedError

    @property
    def state(self):
        """{parameter: its state dict} (the live buffers), as PyTorch's optimizer.state."""
        if self._cpp is None:
            return self._py_state
        params = [p for g in self.param_groups for p in g["params"]]
        return _StateView({params[i]: s for i, s in self._state_by_index().items()})

    def state_dict(self):
        """{"state": {index: {...}}, "param_groups": [{options..., "params": [indices]}]}, as
        PyTorch's."""
        self._sync()
        groups, start = [], 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = list(range(start, start + len(group["params"])))
            start += len(group["params"])
            groups.append(packed)
        return {"state": self._state_by_index(), "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Loads what state_dict() gave (or a PyTorch optimiser's, of the same type and shapes)."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the "
                             "size of optimizer's group")
        flat = {}
        start = 0
        for saved, group in zip(groups, self.param_groups):
            for k, old_id in enumerate(saved["params"]):
                flat[old_id] = start + k
            start += len(group["params"])
        if self._cpp is None:
            self._load_python_state(state_dict, flat, groups)
            return
        items = []
        for old_id, entries in state_dict["state"].items():
            i = flat[old_id]
            if "step" not in entries and any(v is not None for v in entries.values()):
                # PyTorch's SGD keeps no step count: a buffer means a step was taken, so the
                # next one must not start the momentum afresh.
                items.append((f"state.{i}.step", _C.tensor(1, dtype=_C.int64)))
            for name, value in entries.items():
                if name == "step":
                    items.append((f"state.{i}.step", _C.tensor(int(float(value)), dtype=_C.int64)))
                elif value is not None:
                    items.append((f"state.{i}.{name}", _as_ember(value)))
        self._cpp.load_state_dict(items)
        for saved, group in zip(groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    group[k] = tuple(v) if isinstance(v, list) and k == "betas" else v
        self._sync()

    def _load_python_state(self, state_dict, flat, groups):
        params = [p for g in self.param_groups for p in g["params"]]
        self._py_state = _StateView({})
        for old_id, entries in state_dict["state"].items():
            self._py_state[params[flat[old_id]]] = dict(entries)
        for saved, group in zip(groups, self.param_groups):
            group.update({k: v for k, v in saved.items() if k != "params"})

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"


class _StateView(dict):
    """A dict keyed by parameters: tensors compare elementwise, so lookups go by identity. A
    missing parameter gets an empty dict, as PyTorch's defaultdict(dict)."""

    def __init__(self, by_param):
        super().__init__((id(p), s) for p, s in by_param.items())
        self._params = {id(p): p for p in by_param}

    def __getitem__(self, p):
        if not super().__contains__(id(p)):
            self[p] = {}
        return super().__getitem__(id(p))

    def __setitem__(self, p, value):
        self._params[id(p)] = p
        super().__setitem__(id(p), value)

    def __contains__(self, p):
        return super().__contains__(id(p))

    def get(self, p, default=None):
        return super().get(id(p), default)

    def keys(self):
        return [self._params[k] for k in super().keys()]

    def __iter__(self):
        return iter(self.keys())

    def items(self):
        return [(self._params[k], v) for k, v in super().items()]


def _as_ember(value):
    if isinstance(value, _C.Tensor):
        return value
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        return _C.tensor(value.detach().cpu().numpy())
    return _C.tensor(value)
