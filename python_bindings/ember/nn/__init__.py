"""Modules (Python-subclassable, PyTorch-style) and the C++ layers wrapped as modules."""
from .modules import Module, Parameter, Sequential  # noqa: F401
from .containers import ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .layers import (  # noqa: F401
    CppModule, Linear, BatchNorm2d, SyncBatchNorm, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Flatten,
    Dropout, Dropout2d, ReLU, LeakyReLU, Sigmoid, Tanh, GELU, SiLU, ELU, Softplus, Hardtanh, ReLU6,
    Hardswish, Hardsigmoid, Mish, PReLU, Softmax2d, Identity, model,
)
from .conv import Conv1d, Conv2d, ConvTranspose2d  # noqa: F401
from .normalization import BatchNorm1d, LayerNorm, GroupNorm, InstanceNorm2d  # noqa: F401
from .upsample import Upsample, PixelShuffle, PixelUnshuffle  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .loss import (  # noqa: F401
    L1Loss, MSELoss, SmoothL1Loss, HuberLoss, KLDivLoss, BCELoss, BCEWithLogitsLoss, NLLLoss,
    CrossEntropyLoss, CosineEmbeddingLoss, MarginRankingLoss,
)
from .sparse import Embedding  # noqa: F401
from . import functional, init, utils, parallel  # noqa: F401
from .utils import fuse_for_inference  # noqa: F401
