"""Run by test_distributed.py under `mpirun -np N`: ember.distributed's collectives against a
NumPy reference, SyncBatchNorm against torch.nn.BatchNorm2d on the global batch, and
DistributedDataParallel against torch training one process on the global batch. Prints
"PASSED rank R" at the end; any failure raises (and mpirun reports it)."""
import sys

import numpy as np
import torch

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP


def inputs(rank, tag, shape):
    return np.random.default_rng(1000 * tag + rank).standard_normal(shape).astype(np.float32)


def share(b, w, r):
    base, extra = divmod(b, w)
    start = r * base + min(r, extra)
    return start, start + base + (1 if r < extra else 0)


def collectives(rank, world):
    for dtype in (ember.float32, ember.float64, ember.int32, ember.int64):
        t = ember.tensor(inputs(rank, 1, (5, 3))).to(dtype)
        dist.all_reduce(t)
        want = sum(ember.tensor(inputs(r, 1, (5, 3))).to(dtype).numpy() for r in range(world))
        np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    t = ember.tensor(inputs(rank, 2, (7,)))
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    work.wait()
    np.testing.assert_allclose(t.numpy(), np.mean([inputs(r, 2, (7,)) for r in range(world)], 0),
                               rtol=1e-6)
    t = ember.tensor(inputs(rank, 3, (4,)))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    np.testing.assert_array_equal(t.numpy(), np.max([inputs(r, 3, (4,)) for r in range(world)], 0))
    t = ember.tensor(inputs(rank, 4, (6,)))
    dist.broadcast(t, src=world - 1)
    np.testing.assert_array_equal(t.numpy(), inputs(world - 1, 4, (6,)))
    outs = [ember.zeros(2, 3) for _ in range(world)]
    dist.all_gather(outs, ember.tensor(inputs(rank, 5, (2, 3))))
    for r in range(world):
        np.testing.assert_array_equal(outs[r].numpy(), inputs(r, 5, (2, 3)))
    out = ember.zeros(3)
    dist.reduce_scatter(out, [ember.tensor(inputs(rank, 6 + r, (3,))) for r in range(world)])
    np.testing.assert_allclose(out.numpy(), sum(inputs(r, 6 + rank, (3,)) for r in range(world)),
                               rtol=1e-6)
    dist.barrier()
    try:
        dist.all_reduce(ember.zeros(4, 4).t())
        raise AssertionError("a non-contiguous tensor was accepted")
    except ValueError as e:
        assert "contiguous" in str(e)


def sync_batch_norm(rank, world):
    n = 7
    x = inputs(0, 20, (n, 3, 4, 5))
    up = inputs(0, 21, (n, 3, 4, 5))
    ref = torch.nn.BatchNorm2d(3)
    tx = torch.tensor(x, requires_grad=True)
    ty = ref(tx)
    (ty * torch.tensor(up)).sum().backward()
    lo, hi = share(n, world, rank)
    bn = nn.SyncBatchNorm(3)
    assert type(bn).__name__ == "SyncBatchNorm"
    ex = ember.tensor(x[lo:hi], requires_grad=True)
    ey = bn(ex)
    (ey * ember.tensor(up[lo:hi])).sum().backward()
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy()[lo:hi], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy()[lo:hi], rtol=1e-4, atol=1e-5)
    gw = bn.weight.grad.clone()
    dist.all_reduce(gw)
    np.testing.assert_allclose(gw.numpy(), ref.weight.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), ref.running_var.numpy(), rtol=1e-5)


class Net(nn.Module):
    """Python module around C++ layers, as users write them."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 16), nn.ReLU())
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.body(x))


def ddp_vs_torch(rank, world, steps=20, b=12):
    ember.manual_seed(rank)  # different weights before DDP aligns them with rank 0's
    model = Net()
    ddp = DDP(model, bucket_cap_mb=0.001)
    assert list(ddp.state_dict())[0].startswith("module."), list(ddp.state_dict())
    tm = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))
    tm.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in
                        zip(["0.weight", "0.bias", "2.weight", "2.bias"],
                            [p for p in model.parameters()])})
    eo = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    to = torch.optim.SGD(tm.parameters(), lr=0.05, momentum=0.9)
    lo, hi = share(b, world, rank)
    worst = 0.0
    for s in range(steps):
        x = inputs(0, 100 + s, (b, 12))
        y = np.random.default_rng(s).integers(0, 10, b)
        to.zero_grad()
        tl = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
        tl.backward()
        to.step()
        eo.zero_grad()
        el = F.cross_entropy(ddp(ember.tensor(x[lo:hi])), ember.tensor(y[lo:hi]))
        (el * (world * (hi - lo) / b)).backward()
        eo.step()
        total = ember.tensor([el.item() * (hi - lo)], dtype=ember.float64)
        dist.all_reduce(total)
        worst = max(worst, abs(total.item() / b - tl.item()) / abs(tl.item()))
    print(f"rank {rank}: DDP on {world} ranks vs torch on one process, {steps} steps: worst "
          f"relative loss difference {worst:.2e}")
    assert worst < 1e-4, worst
    # no_sync: local gradients only, then an averaging backward.
    x = ember.tensor(inputs(rank, 200, (3, 12)))
    eo.zero_grad()
    with ddp.no_sync():
        ddp(x).sum().backward()
    local = model.head.weight.grad.clone()
    ddp(x).sum().backward()
    want = local.clone() * 2.0
    dist.all_reduce(want, op=dist.ReduceOp.AVG)
    np.testing.assert_allclose(model.head.weight.grad.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def main():
    dist.init_process_group(backend="mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    collectives(rank, world)
    sync_batch_norm(rank, world)
    ddp_vs_torch(rank, world)
    dist.destroy_process_group()
    print(f"PASSED rank {rank}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
