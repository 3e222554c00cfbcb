"""Mixed-precision training with PyTorch's names (torch.amp): autocast and GradScaler.

    scaler = ember.amp.GradScaler()
    for x, y in loader:
        opt.zero_grad()
        with ember.autocast("cuda", dtype=ember.float16):   # "cpu": bfloat16 by default
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)      # skipped when a gradient is inf or NaN
        scaler.update()       # backs the scale off after an inf, grows it after 2000 clean steps

The scale, its growth tracker and the found-inf flags live on the device, and the optimiser's
fused update reads them there, so a step never waits for the GPU. Unlike PyTorch's, the scaler
works on every device (cpu and emu too) instead of disabling itself without CUDA.
"""
import functools
from collections import abc

from . import _C

__all__ = ["GradScaler", "autocast", "is_autocast_enabled", "get_autocast_dtype"]

is_autocast_enabled = _C.is_autocast_enabled
get_autocast_dtype = _C.get_autocast_dtype


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=True), as a context
    manager or a decorator. Inside, conv2d, linear and matmul run in `dtype` (float16 on "cuda",
    which covers the cuda and emu devices; bfloat16 on "cpu"), softmax, log_softmax, the losses,
    exp, log, pow, softplus and sum in float32, cat and stack in the widest input dtype; every
    other op in its inputs' dtypes (docs/amp.md has the table). Wrap the forward pass and the
    loss, not the backward."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=True):
        self._args = (str(device_type), dtype, bool(enabled), bool(cache_enabled))
        self._region = _C._AutocastRegion(*self._args)
        self.device = str(device_type)
        self.fast_dtype = dtype if dtype is not None else _C.get_autocast_dtype(self.device)

    def __enter__(self):
        self._region.enter()
        return self

    def __exit__(self, *exc):
        self._region.exit()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(*self._args):
                return fn(*args, **kwargs)
        return wrapper


def _cpp_optimizer(optimizer):
    # An ember.optim optimiser pushes its param_groups' options to C++ first (_sync).
    sync = getattr(optimizer, "_sync", None)
    return sync() if sync is not None else getattr(optimizer, "_cpp", optimizer)


class GradScaler:
    """torch.amp.GradScaler: init_scale 2**16, growth_factor 2, backoff_factor 0.5,
    growth_interval 2000. `device` is accepted for PyTorch's signature; the scale is made on the
    device of the first tensor scale() sees."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        self._cpp = _C._GradScaler(float(init_scale), float(growth_factor), float(backoff_factor),
                                   int(growth_interval), bool(enabled))

    def scale(self, outputs):
        """outputs * scale; lists and tuples of tensors are scaled element by element."""
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, abc.Iterable) and not hasattr(outputs, "shape"):
            return map(self.scale, outputs)
        if not hasattr(outputs, "shape"):
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return self._cpp.scale(outputs)

    def unscale_(self, optimizer):
        self._cpp.unscale_(_cpp_optimizer(optimizer))

    def step(self, optimizer, *args, **kwargs):
        if self._cpp.is_enabled() and "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        if not self._cpp.is_enabled():
            return optimizer.step(*args, **kwargs)
        self._cpp.step(_cpp_optimizer(optimizer))
        return None

    def update(self, new_scale=None):
        if new_scale is None:
            self._cpp.update()
        else:
            self._cpp.update(new_scale)  # a float, or a 1-element float32 tensor

    def get_scale(self):
        return self._cpp.get_scale()

    def get_growth_factor(self):
        return self._cpp.growth_factor

    def set_growth_factor(self, new_factor):
        self._cpp.growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self._cpp.backoff_factor

    def set_backoff_factor(self, new_factor):
        self._cpp.backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self._cpp.growth_interval

    def set_growth_interval(self, new_interval):
        self._cpp.growth_interval = int(new_interval)

    def is_enabled(self):
        return self._cpp.is_enabled()

    def state_dict(self):
        """PyTorch's five entries, as Python numbers; {} when disabled."""
        out = {}
        for key, t in self._cpp.state_dict():
            v = t.item()
            out[key] = int(v) if key in ("growth_interval", "_growth_tracker") else float(v)
        return out

    def load_state_dict(self, state_dict):
        self._cpp.load_state_dict({k: float(v) for k, v in dict(state_dict).items()})
