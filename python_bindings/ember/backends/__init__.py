"""Backend switches: ember.backends.conv (convolution algorithm policy)."""
from . import conv  # noqa: F401
