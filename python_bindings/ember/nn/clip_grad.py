"""Gradient clipping and parameters as one vector (torch.nn.utils): clip_grad_norm_,
clip_grad_value_, parameters_to_vector, vector_to_parameters. The norm is computed and applied
on the gradients' device without waiting for it (Note [Clipping on the device], nn/clip_grad.h)."""
from .. import _C


def _params(parameters):
    if isinstance(parameters, _C.Tensor):
        return [parameters]
    return list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    r"""Clips the gradients of ``parameters`` in place so that their joint norm is at most
    ``max_norm``: each gradient is multiplied by ``min(max_norm / (total_norm + 1e-6), 1)``.

    Args:
        parameters (Iterable[Tensor] or Tensor): tensors whose ``.grad`` is clipped (those without
            a gradient are skipped).
        max_norm (float): the largest norm allowed.
        norm_type (float): p of the p-norm; ``inf`` for the largest magnitude. Default: 2.0.
        error_if_nonfinite (bool): raise if the total norm is NaN or infinite (this reads the norm
            on the host, the only wait for a GPU). Default: False.
        foreach: accepted for PyTorch compatibility; the clip is always fused per gradient.

    Returns:
        The total norm of the gradients before clipping, a 0-d tensor on their device.
    """
    return _C._clip_grad_norm_(_params(parameters), float(max_norm), float(norm_type),
                               bool(error_if_nonfinite))


def clip_grad_value_(parameters, clip_value, foreach=None):
    r"""Clamps every gradient of ``parameters`` into ``[-clip_value, clip_value]`` in place."""
    _C._clip_grad_value_(_params(parameters), float(clip_value))


def parameters_to_vector(parameters):
    r"""The parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    return _C._parameters_to_vector(_params(parameters))


def vector_to_parameters(vec, parameters):
    r"""Copies consecutive slices of the 1-D tensor ``vec`` into the parameters' data."""
    if not isinstance(vec, _C.Tensor):
        t = type(vec)
        raise TypeError(f"expected Tensor, but got: {t.__module__}.{t.__qualname__}"
                        if t.__module__ != "builtins" else
                        f"expected Tensor, but got: {t.__name__}")
    _C._vector_to_parameters(vec, _params(parameters))
