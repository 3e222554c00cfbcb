"""Image data sets as (images, labels) tensors: float32 [N, C, H, W] in [0, 1], int64 [N]."""
import os

from . import _C

# An installed package carries the bundled data next to itself; a build tree uses the C++
# library's search (EMBER_DATA_DIR, then the source tree's data/, ...).
_PACKAGE_DATA = os.path.join(os.path.dirname(__file__), "data")


def _default_dir():
    if "EMBER_DATA_DIR" not in os.environ and os.path.exists(os.path.join(_PACKAGE_DATA, "digits", "digits.bin")):
        return _PACKAGE_DATA
    return None


def load_digits(split="train", data_dir=None):
    """The bundled 8x8 digits: 1,442 training or 355 test images."""
    return _C._load_digits(split, data_dir if data_dir is not None else _default_dir())


def load_mnist(root, split="train"):
    return _C._load_mnist(str(root), split)


def load_cifar10(root, split="train"):
    return _C._load_cifar10(str(root), split)
