"""Utilities: ember.utils.data (datasets and a DataLoader)."""
from . import data  # noqa: F401
