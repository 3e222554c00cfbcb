"""Backend switches: ember.backends.conv (convolution algorithm policy), ember.backends.matmul
(the GPU GEMM)."""
from . import conv  # noqa: F401
from . import matmul  # noqa: F401
