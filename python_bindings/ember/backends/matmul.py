"""matmul on GPU devices: Ember's own tiled GEMM or cuBLAS (docs/gpu_backend.md). `emu` always
runs Ember's GEMM; on `cuda` the default ("auto") is cuBLAS when the build has it."""
from .. import _C


def set_gemm(name):
    """"auto", "ember" or "cublas" (the same choice as the EMBER_GEMM environment variable).
    ember.DeviceError for "cublas" in a build without cuBLAS; ember.ValueError for other names."""
    _C._set_gpu_gemm(name)


def gemm():
    """The current choice: "auto", "ember" or "cublas"."""
    return _C._gpu_gemm()


def has_cublas():
    """Whether this build can run matmul through cuBLAS."""
    return _C._gpu_gemm_has_cublas()
