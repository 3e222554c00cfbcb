"""Optimisers (PyTorch's update rules and defaults, run by Ember's fused C++ updates)."""
from .. import _C
from . import lr_scheduler  # noqa: F401


class _ParamGroup(dict):
    """optimizer.param_groups[0]: setting "lr" sets the optimiser's learning rate."""

    def __init__(self, opt, params):
        super().__init__(params=params)
        self._opt = opt

    def __getitem__(self, key):
        if key == "lr":
            return self._opt._cpp.lr
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        if key == "lr":
            self._opt._cpp.lr = float(value)
        else:
            super().__setitem__(key, value)


class Optimizer:
    def __init__(self, params, cpp_factory):
        params = list(params)
        if params and isinstance(params[0], dict):
            if len(params) != 1:
                raise ValueError("ember optimisers take one parameter group")
            params = list(params[0]["params"])
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        self._cpp = cpp_factory(params)
        self.param_groups = [_ParamGroup(self, params)]

    @property
    def lr(self):
        return self._cpp.lr

    @lr.setter
    def lr(self, value):
        self._cpp.lr = float(value)

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        self._cpp.step()
        return loss

    def zero_grad(self, set_to_none=True):
        self._cpp.zero_grad()

    def state_dict(self):
        return dict(self._cpp.state_dict())

    def load_state_dict(self, state_dict):
        self._cpp.load_state_dict(state_dict)


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        super().__init__(params, lambda p: _C._SGD(p, lr, momentum, dampening, weight_decay, nesterov))


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, lambda p: _C._Adam(p, lr, betas[0], betas[1], eps, weight_decay, False))


class AdamW(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lambda p: _C._Adam(p, lr, betas[0], betas[1], eps, weight_decay, True))
