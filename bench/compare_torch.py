#!/usr/bin/python3
"""Ember vs PyTorch (CPU) on the same rows, side by side, at 1 and 2 threads.

Rows: conv2d forward+backward on LeNet and ResNet-20 layer shapes, one training step of LeNet
(8x8 digits, batch 32) and of ResNet-20 (CIFAR-sized random batch of 128; in float32, and with
the forward under CPU bfloat16 autocast), and forward+backward (from a fixed output gradient,
the leaves' gradients set to None first) of LayerNorm over [32,128,768], GroupNorm (32 groups)
on [16,256,32,32], ConvTranspose2d 64->32 (4x4, stride 2, padding 1) on [16,64,32,32] and
bilinear x2 interpolation of [16,64,64,64], as timed by build/bin/bench_train_step. Peak memory: each framework's ResNet-20 step runs in a process of
its own and reports its maximum resident set size.

    /usr/bin/python3 bench/compare_torch.py [--build build] [--repeats 5]
    /usr/bin/python3 bench/compare_torch.py --ops-cpu-time [--threads 2] [--build build] [--repeats 9]

--ops-cpu-time times the four layer rows and the tensor-op rows (gather, scatter_add, an
embedding-style index_select, einsum) on one thread in the same process, through Ember's
Python bindings (<build>/python) and PyTorch alternately, in thread CPU time (best of
--repeats): on a machine shared with other work, wall time swings by several times between
runs while CPU time of interleaved runs stays comparable. With --threads 2 both run on two
threads and the best wall time of the interleaved runs is compared.

Needs Debian's python3-torch (apt-get install python3-torch).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

CONVS = [  # name, N, C, H, K, R, stride, padding
    ("conv lenet8 1->16 8x8 k3", 32, 1, 8, 16, 3, 1, 1),
    ("conv lenet8 16->32 4x4 k3", 32, 16, 4, 32, 3, 1, 1),
    ("conv lenet5 1->6 28x28 k5", 64, 1, 28, 6, 5, 1, 2),
    ("conv lenet5 6->16 14x14 k5", 64, 6, 14, 16, 5, 1, 0),
    ("conv resnet20 16->16 32x32 k3", 128, 16, 32, 16, 3, 1, 1),
    ("conv resnet20 16->32 32x32 k3 s2", 128, 16, 32, 32, 3, 2, 1),
    ("conv resnet20 32->32 16x16 k3", 128, 32, 16, 32, 3, 1, 1),
    ("conv resnet20 64->64 8x8 k3", 128, 64, 8, 64, 3, 1, 1),
]


def lenet8():  # the same architecture as nn::lenet({1, 8, 10})
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


class Block(nn.Module):  # nn::resnet20's BasicBlock: projection shortcuts where shapes change
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (self.shortcut(x) if self.shortcut is not None else x))


def resnet20():
    layers, cin = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()], 16
    for stage, width in enumerate((16, 32, 64)):
        for b in range(3):
            layers.append(Block(cin, width, 2 if stage > 0 and b == 0 else 1))
            cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


def peak_rss_mb():
    """This process's peak resident set (VmHWM): not ru_maxrss, which Linux carries over exec
    from the parent that started the process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def median_ms(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def train_step(model, x, y, amp=False):
    """amp: the forward and the loss under CPU bfloat16 autocast."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


LAYER_ROWS = [  # name, the op on (lib, leaves), leaf shapes, output shape
    ("layer_norm [32,128,768]", lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (768,), w, b),
     [(32, 128, 768), (768,), (768,)], (32, 128, 768)),
    ("group_norm 32 groups [16,256,32,32]", lambda lib, x, w, b: lib.nn.functional.group_norm(x, 32, w, b),
     [(16, 256, 32, 32), (256,), (256,)], (16, 256, 32, 32)),
    ("conv_transpose2d 64->32 k4 s2 [16,64,32,32]",
     lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1),
     [(16, 64, 32, 32), (64, 32, 4, 4), (32,)], (16, 32, 64, 64)),
    ("interpolate bilinear x2 [16,64,64,64]",
     lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
     [(16, 64, 64, 64)], (16, 64, 128, 128)),
]


# Tensor-op rows, timed by --ops-cpu-time only: gather (its backward a scatter_add), scatter_add,
# an embedding-style index_select and einsum. Their index tensors are made once per library.
_INDEX = {}


def _index(lib, high, shape, seed):
    key = (lib.__name__, high, shape, seed)
    if key not in _INDEX:
        import numpy as np
        _INDEX[key] = lib.tensor(np.random.default_rng(seed).integers(0, high, shape))
    return _INDEX[key]


TENSOR_OP_ROWS = [
    ("gather [256,4096] idx [256,1024] dim 1",
     lambda lib, x: x.gather(1, _index(lib, 4096, (256, 1024), 1)), [(256, 4096)], (256, 1024)),
    ("scatter_add [256,8192] -> [256,4096]",
     lambda lib, x: lib.zeros(256, 4096).scatter_add(1, _index(lib, 4096, (256, 8192), 2), x),
     [(256, 8192)], (256, 4096)),
    ("index_select 16384 rows of [50000,128]",
     lambda lib, x: lib.index_select(x, 0, _index(lib, 50000, (16384,), 3)), [(50000, 128)],
     (16384, 128)),
    ("einsum bhqd,bhkd->bhqk 8x8x128x64", lambda lib, q, k: lib.einsum("bhqd,bhkd->bhqk", q, k),
     [(8, 8, 128, 64), (8, 8, 128, 64)], (8, 8, 128, 128)),
]


def op_fwd_bwd(op, shapes, out, lib=torch):
    """Forward, then backward from a fixed output gradient, the leaves' gradients set to None
    first (zero_grad(set_to_none=True)): the op and its backward, no reduction around them."""
    leaves = [lib.randn(*s) for s in shapes]
    for t in leaves:
        t.requires_grad_(True)
    g = lib.randn(*out)

    def run():
        for t in leaves:
            t.grad = None
        op(*leaves).backward(g)
    return run


def ops_cpu_time(build, repeats, threads=1):
    """The layer and tensor-op rows, Ember and PyTorch alternately: on one thread the best thread
    CPU time; on more (where the calling thread's CPU time is not the op's) the best wall time."""
    sys.path.insert(0, str(Path(build) / "python"))
    import ember
    torch.set_num_threads(threads)
    ember.set_num_threads(threads)  # thread CPU time counts the calling thread's work only
    clock = time.thread_time if threads == 1 else time.perf_counter
    what = "thread CPU time" if threads == 1 else "wall time"
    print(f"Ember vs PyTorch {torch.__version__} (CPU), {threads} thread{'s' if threads > 1 else ''}, "
          f"interleaved, best of {repeats} runs of {what}, milliseconds")
    print(f"  {'row':44} {'ember ms':>10} {'torch ms':>10} {'ember/torch':>12}")
    for name, op, shapes, out in LAYER_ROWS + TENSOR_OP_ROWS:
        fns = [op_fwd_bwd(lambda *a, lib=lib: op(lib, *a), shapes, out, lib) for lib in (ember, torch)]
        best = [float("inf")] * 2
        for f in fns:
            f()
        for _ in range(repeats):
            for i, f in enumerate(fns):
                t0 = clock()
                f()
                best[i] = min(best[i], (clock() - t0) * 1e3)
        print(f"  {name:44} {best[0]:10.2f} {best[1]:10.2f} {best[0] / best[1]:12.2f}")


def torch_rows(repeats, only=None):
    torch.manual_seed(0)
    rows = {}
    for name, n, c, h, k, r, s, p in CONVS:
        x = torch.randn(n, c, h, h, requires_grad=True)
        w = torch.randn(k, c, r, r, requires_grad=True)
        rows[name] = lambda x=x, w=w, s=s, p=p: F.conv2d(x, w, stride=s, padding=p).sum().backward()
    rows["step lenet8 digits b32"] = train_step(lenet8(), torch.rand(32, 1, 8, 8), torch.full((32,), 3))
    rows["step resnet20 cifar b128"] = train_step(resnet20(), torch.randn(128, 3, 32, 32), torch.full((128,), 7))
    rows["step resnet20 cifar b128 bf16 autocast"] = train_step(
        resnet20(), torch.randn(128, 3, 32, 32), torch.full((128,), 7), amp=True)
    for name, op, shapes, out in LAYER_ROWS:
        rows[name] = op_fwd_bwd(lambda *a, op=op: op(torch, *a), shapes, out)
    return {name: median_ms(fn, repeats) for name, fn in rows.items() if only in (None, name)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ops-cpu-time", action="store_true",
                    help="only the layer and tensor-op rows, interleaved: thread CPU time on one "
                         "thread, wall time with --threads 2")
    ap.add_argument("--threads", type=int, default=1,
                    help="--ops-cpu-time: threads for both frameworks (default 1)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ops_cpu_time:
        ops_cpu_time(args.build, args.repeats, args.threads)
        return 0
    step = "step resnet20 cifar b128"
    if args.child:  # a PyTorch process of its own for the peak-memory row
        torch.set_num_threads(int(args.child))
        torch_rows(2, only=step)
        print(peak_rss_mb())
        return 0
    exe = Path(args.build) / "bin" / "bench_train_step"
    if not exe.exists():
        sys.exit(f"{exe} not found: build first (./run.sh or cmake --build {args.build})")
    print(f"Ember vs PyTorch {torch.__version__} (CPU), median of {args.repeats} runs, milliseconds")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        out = subprocess.run([str(exe), "--threads", str(threads), "--repeats", str(args.repeats)],
                             check=True, capture_output=True, text=True).stdout
        ember = json.loads(out)
        ref = torch_rows(args.repeats)
        print(f"\n{threads} thread{'s' if threads > 1 else ''}")
        print(f"  {'row':44} {'ember ms':>10} {'torch ms':>10} {'ember/torch':>12}")
        for name, t in ref.items():
            print(f"  {name:44} {ember[name]:10.2f} {t:10.2f} {ember[name] / t:12.2f}")
        mem_e = json.loads(subprocess.run([str(exe), "--threads", str(threads), "--repeats", "2", "--only", step],
                                          check=True, capture_output=True, text=True).stdout)["max_rss_mb"]
        mem_t = float(subprocess.run([sys.executable, __file__, "--child", str(threads)],
                                     check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        print(f"  {'peak RSS, resnet20 step process (MB)':44} {mem_e:10.1f} {mem_t:10.1f} {mem_e / mem_t:12.2f}")
    print("\nTargets: <= 1.0 on the LeNet step, <= 1.5 on the ResNet-20 step, peak memory <= PyTorch's;"
          "\n<= 1.0 on the layer_norm, group_norm, conv_transpose2d and interpolate rows, and on the"
          "\ntensor-op rows of --ops-cpu-time.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
