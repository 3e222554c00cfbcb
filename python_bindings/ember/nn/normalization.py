"""Normalisation layers beside BatchNorm2d, with PyTorch's arguments, attributes, parameter and
buffer names: BatchNorm1d, LayerNorm, GroupNorm, InstanceNorm2d (C++: nn/normalization.h)."""
import numbers

from .. import _C
from .layers import CppModule, _attrs, _place


class BatchNorm1d(CppModule):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        super().__init__(_C._BatchNorm1d(num_features, eps, momentum, affine, track_running_stats))
        _attrs(self, num_features=num_features, eps=eps, momentum=momentum, affine=affine,
               track_running_stats=track_running_stats)
        _place(self, device, dtype)


class LayerNorm(CppModule):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, device=None,
                 dtype=None):
        shape = ((normalized_shape,) if isinstance(normalized_shape, numbers.Integral)
                 else tuple(normalized_shape))
        super().__init__(_C._LayerNorm(list(shape), eps, elementwise_affine))
        _attrs(self, normalized_shape=shape, eps=eps, elementwise_affine=elementwise_affine)
        _place(self, device, dtype)


class GroupNorm(CppModule):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__(_C._GroupNorm(num_groups, num_channels, eps, affine))
        _attrs(self, num_groups=num_groups, num_channels=num_channels, eps=eps, affine=affine)
        _place(self, device, dtype)


class InstanceNorm2d(CppModule):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None):
        super().__init__(_C._InstanceNorm2d(num_features, eps, momentum, affine,
                                            track_running_stats))
        _attrs(self, num_features=num_features, eps=eps, momentum=momentum, affine=affine,
               track_running_stats=track_running_stats)
        _place(self, device, dtype)
