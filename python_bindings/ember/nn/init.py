"""Weight initialisers (in place, without recording a graph), as torch.nn.init."""
from .. import _C


def calculate_gain(nonlinearity, param=None):
    return _C._init_calculate_gain(nonlinearity, 0.01 if param is None else param)


def uniform_(tensor, a=0.0, b=1.0):
    _C._init_uniform_(tensor, a, b)
    return tensor


def normal_(tensor, mean=0.0, std=1.0):
    _C._init_normal_(tensor, mean, std)
    return tensor


def constant_(tensor, val):
    _C._init_constant_(tensor, val)
    return tensor


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    _C._init_kaiming_uniform_(tensor, a, mode, nonlinearity)
    return tensor


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    _C._init_kaiming_normal_(tensor, a, mode, nonlinearity)
    return tensor


def xavier_uniform_(tensor, gain=1.0):
    _C._init_xavier_uniform_(tensor, gain)
    return tensor


def xavier_normal_(tensor, gain=1.0):
    _C._init_xavier_normal_(tensor, gain)
    return tensor
