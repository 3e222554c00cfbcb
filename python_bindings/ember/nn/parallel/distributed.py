"""DistributedDataParallel with PyTorch's semantics: rank 0's parameters and buffers broadcast
at the start (after checking that every rank has the same parameters), gradients averaged over
the ranks in buckets launched from post-accumulate-grad hooks while the backward pass runs
(Note [Gradient buckets] in dist/ddp.h), no_sync() for gradient accumulation, and the module's
state under "module." in state_dict()."""
import contextlib

from ..modules import Module


def _dist():
    from ... import _dist as d  # loaded on first use: `import ember` needs no MPI
    return d


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if find_unused_parameters:
            raise ValueError("DistributedDataParallel: find_unused_parameters=True is not "
                             "supported; every parameter must take part in the loss")
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got "
                             f"{bucket_cap_mb}")
        from ... import distributed as dist
        group = dist._group(process_group)
        self.module = module
        object.__setattr__(self, "process_group", group)
        object.__setattr__(self, "broadcast_buffers", broadcast_buffers)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        _dist().check_same_parameters([n for n, _ in named], [p for _, p in named], group)
        state = list(module.parameters()) + [b for _, b in module.named_buffers()]
        _dist().broadcast_from_rank0(state, group)
        cap = max(1, int(bucket_cap_mb * 1024 * 1024))
        object.__setattr__(self, "reducer", _dist().Reducer([p for _, p in named], group, cap,
                                                          [n for n, _ in named]))

    def forward(self, *inputs, **kwargs):
        self.reducer.prepare_forward()
        if self.broadcast_buffers and self.process_group.size() > 1:
            buffers = [b for _, b in self.module.named_buffers()]
            if buffers:
                _dist().broadcast_from_rank0(buffers, self.process_group)
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally; the first backward after it
        averages the accumulated gradients over the ranks."""
        previous = self.reducer.sync
        self.reducer.sync = False
        try:
            yield
        finally:
            self.reducer.sync = previous
