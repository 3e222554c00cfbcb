"""DistributedSampler, as torch.utils.data.distributed.DistributedSampler: each rank's share of
a data set's indices, from one seeded, epoch-dependent permutation (Ember's, so the order is not
PyTorch's), padded to a multiple of the replicas or cut with drop_last, rank r taking every
num_replicas-th index from r. The C++ sampler (dist/sampler.h) computes the indices."""


class DistributedSampler:
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        from ... import distributed as dist
        if num_replicas is None or rank is None:
            if not dist.is_initialized():
                raise RuntimeError("DistributedSampler: pass num_replicas and rank, or call "
                                   "ember.distributed.init_process_group() first")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        self.num_samples = n // num_replicas if drop_last else -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        from ... import _dist
        indices, count = _dist.sampler_indices(len(self.dataset), self.num_replicas, self.rank,
                                               self.shuffle, self.seed, self.epoch,
                                               self.drop_last)
        assert count == self.num_samples
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Every rank must call this with the same epoch before iterating, or the shares of the
        ranks overlap from one epoch to the next."""
        self.epoch = epoch
