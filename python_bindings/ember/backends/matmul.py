"""matmul on GPU devices: Ember's own GEMMs or cuBLAS (docs/gpu_backend.md). `emu` always
runs Ember's; on `cuda` the default ("auto") is cuBLAS when the build has it. float16 and
bfloat16 products run on Ember's Tensor Core kernels (set_tc_gemm) where cuBLAS does not."""
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


def set_tc_gemm(name):
    """"auto", "wmma" or "mma_sync": the Tensor Core kernel of float16/bfloat16 products on cuda
    (when cuBLAS does not run them) and emu, as EMBER_GEMM_TC; "auto" is mma_sync.
    ember.ValueError for other names."""
    _C._set_tc_gemm(name)


def tc_gemm():
    """The current Tensor Core kernel choice: "auto", "wmma" or "mma_sync"."""
    return _C._tc_gemm()
