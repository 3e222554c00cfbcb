"""ember.save / ember.load: safetensors files.

A flat dict of named tensors (a state_dict) is written as plain safetensors, readable by any
safetensors reader. Anything else PyTorch scripts save -- a checkpoint dict holding the model's
and the optimizer's state dicts, the epoch, a list of losses -- is written the same way, its
tensors named by their path ("model.fc.weight", "optimizer.state.0.exp_avg") and the rest of the
structure (dicts with str or int keys, lists, tuples, numbers, strings, None) kept as JSON in the
file's metadata under "ember.structure", so ember.load gives the same object back."""
import json
import os
from collections import OrderedDict

from . import _C

_STRUCTURE = "ember.structure"


def _is_flat(obj):
    return isinstance(obj, dict) and all(
        isinstance(k, str) and isinstance(v, _C.Tensor) for k, v in obj.items())


def _encode(obj, path, tensors):
    """The JSON form of obj; its tensors go into `tensors` under their path."""
    if isinstance(obj, _C.Tensor):
        name = path or "tensor"
        while name in tensors:
            name += "_"
        tensors[name] = obj.detach()
        return {"tensor": name}
    if obj is None or isinstance(obj, (bool, str)):
        return {"value": obj}
    if isinstance(obj, int):
        return {"int": str(obj)}
    if isinstance(obj, float):
        return {"float": repr(obj)}  # "inf" and "nan" too, which JSON numbers cannot hold
    if isinstance(obj, (list, tuple)):
        kind = "tuple" if isinstance(obj, tuple) else "list"
        return {kind: [_encode(v, f"{path}.{i}" if path else str(i), tensors)
                       for i, v in enumerate(obj)]}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"ember.save: dict keys must be str or int, got "
                                f"{type(k).__name__}")
            items.append([k, _encode(v, f"{path}.{k}" if path else str(k), tensors)])
        return {"dict": items}
    raise TypeError(f"ember.save: cannot save an object of type {type(obj).__name__} (tensors, "
                    "numbers, strings, None, and dicts, lists and tuples of them)")


def _decode(node, tensors):
    if "tensor" in node:
        return tensors[node["tensor"]]
    if "value" in node:
        return node["value"]
    if "int" in node:
        return int(node["int"])
    if "float" in node:
        return float(node["float"])
    if "list" in node:
        return [_decode(v, tensors) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, tensors) for v in node["tuple"])
    return {k: _decode(v, tensors) for k, v in node["dict"]}


def _path(f):
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f)
    raise TypeError(f"ember.save/load: expected a file path (str or os.PathLike), got "
                    f"{type(f).__name__}")


def save(obj, f, metadata=None):
    """Writes obj to the file at path f (atomically). metadata: extra str -> str entries."""
    meta = dict(metadata or {})
    if _is_flat(obj):
        _C._save(obj, _path(f), meta or None)
        return
    tensors = OrderedDict()
    meta[_STRUCTURE] = json.dumps(_encode(obj, "", tensors))
    _C._save(tensors, _path(f), meta)


def load(f, map_location=None):
    """What save wrote: the same structure, or, for a plain safetensors file, its tensors by name
    in file order (an OrderedDict). map_location: a device the tensors are moved to."""
    tensors, meta = _C._load(_path(f))
    out = OrderedDict(tensors)
    if map_location is not None:
        out = OrderedDict((k, v.to(map_location)) for k, v in out.items())
    if _STRUCTURE in meta:
        return _decode(json.loads(meta[_STRUCTURE]), out)
    return out


def load_metadata(path):
    return _C._load(str(path))[1]
