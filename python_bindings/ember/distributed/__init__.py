"""ember.distributed: process groups and collectives with torch.distributed's names.

    import ember, ember.distributed as dist
    dist.init_process_group(backend="mpi")          # under `mpirun -np 2 python3 train.py`
    t = ember.ones(4) * dist.get_rank()
    dist.all_reduce(t)                              # in place: the sum over the ranks
    dist.destroy_process_group()

Backends: "mpi" (cpu tensors, and host copies of emu and cuda ones; the ranks come from mpirun)
and "nccl" (cuda tensors; ranks from mpirun or from the env:// variables RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT). init_method is "env://". A collective that does not finish within
`timeout` raises DistError naming the ranks that stopped answering. docs/distributed.md.
"""
import datetime as _dt

from .. import _dist
from .._dist import ReduceOp, DistError, Work, ProcessGroup  # noqa: F401

default_pg_timeout = _dt.timedelta(minutes=5)


class GroupMember:
    WORLD = None  # the default group, as torch.distributed.GroupMember.WORLD


def is_available():
    return True


def is_mpi_available():
    return _dist.mpi_missing_reason() == ""


def is_nccl_available():
    return _dist.nccl_missing_reason() == ""


def is_initialized():
    return _dist.is_initialized()


def _group(group):
    if group is not None and group is not GroupMember.WORLD:
        if isinstance(group, ProcessGroup):
            return group
        raise ValueError("ember.distributed: only the default group (None) is supported")
    if not _dist.is_initialized():
        raise RuntimeError("Default process group has not been initialized, please make sure to "
                           "call init_process_group.")
    return _dist.default_group()


def init_process_group(backend=None, init_method=None, timeout=default_pg_timeout, world_size=-1,
                       rank=-1, store=None, group_name="", pg_options=None, device=None):
    """Starts the default process group. backend: "mpi" or "nccl" (None: "nccl" when `device` is a
    cuda device and NCCL is built in, else "mpi"). timeout: a datetime.timedelta or seconds.
    world_size and rank, when given, must agree with the launcher's."""
    if store is not None:
        raise ValueError("init_process_group: store= is not supported; use init_method='env://'")
    dev = "" if device is None else str(device)
    if backend is None:
        backend = "nccl" if dev.startswith("cuda") and is_nccl_available() else "mpi"
    backend = str(backend).lower()
    seconds = timeout.total_seconds() if isinstance(timeout, _dt.timedelta) else float(timeout)
    kind, launch_rank, launch_size = _dist.launch()
    for name, given, actual in (("world_size", world_size, launch_size), ("rank", rank, launch_rank)):
        if given != -1 and kind != "none" and given != actual:
            raise ValueError(f"init_process_group: {name}={given}, but the launcher says {actual}")
    _dist.init_process_group(backend, init_method or "env://", seconds, dev)


def destroy_process_group(group=None):
    _dist.destroy_process_group()


def get_rank(group=None):
    return _group(group).rank()


def get_world_size(group=None):
    return _group(group).size()


def get_backend(group=None):
    return _group(group).backend()


def _run(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    return _run(_group(group).all_reduce(tensor, op), async_op)


def broadcast(tensor, src=0, group=None, async_op=False):
    return _run(_group(group).broadcast(tensor, src), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    return _run(_group(group).all_gather(list(tensor_list), tensor), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    return _run(_group(group).reduce_scatter(output, list(input_list), op), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    return _run(_group(group).barrier(), async_op)
