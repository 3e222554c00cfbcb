"""ember.nn.parallel: DistributedDataParallel (torch.nn.parallel's name)."""
from .distributed import DistributedDataParallel  # noqa: F401
