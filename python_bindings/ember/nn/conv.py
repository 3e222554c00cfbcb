"""Convolution layers with PyTorch's arguments and attributes: Conv1d, Conv2d, ConvTranspose2d
(C++ layers: nn/conv.h)."""
from .. import _C
from .layers import CppModule, _place


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _ConvNd(CppModule):
    def __init__(self, cpp, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, padding_mode, dims):
        super().__init__(cpp)
        attrs = dict(in_channels=in_channels, out_channels=out_channels,
                     kernel_size=_tuple(kernel_size, dims), stride=_tuple(stride, dims),
                     padding=padding if isinstance(padding, str) else _tuple(padding, dims),
                     dilation=_tuple(dilation, dims), transposed=transposed,
                     output_padding=_tuple(output_padding, dims), groups=groups,
                     padding_mode=padding_mode)
        for k, v in attrs.items():
            object.__setattr__(self, k, v)


def _check_padding(padding, stride):
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                             "{'valid', 'same'}")
        if padding == "same" and any(s != 1 for s in _tuple(stride, 1)):
            raise ValueError("padding='same' is not supported for strided convolutions")


class Conv2d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        _check_padding(padding, stride)
        super().__init__(_C._Conv2d(in_channels, out_channels, kernel_size, stride, padding,
                                    dilation, groups, bias, padding_mode),
                         in_channels, out_channels, kernel_size, stride, padding, dilation, False,
                         0, groups, padding_mode, 2)
        _place(self, device, dtype)


class Conv1d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        _check_padding(padding, stride)
        super().__init__(_C._Conv1d(in_channels, out_channels, kernel_size, stride, padding,
                                    dilation, groups, bias, padding_mode),
                         in_channels, out_channels, kernel_size, stride, padding, dilation, False,
                         0, groups, padding_mode, 1)
        _place(self, device, dtype)


class ConvTranspose2d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(_C._ConvTranspose2d(in_channels, out_channels, kernel_size, stride,
                                             padding, output_padding, groups, bias, dilation,
                                             padding_mode),
                         in_channels, out_channels, kernel_size, stride, padding, dilation, True,
                         output_padding, groups, padding_mode, 2)
        _place(self, device, dtype)

    def forward(self, input, output_size=None):
        if output_size is None:
            return self._cpp.forward(input)
        return _C._conv_transpose2d_sized(self._cpp, input, [int(s) for s in output_size])
