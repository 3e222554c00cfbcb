"""`ember train --distributed` against single-process training at the same global batch
(docs/distributed.md): the per-step losses of rank 0's log equal the single process's within a
relative tolerance, the refusals say how to launch, and a checkpoint written at world size W
resumes in one process.

usage: train_distributed.py EMBER MPIRUN CASE
CASE: refusals | digits_cpu_np2 | digits_cpu_np3 | digits_emu_np2 | resnet20_cpu_np2 | checkpoint
"""
import os
import re
import struct
import subprocess
import sys
import tempfile

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMP_NUM_THREADS="1")
for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
    ENV.pop(v, None)


def run(cmd, expect_ok=True):
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=800)
    if expect_ok and r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def losses(out, steps, what):
    found = [float(m.group(1)) for m in re.finditer(r"step \d+ loss ([-+.0-9eE]+)$", out, re.M)]
    if len(found) != steps:
        sys.exit(f"{what}: expected {steps} step losses, found {len(found)}:\n{out}")
    return found


def compare(ember, mpirun, np, steps, train_args, rtol=1e-5, dist_args=()):
    common = ["train", "--max-steps", str(steps), "--log-steps", "--threads", "1"] + train_args
    single = run([ember] + common)
    multi = run([mpirun, "--oversubscribe", "-np", str(np), ember] + common +
                ["--distributed", "--dist-timeout", "120"] + list(dist_args))
    print(multi.stdout.splitlines()[0])
    print(next(line for line in multi.stdout.splitlines() if line.startswith("distributed:")))
    a = losses(single.stdout, steps, "single process")
    b = losses(multi.stdout, steps, f"{np} ranks")
    worst = 0.0
    for i, (x, y) in enumerate(zip(a, b), 1):
        rel = abs(x - y) / max(abs(x), 1e-30)
        worst = max(worst, rel)
        if rel > rtol and worst == rel or i % 10 == 0 or os.environ.get("ALLSTEPS"):
            print(f"step {i:3d}  1 process {x:.9g}  {np} ranks {y:.9g}  rel {rel:.2e}")
    print(f"{np} ranks vs 1 process, {steps} steps: worst relative difference {worst:.2e} "
          f"(tolerance {rtol:g})")
    if worst > rtol:
        sys.exit(1)
    return multi


def fake_cifar(folder, records=24, seed=5):
    """CIFAR-10's binary format with random pixels and labels (nn/datasets.h accepts any count)."""
    import random
    rng = random.Random(seed)
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        with open(os.path.join(folder, name), "wb") as f:
            for _ in range(records):
                f.write(struct.pack("B", rng.randrange(10)))
                f.write(bytes(rng.randrange(256) for _ in range(3072)))


def main():
    ember, mpirun, case = sys.argv[1:4]
    if case == "refusals":
        r = run([ember, "train", "--distributed", "--max-steps", "1"], expect_ok=False)
        print(r.stderr)
        assert r.returncode == 1, r.returncode
        assert "not started for distributed training" in r.stderr, r.stderr
        assert "mpirun -np 2 ember train --distributed" in r.stderr, r.stderr
        assert "MASTER_ADDR" in r.stderr, r.stderr
        assert not r.stdout.strip(), r.stdout
        r = run([ember, "train", "--dist-timeout", "5"], expect_ok=False)
        assert r.returncode != 0 and "--distributed" in r.stderr, r.stderr
        for bad in ("0", "-1", "nan", "inf"):
            for opt in ("--dist-timeout", "--bucket-mb"):
                r = run([ember, "train", "--distributed", f"{opt}={bad}"], expect_ok=False)
                assert r.returncode != 0 and opt in r.stderr and f"'{bad}'" in r.stderr, r.stderr
        r = run([ember, "train", "--distributed", "--dist-backend", "gloo"], expect_ok=False)
        assert r.returncode != 0 and "gloo" in r.stderr, r.stderr
        print("refusals: PASSED")
    elif case == "digits_cpu_np2":
        compare(ember, mpirun, 2, 50, ["--epochs", "2"])
    elif case == "digits_cpu_np3":
        # 31 does not divide by 3: shares of 11, 10 and 10, each rank's loss weighted by its share;
        # the epoch's last batch (1442 = 46 x 31 + 16) splits 6/5/5.
        compare(ember, mpirun, 3, 50, ["--epochs", "2", "--batch-size", "31"],
                dist_args=["--bucket-mb", "0.01"])
        # At batch 32 the last batch holds 2 samples, fewer than 3 ranks: skipped, and said.
        r = run([mpirun, "--oversubscribe", "-np", "3", ember, "train", "--distributed",
                 "--epochs", "2", "--max-steps", "47", "--threads", "1"])
        assert "step skipped: the last batch has 2 samples, fewer than the 3 ranks" in r.stdout, \
            r.stdout
        print("the 2-sample batch was skipped on 3 ranks, and rank 0 said so")
    elif case == "digits_emu_np2":
        compare(ember, mpirun, 2, 50, ["--epochs", "2", "--device", "emu"])
    elif case == "resnet20_cpu_np2":
        with tempfile.TemporaryDirectory() as d:
            fake_cifar(d)
            # In float64: in float32 a change of rounding anywhere (the order of a sum, another
            # convolution algorithm) flips some of ResNet-20's ~10^6 ReLU inputs that lie within
            # float32's rounding of zero, and the runs part by 1e-5 within a few steps, two
            # single-process runs alike (docs/distributed.md).
            compare(ember, mpirun, 2, 50, ["--model", "resnet20", "--data", f"cifar10:{d}",
                                           "--batch-size", "8", "--epochs", "4", "--lr", "0.02",
                                           "--dtype", "float64"],
                    dist_args=["--sync-bn"])
    elif case == "checkpoint":
        with tempfile.TemporaryDirectory() as d:
            ckpt = os.path.join(d, "ckpt.safetensors")
            r = run([mpirun, "--oversubscribe", "-np", "2", ember, "train", "--distributed",
                     "--epochs", "1", "--threads", "1", "--save", ckpt])
            assert f"checkpoint: {ckpt}" in r.stdout, r.stdout
            assert os.listdir(d) == ["ckpt.safetensors"], os.listdir(d)
            r = run([ember, "train", "--epochs", "2", "--threads", "1", "--resume", ckpt])
            assert f"resumed from {ckpt} after epoch 1" in r.stdout, r.stdout
            assert "epoch 2/2" in r.stdout, r.stdout
            # Epoch 1 on 2 ranks is epoch 1 of one process, so the resumed run ends as a straight
            # 2-epoch run of one process does.
            straight = run([ember, "train", "--epochs", "2", "--threads", "1"])
            last = lambda out: re.findall(r"epoch 2/2 46/46 (loss \S+ acc \S+) \| test acc (\S+)", out)[-1]
            print(f"checkpoint: written by rank 0 of 2, resumed in one process: epoch 2 {last(r.stdout)}; "
                  f"one process all along: {last(straight.stdout)}")
            assert last(r.stdout) == last(straight.stdout)
    else:
        sys.exit(f"unknown case {case}")


if __name__ == "__main__":
    main()
