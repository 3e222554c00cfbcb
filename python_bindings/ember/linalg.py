"""ember.linalg: the vector norm (torch.linalg.vector_norm)."""
from . import _C


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The ord-norm of x over dim (all elements by default): 2, 1, inf, -inf, 0 or any p."""
    if isinstance(dim, int):
        dim = (dim,)
    if dtype is not None:
        x = x.to(dtype)
    return _C._vector_norm(x, float(ord), dim, keepdim)
