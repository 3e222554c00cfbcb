"""Image data sets as (images, labels) tensors: float32 [N, C, H, W] in [0, 1], int64 [N]."""
from . import _C


def load_digits(split="train", data_dir=None):
    """The bundled 8x8 digits: 1,442 training or 355 test images."""
    return _C._load_digits(split, data_dir)


def load_mnist(root, split="train"):
    return _C._load_mnist(str(root), split)


def load_cifar10(root, split="train"):
    return _C._load_cifar10(str(root), split)
