#!/usr/bin/python3
"""The ResNet-20 training step (CIFAR-sized random batch of 128) under each EMBER_CPU_ISA cap
(avx512, avx2, baseline: the cpu implicit GEMM's micro-kernels, or none) next to PyTorch's under
the same cap, at 1 and 2 threads. PyTorch runs in a child process with its own caps set to match
(ATEN_CPU_CAPABILITY for its vectorised kernels, ONEDNN_MAX_CPU_ISA for oneDNN's convolutions:
avx2 is AVX2, baseline is SSE4.1 and ATen's default), so each row compares the two libraries as
they would run on a CPU that has only that instruction set. Each round runs every cap of both in
turn, so that a shared machine's load falls on all of them alike; the summary gives the best and
the median of the rounds.

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

STEP = "step resnet20 cifar b128"


def ember_ms(exe, isa, threads):
    env = dict(os.environ, EMBER_CPU_ISA=isa)
    r = subprocess.run([str(exe), "--threads", str(threads), "--repeats", "3", "--only", STEP],
                       env=env, capture_output=True, text=True)
    return json.loads(r.stdout)[STEP] if r.returncode == 0 else None


# PyTorch's environment for each cap: ATen's kernels and oneDNN's, no higher than the cap.
TORCH_CAPS = {
    "avx512": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "baseline": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}

# The child: the same PyTorch model and step as bench/compare_torch.py.
CHILD = """
import json, sys
sys.path.insert(0, {here!r})
import torch
import compare_torch
torch.set_num_threads({threads})
print(json.dumps(compare_torch.torch_rows(3, only={step!r})))
"""


def torch_ms(isa, threads):
    env = dict(os.environ, **TORCH_CAPS[isa])
    code = CHILD.format(here=str(Path(__file__).resolve().parent), threads=threads, step=STEP)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"PyTorch under {isa} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])[STEP]


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
                if t is None:
                    continue  # the CPU lacks it: PyTorch is not run under it either
                res.setdefault((isa, threads), []).append(t)
                res.setdefault(("torch " + isa, threads), []).append(torch_ms(isa, threads))
    print(f"{STEP}: Ember under each EMBER_CPU_ISA vs PyTorch {torch.__version__} under the same "
          f"cap, {args.rounds} rounds, ms")
    for threads in (1, 2):
        print(f"\n{threads} thread{'s' if threads > 1 else ''}:")
        for isa in caps:
            v = res.get((isa, threads))
            if not v:
                print(f"  {isa:8} SKIPPED: this CPU lacks it")
                continue
            ref = res[("torch " + isa, threads)]
            print(f"  {isa:8} ember best {min(v):6.0f} (median {statistics.median(v):6.0f}), "
                  f"torch best {min(ref):6.0f} (median {statistics.median(ref):6.0f}): "
                  f"ember/torch best {min(v) / min(ref):.2f}, median "
                  f"{statistics.median(v) / statistics.median(ref):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
