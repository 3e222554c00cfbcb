"""`ember train` on two devices from the same seed: the per-step losses of the first steps must
agree within a relative tolerance (the GPU kernels sum in another order than the CPU ones, so
bit-for-bit equality is not expected).

usage: train_devices_match.py EMBER DEVICE_A DEVICE_B [--steps N] [--rtol R] [extra train args...]
"""
import argparse
import re
import subprocess
import sys


def losses(ember, device, steps, extra):
    cmd = [ember, "train", "--device", device, "--max-steps", str(steps), "--log-steps",
           "--epochs", "1"] + extra
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    found = [float(m.group(2)) for m in re.finditer(r"^step (\d+) loss (\S+)$", run.stdout, re.M)]
    if len(found) != steps:
        sys.exit(f"{' '.join(cmd)}: expected {steps} step losses, found {len(found)}:\n{run.stdout}")
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ember")
    ap.add_argument("device_a")
    ap.add_argument("device_b")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rtol", type=float, default=1e-4)
    args, extra = ap.parse_known_args()
    a = losses(args.ember, args.device_a, args.steps, extra)
    b = losses(args.ember, args.device_b, args.steps, extra)
    worst = 0.0
    for i, (x, y) in enumerate(zip(a, b), 1):
        rel = abs(x - y) / max(abs(x), 1e-30)
        worst = max(worst, rel)
        flag = "" if rel <= args.rtol else "  <-- over tolerance"
        print(f"step {i:3d}  {args.device_a} {x:.9g}  {args.device_b} {y:.9g}  rel {rel:.2e}{flag}")
    print(f"worst relative difference {worst:.2e} (tolerance {args.rtol:g})")
    if worst > args.rtol:
        sys.exit(1)


if __name__ == "__main__":
    main()
