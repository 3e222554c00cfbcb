"""The C++ layers as Python modules. Each holds its C++ object (`_cpp`); its parameters and
buffers are the C++ layer's own tensors, so a Python optimiser, load_state_dict() or .to() act
on what the C++ forward uses. They mix freely with Python modules."""
from .. import _C
from .modules import Module, Parameter


class CppModule(Module):
    """A Python Module around a C++ nn::Module (and, recursively, its children)."""

    def __init__(self, cpp):
        super().__init__()
        object.__setattr__(self, "_cpp", cpp)
        for name, t in cpp.named_parameters(False):
            self._parameters[name] = Parameter._wrap(t)
        for name, t in cpp.named_buffers(False):
            self._buffers[name] = t
        for name, child in cpp.named_children():
            self._modules[name] = CppModule(child)

    def forward(self, x):
        return self._cpp.forward(x)

    def _on_train(self, mode):
        self._cpp.train(mode)

    def __setattr__(self, name, value):
        # Replacing a C++ layer's parameter swaps the data inside the handle the layer holds.
        if name in self._parameters and isinstance(value, _C.Tensor):
            if tuple(value.shape) != tuple(self._parameters[name].shape):
                _C._raise("shape", f"{type(self).__name__}.{name}: expected shape "
                                   f"{tuple(self._parameters[name].shape)}, got {tuple(value.shape)}")
            self._parameters[name]._set_data(value.detach())
            return
        super().__setattr__(name, value)

    def extra_repr(self):
        return self._cpp.extra_repr()

    def __repr__(self):
        if self._modules:
            return super().__repr__()
        return f"{type(self).__name__}({self.extra_repr()})"


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


class Linear(CppModule):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(_C._Linear(in_features, out_features, bias))
        object.__setattr__(self, "in_features", in_features)
        object.__setattr__(self, "out_features", out_features)


class Conv2d(CppModule):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True):
        k = _pair(kernel_size)
        if k[0] != k[1]:
            raise ValueError("Conv2d: only square kernels are supported, got kernel_size=%r" % (kernel_size,))
        super().__init__(_C._Conv2d(in_channels, out_channels, k[0], stride, padding, dilation,
                                    groups, bias))
        object.__setattr__(self, "in_channels", in_channels)
        object.__setattr__(self, "out_channels", out_channels)


class BatchNorm2d(CppModule):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__(_C._BatchNorm2d(num_features, eps, momentum, affine, track_running_stats))
        object.__setattr__(self, "num_features", num_features)


class SyncBatchNorm(BatchNorm2d):
    """BatchNorm2d whose training statistics are those of the global batch, over the ranks of
    the default process group (torch.nn.SyncBatchNorm; Note [SyncBatchNorm] in
    dist/sync_batch_norm.h). Eval mode uses the running statistics, as BatchNorm2d."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        SyncBatchNorm._synchronise(self, process_group)

    @staticmethod
    def _synchronise(bn, process_group):
        from .. import _dist
        _dist.make_sync_batch_norm(bn._cpp, process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Makes every BatchNorm2d in `module` a SyncBatchNorm (in place, keeping parameters and
        buffers) and returns `module`."""
        for m in list(module.modules()):
            if type(m) is BatchNorm2d:
                cls._synchronise(m, process_group)
                m.__class__ = cls
        return module


class MaxPool2d(CppModule):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        super().__init__(_C._MaxPool2d(kernel_size, stride or 0, padding, dilation, ceil_mode))


class AvgPool2d(CppModule):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__(_C._AvgPool2d(kernel_size, stride or 0, padding, ceil_mode, count_include_pad))


class AdaptiveAvgPool2d(CppModule):
    def __init__(self, output_size):
        super().__init__(_C._AdaptiveAvgPool2d(output_size))


class Flatten(CppModule):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__(_C._Flatten(start_dim, end_dim))


class Dropout(CppModule):
    def __init__(self, p=0.5):
        super().__init__(_C._Dropout(p))


class ReLU(CppModule):
    def __init__(self, inplace=False):
        super().__init__(_C._ReLU())


class LeakyReLU(CppModule):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__(_C._LeakyReLU(negative_slope))


class Sigmoid(CppModule):
    def __init__(self):
        super().__init__(_C._Sigmoid())


class Tanh(CppModule):
    def __init__(self):
        super().__init__(_C._Tanh())


class GELU(CppModule):
    def __init__(self, approximate="none"):
        super().__init__(_C._GELU(approximate))


class SiLU(CppModule):
    def __init__(self, inplace=False):
        super().__init__(_C._SiLU())


class ELU(CppModule):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(_C._ELU(alpha))


class Hardtanh(CppModule):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__(_C._Hardtanh(min_val, max_val))


class ReLU6(CppModule):
    def __init__(self, inplace=False):
        super().__init__(_C._ReLU6())


class Softplus(CppModule):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__(_C._Softplus(beta, threshold))


class Identity(Module):
    def forward(self, x):
        return x


class CrossEntropyLoss(Module):
    def __init__(self, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        self.ignore_index, self.reduction, self.label_smoothing = ignore_index, reduction, label_smoothing

    def forward(self, input, target):
        return _C.cross_entropy(input, target, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(Module):
    def __init__(self, ignore_index=-100, reduction="mean"):
        super().__init__()
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, input, target):
        return _C.nll_loss(input, target, self.ignore_index, self.reduction)


class MSELoss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return _C.mse_loss(input, target, self.reduction)


def model(name, in_channels=1, image_size=8, num_classes=10):
    """One of Ember's ready-made models ("mlp", "lenet", "resnet20", "vgg_small", "resnet50",
    "vgg16") as a Module."""
    return CppModule(_C._make_model(name, in_channels, image_size, num_classes))
