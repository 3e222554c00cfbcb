"""Zero-copy interchange with NumPy and DLPack (PyTorch, NumPy) in both directions, and bad input."""
import numpy as np
import pytest

import ember
from conftest import torch


def test_numpy_view_shares_memory():
    t = ember.arange(12, dtype=ember.float32).reshape(3, 4)
    a = t.numpy()
    assert a.ctypes.data == t.data_ptr() and a.dtype == np.float32 and a.shape == (3, 4)
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    del t
    assert a[0, 0] == 42  # the array keeps the tensor's memory alive


def test_numpy_of_strided_view():
    t = ember.arange(12, dtype=ember.float64).reshape(3, 4)
    v = t.transpose(0, 1)[1:]
    a = v.numpy()
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(3, 4).T[1:])
    assert a.ctypes.data == v.data_ptr()


def test_numpy_requires_grad_and_bfloat16_raise():
    with pytest.raises(ValueError, match="detach"):
        ember.ones(2, requires_grad=True).numpy()
    with pytest.raises(TypeError, match="bfloat16"):
        ember.ones(2, dtype=ember.bfloat16).numpy()


@pytest.mark.parametrize("np_dtype,dtype", [(np.float32, ember.float32), (np.float64, ember.float64),
                                            (np.float16, ember.float16), (np.int32, ember.int32),
                                            (np.int64, ember.int64), (np.uint8, ember.uint8),
                                            (np.bool_, ember.bool)])
def test_from_numpy_shares_memory(np_dtype, dtype):
    a = np.arange(6).reshape(2, 3).astype(np_dtype)
    t = ember.from_numpy(a)
    assert t.dtype == dtype and t.shape == (2, 3) and t.data_ptr() == a.ctypes.data
    assert t.numpy().ctypes.data == a.ctypes.data


def test_from_numpy_respects_strides_and_keeps_array_alive():
    a = np.arange(24.0).reshape(4, 6)
    v = a[::2, 1::2]
    t = ember.from_numpy(v)
    assert t.stride() == (12, 2) and t.data_ptr() == v.ctypes.data
    np.testing.assert_array_equal(t.numpy(), v)
    a[0, 1] = -1
    assert t[0, 0].item() == -1
    del a, v
    assert t[1, 2].item() == 17.0
    y = t * 2  # ops read strided input
    assert y.tolist() == [[-2.0, 6.0, 10.0], [26.0, 30.0, 34.0]]


@pytest.mark.parametrize("arr", [np.zeros(3, np.complex64), np.zeros(2, np.longdouble),
                                 np.array([object()]), np.array(["a", "b"]), np.zeros(2, np.int16)])
def test_from_numpy_unsupported_dtype_names_it(arr):
    with pytest.raises(TypeError, match=str(arr.dtype.name)):
        ember.from_numpy(arr)
    with pytest.raises(TypeError):
        ember.tensor(arr)


def test_from_numpy_rejects_negative_strides_and_non_arrays():
    with pytest.raises(ValueError, match="negative strides"):
        ember.from_numpy(np.arange(5.0)[::-1])
    with pytest.raises(TypeError):
        ember.from_numpy([1, 2, 3])


def test_dlpack_ember_to_torch_is_zero_copy():
    e = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    t = torch.from_dlpack(e)
    assert t.data_ptr() == e.data_ptr() and t.shape == (2, 3) and t.dtype == torch.float32
    t[1, 1] = 100
    assert e[1, 1].item() == 100
    assert e.__dlpack_device__() == (1, 0)
    v = ember.arange(12, dtype=ember.float64).reshape(3, 4).transpose(0, 1)
    tv = torch.from_dlpack(v)
    assert tv.stride() == (1, 4) and tv.data_ptr() == v.data_ptr()
    np.testing.assert_array_equal(tv.numpy(), v.numpy())


def test_dlpack_torch_to_ember_is_zero_copy():
    t = torch.arange(12, dtype=torch.float64).reshape(3, 4)[:, 1:]
    e = ember.from_dlpack(t)
    assert e.data_ptr() == t.data_ptr() and e.shape == (3, 3) and e.stride() == (4, 1)
    t[0, 0] = -5
    assert e[0, 0].item() == -5
    del t
    assert e[2, 2].item() == 11.0
    for tdt, edt in [(torch.int64, ember.int64), (torch.int32, ember.int32), (torch.uint8, ember.uint8),
                     (torch.float16, ember.float16), (torch.bfloat16, ember.bfloat16)]:
        x = torch.zeros(3, dtype=tdt)
        assert ember.from_dlpack(x).dtype == edt


def test_dlpack_numpy_both_ways():
    a = np.arange(10.0)
    e = ember.from_dlpack(a)
    assert e.data_ptr() == a.ctypes.data
    a[3] = 33
    assert e[3].item() == 33
    t = ember.arange(4, dtype=ember.int32)
    b = np.from_dlpack(t)
    assert b.ctypes.data == t.data_ptr() and b.tolist() == [0, 1, 2, 3]


def test_dlpack_round_trip_through_capsules():
    e = ember.ones(5)
    cap = e.__dlpack__()
    back = ember.from_dlpack(cap)
    assert back.data_ptr() == e.data_ptr()
    with pytest.raises(ValueError, match="already consumed"):
        ember.from_dlpack(cap)
    tcap = torch.utils.dlpack.to_dlpack(torch.ones(2))
    torch.utils.dlpack.from_dlpack(tcap)
    with pytest.raises(ValueError, match="already consumed"):
        ember.from_dlpack(tcap)
    e.__dlpack__()  # an unconsumed capsule frees its tensor when collected


class _FakeCudaProducer:
    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("must not be asked for a capsule")


def test_dlpack_foreign_devices_and_bad_objects():
    with pytest.raises(ember.DeviceError, match="device type 2"):
        ember.from_dlpack(_FakeCudaProducer())
    with pytest.raises(TypeError):
        ember.from_dlpack([1, 2])
    import ctypes
    cap = ctypes.pythonapi.PyCapsule_New
    cap.restype, cap.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    with pytest.raises(ValueError, match="not a DLPack capsule"):
        ember.from_dlpack(cap(1, b"something_else", None))
    with pytest.raises(BufferError):
        ember.ones(2, requires_grad=True).__dlpack__()


def test_as_tensor_shares_numpy_memory():
    a = np.ones(3, np.float32)
    assert ember.as_tensor(a).data_ptr() == a.ctypes.data


def test_shared_memory_is_released_with_the_last_tensor():
    import gc
    import sys

    a = np.ones(4)
    base = sys.getrefcount(a)
    t = ember.from_numpy(a)
    v = t[1:]
    assert sys.getrefcount(a) > base
    del t
    gc.collect()
    assert sys.getrefcount(a) > base  # the view still holds the memory
    del v
    gc.collect()
    assert sys.getrefcount(a) == base
    e = ember.from_dlpack(a)  # NumPy's DLPack deleter drops its reference under the GIL
    assert sys.getrefcount(a) > base
    del e
    gc.collect()
    assert sys.getrefcount(a) == base
    t = ember.ones(3)
    arr = t.numpy()
    tref = sys.getrefcount(t)
    del arr
    assert sys.getrefcount(t) == tref - 1
