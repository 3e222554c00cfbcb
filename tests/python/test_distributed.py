"""ember.distributed, DistributedDataParallel and DistributedSampler. The collectives and DDP run
under `mpirun -np 2` and 3 (dist_worker.py, against NumPy and PyTorch); the rest in this process.
Without mpirun those cases are reported skipped."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.utils.data import DataLoader, TensorDataset
from ember.utils.data.distributed import DistributedSampler

torch = pytest.importorskip("torch")
MPIRUN = shutil.which("mpirun")
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.skipif(MPIRUN is None or not dist.is_mpi_available(),
                    reason="needs mpirun and a build with MPI")
@pytest.mark.parametrize("ranks", [2, 3])
def test_collectives_ddp_and_sync_batch_norm_under_mpirun(ranks):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1")
    r = subprocess.run([MPIRUN, "--oversubscribe", "-np", str(ranks), sys.executable,
                        os.path.join(HERE, "dist_worker.py")], capture_output=True, text=True,
                       env=env, timeout=600)
    print(r.stdout, r.stderr)
    assert r.returncode == 0
    for rank in range(ranks):
        assert f"PASSED rank {rank}" in r.stdout


@pytest.mark.parametrize("n,w,drop_last", [(10, 3, False), (10, 3, True), (12, 4, False),
                                            (5, 7, False), (1, 2, False), (101, 4, True)])
def test_sampler_matches_torch_without_shuffle(n, w, drop_last):
    for rank in range(w):
        ours = DistributedSampler(range(n), num_replicas=w, rank=rank, shuffle=False,
                                  drop_last=drop_last)
        theirs = torch.utils.data.distributed.DistributedSampler(
            range(n), num_replicas=w, rank=rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)


def test_sampler_shuffles_per_epoch_and_the_shares_cover_the_data():
    n, w = 23, 3
    samplers = [DistributedSampler(range(n), num_replicas=w, rank=r, seed=5) for r in range(w)]
    first = [list(s) for s in samplers]
    everything = sorted(i for part in first for i in part)
    assert len(everything) == 24 and set(everything) == set(range(n))
    for s in samplers:
        s.set_epoch(1)
    assert [list(s) for s in samplers] != first
    with pytest.raises(ValueError, match=r"\[0, 2\]"):
        DistributedSampler(range(n), num_replicas=3, rank=3)
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedSampler(range(n))


def test_dataloader_takes_a_sampler():
    x = ember.arange(10.0).reshape(10, 1)
    y = ember.arange(10)
    sampler = DistributedSampler(range(10), num_replicas=2, rank=1, shuffle=False)
    loader = DataLoader(TensorDataset(x, y), batch_size=2, sampler=sampler)
    assert len(loader) == 3
    labels = [int(v) for _, yb in loader for v in yb.numpy()]
    assert labels == [1, 3, 5, 7, 9]
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(TensorDataset(x, y), sampler=sampler, shuffle=True)


def test_init_process_group_errors_name_the_choices_and_the_launch():
    with pytest.raises(ValueError, match="'mpi'.*'nccl'"):
        dist.init_process_group(backend="gloo")
    if os.environ.get("OMPI_COMM_WORLD_SIZE") is None and os.environ.get("RANK") is None:
        with pytest.raises(dist.DistError, match="mpirun -np 2"):
            dist.init_process_group(backend="mpi")
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="not been initialized"):
        dist.get_rank()
    assert issubclass(dist.DistError, ember.Error) and issubclass(dist.DistError, RuntimeError)


def test_import_ember_does_not_load_mpi():
    code = "import sys, ember; assert 'ember._dist' not in sys.modules; ember.distributed; " \
           "assert 'ember._dist' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))
