"""The C++ layers as Python modules. Each holds its C++ object (`_cpp`); its parameters and
buffers are the C++ layer's own tensors, so a Python optimiser, load_state_dict() or .to() act
on what the C++ forward uses. They mix freely with Python modules."""
from .. import _C
from . import functional as F
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


def _place(module, device, dtype):
    """PyTorch's factory arguments: the module's tensors moved to `device` and `dtype`."""
    kwargs = {k: v for k, v in (("device", device), ("dtype", dtype)) if v is not None}
    if kwargs:
        module.to(**kwargs)


def _attrs(module, **attrs):
    for k, v in attrs.items():
        object.__setattr__(module, k, v)


class Linear(CppModule):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(_C._Linear(in_features, out_features, bias))
        _attrs(self, in_features=in_features, out_features=out_features)
        _place(self, device, dtype)


class BatchNorm2d(CppModule):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        super().__init__(_C._BatchNorm2d(num_features, eps, momentum, affine, track_running_stats))
        _attrs(self, num_features=num_features, eps=eps, momentum=momentum, affine=affine,
               track_running_stats=track_running_stats)
        _place(self, device, dtype)


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
        _attrs(self, kernel_size=kernel_size, stride=stride or kernel_size, padding=padding,
               dilation=dilation, ceil_mode=ceil_mode)


class AvgPool2d(CppModule):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__(_C._AvgPool2d(kernel_size, stride or 0, padding, ceil_mode, count_include_pad))
        _attrs(self, kernel_size=kernel_size, stride=stride or kernel_size, padding=padding,
               ceil_mode=ceil_mode, count_include_pad=count_include_pad)


class AdaptiveAvgPool2d(CppModule):
    def __init__(self, output_size):
        super().__init__(_C._AdaptiveAvgPool2d(output_size))
        _attrs(self, output_size=output_size)


class Flatten(CppModule):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__(_C._Flatten(start_dim, end_dim))
        _attrs(self, start_dim=start_dim, end_dim=end_dim)


class Dropout(CppModule):
    def __init__(self, p=0.5, inplace=False):
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        super().__init__(_C._Dropout(p))
        _attrs(self, p=p, inplace=inplace)

    def forward(self, x):
        return F._inplace(self._cpp.forward, x, self.inplace)


class Dropout2d(CppModule):
    """Zeroes whole channels (F.dropout2d) in training; identity in eval."""

    def __init__(self, p=0.5, inplace=False):
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        super().__init__(_C._Dropout2d(p))
        _attrs(self, p=p, inplace=inplace)

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training, self.inplace)


class _Activation(CppModule):
    """A C++ activation layer; with inplace=True its result replaces the input (F._inplace)."""

    def __init__(self, cpp, inplace=False, **attrs):
        super().__init__(cpp)
        _attrs(self, inplace=inplace, **attrs)

    def forward(self, x):
        return F._inplace(self._cpp.forward, x, self.inplace)


class ReLU(_Activation):
    def __init__(self, inplace=False):
        super().__init__(_C._ReLU(), inplace)


class LeakyReLU(_Activation):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__(_C._LeakyReLU(negative_slope), inplace, negative_slope=negative_slope)


class Sigmoid(CppModule):
    def __init__(self):
        super().__init__(_C._Sigmoid())


class Tanh(CppModule):
    def __init__(self):
        super().__init__(_C._Tanh())


class GELU(CppModule):
    def __init__(self, approximate="none"):
        super().__init__(_C._GELU(approximate))
        _attrs(self, approximate=approximate)


class SiLU(_Activation):
    def __init__(self, inplace=False):
        super().__init__(_C._SiLU(), inplace)


class ELU(_Activation):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(_C._ELU(alpha), inplace, alpha=alpha)


class Hardtanh(_Activation):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__(_C._Hardtanh(min_val, max_val), inplace, min_val=min_val,
                         max_val=max_val)


class ReLU6(_Activation):
    def __init__(self, inplace=False):
        super().__init__(_C._ReLU6(), inplace, min_val=0.0, max_val=6.0)


class Hardswish(_Activation):
    def __init__(self, inplace=False):
        super().__init__(_C._Hardswish(), inplace)


class Hardsigmoid(_Activation):
    def __init__(self, inplace=False):
        super().__init__(_C._Hardsigmoid(), inplace)


class Mish(_Activation):
    def __init__(self, inplace=False):
        super().__init__(_C._Mish(), inplace)


class Softplus(CppModule):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__(_C._Softplus(beta, threshold))
        _attrs(self, beta=beta, threshold=threshold)


class Softmax2d(CppModule):
    """softmax over the channels (dim -3) of [N, C, H, W] or [C, H, W]."""

    def __init__(self):
        super().__init__(_C._Softmax2d())


class PReLU(CppModule):
    """x > 0 ? x : weight * x with a learnable weight of num_parameters values (1 or C)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__(_C._PReLU(num_parameters, init))
        _attrs(self, num_parameters=num_parameters)
        _place(self, device, dtype)


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


def model(name, in_channels=1, image_size=8, num_classes=10):
    """One of Ember's ready-made models ("mlp", "lenet", "resnet20", "vgg_small", "resnet50",
    "vgg16") as a Module."""
    return CppModule(_C._make_model(name, in_channels, image_size, num_classes))
