"""Backend switches: ember.backends.conv (convolution algorithm policy), ember.backends.cudnn
(cuDNN for convolutions, PyTorch's names), ember.backends.matmul (the GPU GEMM)."""
from . import conv  # noqa: F401
from . import cudnn  # noqa: F401
from . import matmul  # noqa: F401
