"""`ember train --amp` against float32 training from the same seed: the mixed-precision run's final
test accuracy must be within 0.5 points of the float32 run's (or better). With --overflow, a run
whose initial loss scale overflows float16 must log each skipped step with the scale backing
off, then train on to a finite loss.

usage: amp_accuracy.py EMBER DEVICE fp16|bf16 [--overflow] [extra train args...]
"""
import math
import re
import subprocess
import sys


def train(ember, args):
    cmd = [ember, "train"] + args
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def final_accuracy(out):
    m = re.search(r"final test accuracy: ([0-9.]+)%", out)
    if not m:
        sys.exit(f"no final accuracy in:\n{out}")
    return float(m.group(1))


def main():
    ember, device, amp = sys.argv[1:4]
    rest = sys.argv[4:]
    overflow = "--overflow" in rest
    extra = [a for a in rest if a != "--overflow"]
    common = ["--device", device, "--seed", "1"] + extra
    if overflow:
        out = train(ember, common + ["--amp", amp, "--loss-scale", "1e9", "--max-steps", "40",
                                     "--log-steps"])
        skips = re.findall(r"step (\d+): inf or NaN gradients, step skipped; loss scale (\S+) -> (\S+)",
                           out)
        if not skips:
            sys.exit(f"no skipped step logged:\n{out}")
        for _, before, after in skips:
            if not math.isclose(float(after), float(before) / 2, rel_tol=1e-5):
                sys.exit(f"the scale did not halve: {before} -> {after}")
        losses = [float(v) for v in re.findall(r"^step \d+ loss (\S+)$", out, re.M)]
        if len(losses) != 40 or not math.isfinite(losses[-1]):
            sys.exit(f"training did not go on to a finite loss: {losses[-5:]}")
        print(f"{len(skips)} skipped steps logged, scale {skips[0][1]} -> {skips[-1][2]}; "
              f"last loss {losses[-1]:.4f}")
        return
    f32 = final_accuracy(train(ember, common))
    mixed = final_accuracy(train(ember, common + ["--amp", amp]))
    print(f"float32 {f32:.2f}%, --amp {amp} {mixed:.2f}%")
    if mixed < f32 - 0.5:
        sys.exit(f"--amp {amp} reached {mixed:.2f}%, more than 0.5 points below float32's {f32:.2f}%")


if __name__ == "__main__":
    main()
