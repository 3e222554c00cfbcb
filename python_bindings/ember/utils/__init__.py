"""Utilities: ember.utils.data (datasets, samplers and the DataLoader, as torch.utils.data)."""
from . import data  # noqa: F401
