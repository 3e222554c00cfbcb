"""Embedding (torch.nn.Embedding); its function form is nn.functional.embedding."""
from .. import _C
from .layers import CppModule


class Embedding(CppModule):
    """A lookup table of num_embeddings learnable rows of embedding_dim values (N(0, 1) initial
    values; the padding_idx row starts at zero and gets no gradient)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None):
        if sparse:
            raise ValueError("Embedding: sparse gradients are not supported by Ember; use "
                             "sparse=False")
        super().__init__(_C._Embedding(num_embeddings, embedding_dim, padding_idx, max_norm,
                                       float(norm_type), scale_grad_by_freq))
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        for name, value in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim),
                            ("padding_idx", padding_idx), ("max_norm", max_norm),
                            ("norm_type", norm_type), ("scale_grad_by_freq", scale_grad_by_freq),
                            ("sparse", False)):
            object.__setattr__(self, name, value)
        if _weight is not None:
            self.weight = _weight

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        rows, dim = embeddings.shape
        m = cls(rows, dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                _weight=embeddings)
        m.weight.requires_grad_(not freeze)
        return m
