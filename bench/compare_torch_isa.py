#!/usr/bin/python3
"""The ResNet-20 training step (CIFAR-sized random batch of 128) under each EMBER_CPU_ISA cap
(avx512, avx2, baseline: the cpu implicit GEMM's micro-kernels, or none) next to PyTorch's, at 1
and 2 threads. Each round runs every cap and PyTorch in turn, so that a shared machine's load
falls on all of them alike; the summary gives the best and the median of the rounds.

    /usr/bin/python3 bench/compare_torch_isa.py [--build build] [--rounds 3]

Caps the CPU lacks are left out (EMBER_CPU_ISA refuses them). Needs Debian's python3-torch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare_torch  # noqa: E402  (the same PyTorch model and step)

STEP = "step resnet20 cifar b128"


def ember_ms(exe, isa, threads):
    env = dict(os.environ, EMBER_CPU_ISA=isa)
    r = subprocess.run([str(exe), "--threads", str(threads), "--repeats", "3", "--only", STEP],
                       env=env, capture_output=True, text=True)
    return json.loads(r.stdout)[STEP] if r.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    exe = Path(args.build) / "bin" / "bench_train_step"
    if not exe.exists():
        sys.exit(f"{exe} not found: build with EMBER_BENCH=ON first")
    caps = ("avx512", "avx2", "baseline")
    res = {}
    for _ in range(args.rounds):
        for threads in (1, 2):
            for isa in caps:
                t = ember_ms(exe, isa, threads)
                if t is not None:
                    res.setdefault((isa, threads), []).append(t)
            torch.set_num_threads(threads)
            res.setdefault(("torch", threads), []).append(compare_torch.torch_rows(3, only=STEP)[STEP])
    print(f"{STEP}: Ember under each EMBER_CPU_ISA vs PyTorch {torch.__version__}, "
          f"{args.rounds} rounds, ms")
    for threads in (1, 2):
        ref = res[("torch", threads)]
        print(f"\n{threads} thread{'s' if threads > 1 else ''}: torch best {min(ref):.0f} "
              f"(median {statistics.median(ref):.0f})")
        for isa in caps:
            v = res.get((isa, threads))
            if not v:
                print(f"  EMBER_CPU_ISA={isa:8} SKIPPED: this CPU lacks it")
                continue
            print(f"  EMBER_CPU_ISA={isa:8} best {min(v):6.0f} (median {statistics.median(v):6.0f})  "
                  f"ember/torch best {min(v) / min(ref):.2f}, median "
                  f"{statistics.median(v) / statistics.median(ref):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
