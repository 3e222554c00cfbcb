"""Data loading with PyTorch's names (torch.utils.data): datasets, samplers, DataLoader,
default_collate, random_split; ember.utils.data.distributed has the DistributedSampler."""
from .dataset import (  # noqa: F401
    ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split,
)
from .sampler import (  # noqa: F401
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
)
from .dataloader import (  # noqa: F401
    DataLoader, WorkerInfo, collate, default_collate, default_collate_fn_map, default_convert,
    get_worker_info,
)
