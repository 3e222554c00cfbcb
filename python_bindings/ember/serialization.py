"""ember.save / ember.load: named tensors in safetensors files."""
from collections import OrderedDict

from . import _C


def load(path, map_location=None):
    """The tensors of a safetensors file, by name in file order (an OrderedDict)."""
    tensors, _ = _C._load(str(path))
    out = OrderedDict(tensors)
    if map_location is not None:
        out = OrderedDict((k, v.to(map_location)) for k, v in out.items())
    return out


def load_metadata(path):
    return _C._load(str(path))[1]
