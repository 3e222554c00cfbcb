"""Modules (Python-subclassable, PyTorch-style) and the C++ layers wrapped as modules."""
from .modules import Module, Parameter, Sequential, ModuleList  # noqa: F401
from .layers import (  # noqa: F401
    CppModule, Linear, Conv2d, BatchNorm2d, SyncBatchNorm, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Flatten,
    Dropout, ReLU, LeakyReLU, Sigmoid, Tanh, GELU, SiLU, ELU, Softplus, Hardtanh, ReLU6, Identity,
    CrossEntropyLoss, NLLLoss, MSELoss, model,
)
from .sparse import Embedding  # noqa: F401
from . import functional, init, utils, parallel  # noqa: F401
from .utils import fuse_for_inference  # noqa: F401
