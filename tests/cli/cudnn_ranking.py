"""cuDNN's ranking of engine configs without a GPU: `ember algos --cudnn-device` for every
ResNet-50 and VGG-16 layer in all three directions on the shipped H200 description (float32 FMA,
then TF32 allowed), and one shape on the A100 description under the deterministic policy. Every
(layer, direction) must have at least one config to try, and the whole output must equal the
golden file, which is cuDNN's answer reviewed like code: a change of cuDNN, of the descriptions
or of Ember's filtering shows up as a diff here. Run with EMBER_UPDATE_GOLDEN=1 to rewrite it.

usage: cudnn_ranking.py EMBER SOURCE_DIR
"""
import difflib
import os
import subprocess
import sys

RUNS = [
    ["--model", "resnet50", "--batch", "32", "--cudnn-device", "data/cudnn/h200.json"],
    ["--model", "vgg16", "--batch", "32", "--cudnn-device", "data/cudnn/h200.json"],
    ["--model", "vgg16", "--batch", "32", "--cudnn-device", "data/cudnn/h200.json",
     "--allow-tf32"],
    ["--input", "8,64,56,56", "--weight", "64,64,3,3", "--cudnn-device", "data/cudnn/a100.json",
     "--allow-tf32", "--policy", "deterministic", "--show-dropped"],
]
GOLDEN = "tests/cli/golden/cudnn_ranking.txt"


def main():
    ember, source = sys.argv[1], sys.argv[2]
    out = []
    for args in RUNS:
        r = subprocess.run([ember, "algos"] + args, capture_output=True, text=True, timeout=600,
                           cwd=source)
        if r.returncode != 0:
            sys.exit(f"`ember algos {' '.join(args)}` exited {r.returncode}:\n{r.stdout}\n"
                     f"{r.stderr}")
        if "pairs have a config to try" not in r.stdout:
            sys.exit(f"`ember algos {' '.join(args)}`: no summary line:\n{r.stdout}")
        out.append(f"$ ember algos {' '.join(args)}\n{r.stdout}")
    text = "\n".join(out)
    path = os.path.join(source, GOLDEN)
    if os.environ.get("EMBER_UPDATE_GOLDEN") == "1":
        with open(path, "w") as f:
            f.write(text)
        print(f"wrote {path}")
        return
    with open(path) as f:
        want = f.read()
    if text != want:
        diff = list(difflib.unified_diff(want.splitlines(), text.splitlines(), GOLDEN, "now",
                                         lineterm=""))
        print("\n".join(diff[:80]))
        sys.exit(f"cuDNN's ranking differs from {GOLDEN} ({len(diff)} diff lines); if the change "
                 "is meant (a new cuDNN, a new description), review it and rerun with "
                 "EMBER_UPDATE_GOLDEN=1")
    print(f"cuDNN's ranking equals {GOLDEN}: {text.count('pairs have a config to try')} runs")


if __name__ == "__main__":
    main()
