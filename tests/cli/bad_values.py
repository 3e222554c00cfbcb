"""Every numeric option of every `ember` command refuses a bad value before anything runs: a
non-zero exit status (not a crash), nothing on stdout, and one message on stderr that names the
option, the value given and what is allowed. Good values, the edges of each range among them,
still run, and an explicit value is the one used.

usage: bad_values.py EMBER
"""
import subprocess
import sys

NOT_FINITE = ["nan", "-nan", "NaN", "inf", "-inf", "infinity", "1e999"]
NOT_A_NUMBER = ["abc", "1,5", "2x", " 1"]
NOT_AN_INTEGER = NOT_A_NUMBER + NOT_FINITE + ["1.5", "1e3", "0x10", "99999999999999999999999"]

# command -> option -> (what the message must say is allowed, bad values)
BAD = {
    "train": {
        "--epochs": ("in [1, 100000]", ["0", "-1", "100001"] + NOT_AN_INTEGER),
        "--batch-size": ("in [1, 1048576]", ["0", "-3", "1048577"] + NOT_AN_INTEGER),
        "--lr": ("finite number > 0", ["0", "-0", "-1", "1e-400"] + NOT_FINITE + NOT_A_NUMBER),
        "--momentum": ("in [0, 1)", ["1", "-0.1", "1.5"] + NOT_FINITE + NOT_A_NUMBER),
        "--weight-decay": ("finite number >= 0", ["-1e-9", "-1"] + NOT_FINITE + NOT_A_NUMBER),
        "--seed": ("in [0, 18446744073709551615]",
                   ["-1", "18446744073709551616"] + NOT_AN_INTEGER),
        "--threads": ("in [0, 4096]", ["-1", "4097"] + NOT_AN_INTEGER),
        "--max-steps": ("in [1, 1099511627776]", ["0", "-1", "1099511627777"] + NOT_AN_INTEGER),
        "--dist-timeout": ("in (0, 604800]", ["0", "-1", "604801"] + NOT_FINITE + NOT_A_NUMBER),
        "--bucket-mb": ("in (0, 65536]", ["0", "-0.5", "65537"] + NOT_FINITE + NOT_A_NUMBER),
    },
    "algos": {
        "--stride": ("in [1, 2147483647]", ["0", "-1", "2147483648"] + NOT_AN_INTEGER),
        "--padding": ("in [0, 2147483647]", ["-1", "2147483648"] + NOT_AN_INTEGER),
        "--dilation": ("in [1, 2147483647]", ["0", "-2"] + NOT_AN_INTEGER),
        "--groups": ("in [1, 2147483647]", ["0", "-1"] + NOT_AN_INTEGER),
        "--repeats": ("in [5, 1000000]", ["0", "-1", "4", "1000001"] + NOT_AN_INTEGER),
        "--dtype": ("one of float32, float64", ["int32", "f32", "float"]),
        "--device": ("cpu, cuda[:N] or emu[:N]", ["gpu", "cuda:x"]),
        "--policy": ("one of heuristic, benchmark, deterministic", ["fast", "forced"]),
        "--model": ("one of lenet, resnet20, vgg_small, resnet50, vgg16", ["mlp", "alexnet"]),
    },
    # Options that only make sense with --model are refused as bad values with it.
    "algos --model resnet20": {
        "--batch": ("in [1, 4096]", ["0", "-1", "4097"] + NOT_AN_INTEGER),
        "--image-size": ("in [1, 4096]", ["0", "4097"] + NOT_AN_INTEGER),
        "--in-channels": ("in [1, 4096]", ["0", "4097"] + NOT_AN_INTEGER),
    },
    "demo": {
        "--size": ("in [1, 8192]", ["0", "-1", "8193"] + NOT_AN_INTEGER),
    },
}
# Shapes take four sizes; a bad one in any place is refused.
SHAPES = {"--input": [16, 16, 32, 32], "--weight": [16, 16, 3, 3]}
SHAPE_BAD = ["0", "-1", "2147483648", "nan", "2.5"]

# Good values, each range's edges included: (arguments, text stdout must hold).
GOOD = [
    (["train", "--epochs", "1", "--max-steps", "2", "--batch-size", "7", "--lr", "0.01",
      "--momentum", "0", "--weight-decay", "0", "--seed", "18446744073709551615", "--threads", "1"],
     ["lr 0.01 ", "batch 7,", "seed 18446744073709551615", "stopped after 2 steps"]),
    # Decimal, whatever the leading zeros (CLI11 alone would read 010 as octal 8); 0 threads: all.
    (["train", "--epochs", "010", "--max-steps", "1", "--threads", "0", "--momentum", "0.99"],
     ["epoch 1/10 "]),
    (["algos", "--input", "1", "2", "5", "5", "--weight", "2", "1", "3", "3", "--groups", "2",
      "--stride", "2", "--padding", "0", "--dilation", "1", "--repeats", "5"],
     ["stride 2, padding 0, dilation 1, groups 2"]),
    # Shapes as N,C,H,W too.
    (["algos", "--input", "1,2,5,5", "--weight", "2,1,3,3", "--groups", "2", "--padding", "0",
      "--policy", "deterministic", "--dtype", "float64"],
     ["x[1, 2, 5, 5] w[2, 1, 3, 3] -> y[1, 2, 3, 3]", "float64 on cpu, deterministic"]),
    (["demo", "--device", "cpu", "--size", "1"], ["demo: OK"]),
]

# An explicit value is used even where it equals a default's placeholder: AdamW with
# --weight-decay 0 takes the same steps as Adam (no decay at all), not AdamW's default 0.01.
SAME_STEPS = (["--optimizer", "adamw", "--weight-decay", "0"], ["--optimizer", "adam"])
OTHER_STEPS = ["--optimizer", "adamw"]


def run(ember, args):
    return subprocess.run([ember] + args, capture_output=True, text=True, timeout=600)


def check_bad(ember, args, option, value, allowed):
    """Returns a description of what went wrong, or None."""
    r = run(ember, args)
    what = " ".join(args)
    if r.returncode <= 0 or r.returncode >= 128:  # 0: accepted; negative or >= 128: a crash
        return f"`ember {what}`: exit status {r.returncode}, expected a refusal\n{r.stderr}"
    if r.stdout:
        return f"`ember {what}`: something ran:\n{r.stdout}"
    for part in (option, f"'{value}'", allowed):
        if part not in r.stderr:
            return f"`ember {what}`: stderr does not say {part!r}:\n{r.stderr}"
    return None


def main():
    ember = sys.argv[1]
    failures, checked = [], 0
    for command, options in BAD.items():
        for option, (allowed, values) in options.items():
            for value in values:
                checked += 1
                failure = check_bad(ember, command.split() + [f"{option}={value}"], option,
                                    value, allowed)
                if failure:
                    failures.append(failure)
    for option, good in SHAPES.items():
        for place in range(4):
            for value in SHAPE_BAD:
                sizes = [str(s) for s in good]
                sizes[place] = value
                for args in (["algos", option] + sizes, ["algos", option, ",".join(sizes)]):
                    checked += 1
                    failure = check_bad(ember, args, option, value, "in [1, 2147483647]")
                    if failure:
                        failures.append(failure)
    # Wrong counts and combinations: (arguments, what stderr must say).
    for args, says in [(["--input", "1,2,3"], ["--input", "4 required"]),
                       (["--weight", "1,2,3,3,3"], ["--weight", "4 required"]),
                       (["--model", "resnet20", "--input", "1,3,8,8"], ["--input", "--model"]),
                       (["--batch", "2"], ["--batch", "--model"]),
                       (["--save", "/nonexistent-dir/cache.json", "--input", "1,1,3,3",
                         "--weight", "1,1,3,3"], ["--save", "/nonexistent-dir/cache.json"])]:
        checked += 1
        r = run(ember, ["algos"] + args)
        if r.returncode <= 0 or r.returncode >= 128 or r.stdout or \
                any(part not in r.stderr for part in says):
            failures.append(f"`ember algos {' '.join(args)}`: exit status {r.returncode}, "
                            f"expected a refusal saying {says}:\n{r.stdout}\n{r.stderr}")
    for args, expected in GOOD:
        checked += 1
        r = run(ember, args)
        missing = [e for e in expected if e not in r.stdout]
        if r.returncode != 0 or missing:
            failures.append(f"`ember {' '.join(args)}`: exit status {r.returncode}, "
                            f"missing {missing}:\n{r.stdout}\n{r.stderr}")
    def steps(args):
        r = run(ember, ["train", "--epochs", "1", "--max-steps", "8", "--log-steps"] + args)
        return [line for line in r.stdout.splitlines() if line.startswith("step ")]
    checked += 1
    a, b, c = steps(SAME_STEPS[0]), steps(SAME_STEPS[1]), steps(OTHER_STEPS)
    if len(a) != 8 or a != b or a == c:
        failures.append(f"{SAME_STEPS[0]} should take the steps of {SAME_STEPS[1]} and not those "
                        f"of {OTHER_STEPS}:\n{a}\n{b}\n{c}")
    for f in failures:
        print(f"FAIL {f}")
    print(f"{checked - len(failures)} of {checked} command lines behaved")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
