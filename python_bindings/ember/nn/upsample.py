"""Resampling layers: Upsample, PixelShuffle, PixelUnshuffle (C++: nn/upsample.h)."""
from .. import _C
from .layers import CppModule, _attrs


def _list(v, kind):
    if v is None:
        return []
    return [kind(x) for x in v] if isinstance(v, (list, tuple)) else [kind(v)]


class Upsample(CppModule):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__(_C._Upsample(_list(size, int), _list(scale_factor, float), mode,
                                      align_corners, recompute_scale_factor))
        scale = (tuple(float(f) for f in scale_factor) if isinstance(scale_factor, (list, tuple))
                 else float(scale_factor) if scale_factor is not None else None)
        _attrs(self, name=type(self).__name__, size=size, scale_factor=scale, mode=mode,
               align_corners=align_corners, recompute_scale_factor=recompute_scale_factor)


class PixelShuffle(CppModule):
    def __init__(self, upscale_factor):
        super().__init__(_C._PixelShuffle(upscale_factor))
        _attrs(self, upscale_factor=upscale_factor)


class PixelUnshuffle(CppModule):
    def __init__(self, downscale_factor):
        super().__init__(_C._PixelUnshuffle(downscale_factor))
        _attrs(self, downscale_factor=downscale_factor)
