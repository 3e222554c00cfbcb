"""Ember's C++ errors arrive as matching Python exceptions, messages intact."""
import builtins

import numpy as np
import pytest

import ember

MAPPING = [
    ("shape", ember.ShapeError, builtins.ValueError),
    ("dtype", ember.DTypeError, builtins.TypeError),
    ("device", ember.DeviceError, builtins.RuntimeError),
    ("index", ember.IndexError, builtins.IndexError),
    ("value", ember.ValueError, builtins.ValueError),
    ("oom", ember.OutOfMemoryError, builtins.MemoryError),
    ("format", ember.FormatError, builtins.ValueError),
    ("io", ember.IOError, builtins.OSError),
    ("cuda", ember.CudaError, builtins.RuntimeError),
    ("cudnn", ember.CudnnError, builtins.RuntimeError),
    ("cublas", ember.CublasError, builtins.RuntimeError),
    ("other", ember.Error, builtins.RuntimeError),
]


@pytest.mark.parametrize("kind,cls,builtin", MAPPING, ids=[m[0] for m in MAPPING])
def test_every_cpp_error_maps_to_its_class(kind, cls, builtin):
    with pytest.raises(cls) as info:
        ember._C._raise(kind, "the message: [2, 3] vs [4]")
    assert isinstance(info.value, ember.Error) and isinstance(info.value, builtin)
    if kind != "oom":
        assert str(info.value) == "the message: [2, 3] vs [4]"
    if cls is not ember.Error:
        assert type(info.value) is cls  # the most derived class, not the base


def test_real_errors_from_ops():
    with pytest.raises(ember.ShapeError, match=r"\[2, 3\].*\[4\]|\[4\].*\[2, 3\]"):
        ember.ones(2, 3) + ember.ones(4)
    with pytest.raises(ember.ShapeError):
        ember.ones(2, 3) @ ember.ones(2, 3)
    with pytest.raises(ember.DTypeError):
        ember.nn.functional.mse_loss(ember.ones(2, dtype=ember.float16), ember.ones(2, dtype=ember.int32))
    with pytest.raises(ember.IndexError):
        ember.ones(2, 3).sum(dim=5)
    with pytest.raises(ember.DeviceError) as info:
        ember.ones(2, device="cuda:0")
    assert "cuda" in str(info.value).lower()
    with pytest.raises(ember.ValueError):
        ember.nn.functional.gelu(ember.ones(2), approximate="fast")
    with pytest.raises(ValueError):
        ember.nn.functional.cross_entropy(ember.ones(2, 3), ember.tensor([0, 1]), reduction="avg")


def test_file_errors(tmp_path):
    with pytest.raises(ember.IOError):
        ember.load(tmp_path / "missing.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    with pytest.raises(ember.FormatError, match="bad.safetensors"):
        ember.load(bad)


def test_python_level_type_errors():
    with pytest.raises(TypeError):
        ember.zeros(2, dtype="not_a_dtype_object_or_name")
    with pytest.raises(TypeError):
        ember.zeros(2, device=3)
    assert issubclass(ember.ShapeError, ember.Error) and issubclass(ember.IOError, ember.Error)
    assert np is not None
