"""Autograd: backward, grad, grad-mode switches (context managers and decorators), gradcheck,
and custom differentiable functions written in Python (ember.autograd.Function)."""
import functools

from . import _C


class _GradMode:
    _enabled = None

    def __new__(cls, fn=None):
        self = super().__new__(cls)
        if callable(fn):  # used as a bare decorator: @ember.no_grad
            return self(fn)
        return self

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Disables graph recording: `with ember.no_grad():` or `@ember.no_grad()`."""
    _enabled = False


class enable_grad(_GradMode):
    """Enables graph recording inside a no_grad region."""
    _enabled = True


class set_grad_enabled(_GradMode):
    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode):
        self._enabled = bool(mode)
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self._enabled)  # takes effect at once, as torch.set_grad_enabled

    def __enter__(self):
        return self

    def __call__(self, fn):
        _C.set_grad_enabled(self._prev)
        mode = self._enabled

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


def _as_tuple(x):
    if isinstance(x, _C.Tensor):
        return (x,)
    return tuple(x)


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Accumulates the gradients of `tensors` into the leaves' .grad."""
    tensors = _as_tuple(tensors)
    if grad_tensors is not None:
        grad_tensors = _as_tuple(grad_tensors) if not isinstance(grad_tensors, _C.Tensor) else (grad_tensors,)
    _C._backward(tensors, grad_tensors, retain_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=False, allow_unused=False):
    """Gradients of `outputs` w.r.t. `inputs`, returned as a tuple (not accumulated)."""
    return _C._grad(_as_tuple(outputs), _as_tuple(inputs), grad_outputs, retain_graph, allow_unused)


class GradcheckError(RuntimeError):
    pass


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compares autograd's gradients of fn(*inputs) with central finite differences.

    inputs: float64 tensors that require grad. Returns True, or raises GradcheckError (returns
    False with raise_exception=False) describing the first mismatch."""
    inputs = _as_tuple(inputs)

    def call(*xs):
        out = fn(*xs)
        if isinstance(out, (tuple, list)):
            out = out[0]
        return out

    ok, why = _C._gradcheck(call, list(inputs), eps, atol, rtol)
    if not ok and raise_exception:
        raise GradcheckError("gradcheck failed: " + why)
    return ok


class FunctionCtx:
    """The `ctx` a custom Function's forward and backward share."""

    def __init__(self):
        self._to_save = ()
        self.saved_tensors = ()
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        self._to_save = tensors


class Function:
    """A differentiable operation written in Python, as torch.autograd.Function:

        class Cube(ember.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * 3 * x * x

        y = Cube.apply(x)

    forward runs without recording a graph and returns one tensor; backward returns one
    gradient (or None) per tensor argument of forward. Saved tensors are stored by the graph
    node (detached, with their versions checked), not by ctx, so no reference cycle forms.
    """

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args):
        ctx = FunctionCtx()
        tensor_args = [a for a in args if isinstance(a, _C.Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        with no_grad():
            out = cls.forward(ctx, *args)
        if not isinstance(out, _C.Tensor):
            raise TypeError(f"{cls.__name__}.forward must return one tensor, got {type(out).__name__}")
        saved, ctx._to_save = list(ctx._to_save), ()
        positions = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        n_args, n_tensors = len(args), len(tensor_args)

        def backward_fn(grad_out, saved_tensors):
            ctx.saved_tensors = tuple(saved_tensors)
            try:
                grads = cls.backward(ctx, grad_out)
            finally:
                ctx.saved_tensors = ()
            if not isinstance(grads, (tuple, list)):
                grads = (grads,)
            if len(grads) == n_args and n_args != n_tensors:
                grads = [grads[i] for i in positions]  # drop the non-tensor arguments' Nones
            return tuple(grads)

        return _C._record_function(cls.__name__ + "Backward", out, tensor_args, saved, backward_fn)
