"""Optimisers with PyTorch's update rules, defaults, parameter groups and state dicts: SGD, Adam,
AdamW, RMSprop, Adagrad. Each update is one fused kernel per parameter on its device (cpu, cuda,
emu), and a GradScaler step never waits for the device."""
from .optimizer import Optimizer, required  # noqa: F401
from . import lr_scheduler  # noqa: F401


def _flag(v):
    return 1.0 if v else 0.0


def _step_tensor(steps):
    from .. import _C
    return _C.tensor(float(steps))


class SGD(Optimizer):
    """SGD(params, lr=required, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
    maximize=False, foreach=None, differentiable=False)

    Stochastic gradient descent, optionally with (Nesterov) momentum, as torch.optim.SGD:
    ``g += weight_decay * p; buf = momentum * buf + (1 - dampening) * g`` (buf = g at the first
    step); ``p -= lr * (g + momentum * buf if nesterov else buf)``; maximize ascends instead.
    foreach is accepted and ignored (the update is always fused)."""

    _cpp_name = "SGD"

    def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _cpp_options(self, g):
        return {"lr": float(g["lr"]), "momentum": float(g["momentum"]),
                "dampening": float(g["dampening"]), "weight_decay": float(g["weight_decay"]),
                "nesterov": _flag(g["nesterov"]), "maximize": _flag(g["maximize"])}

    def _torch_state(self, steps, buffers):
        if "momentum_buffer" in buffers:
            return {"momentum_buffer": buffers["momentum_buffer"]}
        return {"momentum_buffer": None} if steps > 0 else {}


class _AdamBase(Optimizer):
    def _check_group(self, group):
        super()._check_group(group)
        if group.get("amsgrad"):
            raise ValueError(f"{type(self).__name__}: amsgrad=True is not supported by Ember")
        beta1, beta2 = group["betas"]
        if not 0.0 <= beta1 < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {beta1}")
        if not 0.0 <= beta2 < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {beta2}")

    def _cpp_options(self, g):
        beta1, beta2 = g["betas"]
        return {"lr": float(g["lr"]), "beta1": float(beta1), "beta2": float(beta2),
                "eps": float(g["eps"]), "weight_decay": float(g["weight_decay"]),
                "maximize": _flag(g["maximize"])}

    def _torch_state(self, steps, buffers):
        if steps == 0 and not buffers:
            return {}
        return {"step": _step_tensor(steps), **buffers}


def _check_adam_args(lr, eps, weight_decay):
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(_AdamBase):
    """Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
    foreach=None, maximize=False, capturable=False, differentiable=False, fused=False)

    Adam with bias correction and L2 weight decay added to the gradient, as torch.optim.Adam.
    The update is always one fused kernel per parameter (fused, foreach and capturable are
    accepted); amsgrad is not implemented (ValueError)."""

    _cpp_name = "Adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=False):
        _check_adam_args(lr, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)


class AdamW(_AdamBase):
    """AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
    maximize=False, foreach=None, capturable=False)

    Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the step), as
    torch.optim.AdamW."""

    _cpp_name = "AdamW"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False):
        _check_adam_args(lr, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        foreach=foreach, maximize=maximize, capturable=capturable)
        super().__init__(params, defaults)


class RMSprop(Optimizer):
    """RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
    foreach=None, maximize=False, differentiable=False)

    As torch.optim.RMSprop: ``sq = alpha * sq + (1 - alpha) * g^2``; centered subtracts the
    square of the running mean of g; ``p -= lr * g / (sqrt(sq) + eps)``, through a momentum
    buffer when momentum > 0."""

    _cpp_name = "RMSprop"

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, foreach=None, maximize=False, differentiable=False):
        for name, v in (("learning rate", lr), ("epsilon value", eps), ("momentum value", momentum),
                        ("weight_decay value", weight_decay), ("alpha value", alpha)):
            if not 0.0 <= v:
                raise ValueError(f"Invalid {name}: {v}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _cpp_options(self, g):
        return {"lr": float(g["lr"]), "alpha": float(g["alpha"]), "eps": float(g["eps"]),
                "weight_decay": float(g["weight_decay"]), "momentum": float(g["momentum"]),
                "centered": _flag(g["centered"]), "maximize": _flag(g["maximize"])}

    def _torch_state(self, steps, buffers):
        if steps == 0 and not buffers:
            return {}
        order = ("square_avg", "momentum_buffer", "grad_avg")
        return {"step": steps, **{k: buffers[k] for k in order if k in buffers}}


class Adagrad(Optimizer):
    """Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
    eps=1e-10, foreach=None, *, maximize=False)

    As torch.optim.Adagrad: ``sum += g^2; p -= lr / (1 + (step - 1) * lr_decay) * g /
    (sqrt(sum) + eps)``; the sums start at initial_accumulator_value."""

    _cpp_name = "Adagrad"

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False):
        for name, v in (("learning rate", lr), ("lr_decay value", lr_decay),
                        ("weight_decay value", weight_decay),
                        ("initial_accumulator_value value", initial_accumulator_value),
                        ("epsilon value", eps)):
            if not 0.0 <= v:
                raise ValueError(f"Invalid {name}: {v}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _cpp_options(self, g):
        return {"lr": float(g["lr"]), "lr_decay": float(g["lr_decay"]),
                "weight_decay": float(g["weight_decay"]),
                "initial_accumulator_value": float(g["initial_accumulator_value"]),
                "eps": float(g["eps"]), "maximize": _flag(g["maximize"])}

    def _torch_state(self, steps, buffers):
        return {"step": _step_tensor(steps), **buffers}
