#!/usr/bin/python3
"""Ember vs ONNX Runtime (CPU execution provider) on the same ONNX models, side by side.

Models: the ResNet-style and MobileNet-style networks of tests/onnx/torch_models.py, exported by
PyTorch (opset 13, symbolic batch). For 1 and 2 threads and batch 1 and 32, each runtime runs in
a process of its own (so that neither's thread pools or allocators touch the other's numbers):
it loads the model, makes the input, warms up, then times --repeats runs (median, p90) and
measures its peak memory during inference as the growth of the process's peak resident set
(VmHWM, reset through /proc/self/clear_refs after loading) over the resident set after loading,
the part of that growth that is anonymous memory (RssAnon after the runs over after loading: the
working memory, without the library code paged in on first use, which is file-backed and
reclaimable; both runtimes keep their buffers cached, so what a run allocates stays counted),
and its whole footprint: the peak resident set over the interpreter's with NumPy, before the
runtime is imported (its library, the loaded model, the runs). Ember also reports its
allocator's high-water mark (weights included).

ONNX Runtime comes from PyPI: the script makes a virtual environment (with the system's
packages, for NumPy) the first time, in ~/.cache/ember/ort-venv, and installs `onnxruntime`.

On a shared machine the speed moves between processes, so each configuration runs in --rounds
rounds, the two runtimes taking turns (Ember, ONNX Runtime, Ember, ...); the table shows each
runtime's round with the lowest median, and the ratio of those.

    /usr/bin/python3 bench/compare_onnxruntime.py [--build build] [--repeats 30] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path.home() / ".cache" / "ember" / "ort-venv"


def venv_python():
    py = VENV / "bin" / "python"
    if not py.exists():
        print(f"making {VENV} with onnxruntime from PyPI ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "onnxruntime"], check=True)
    return py


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def child(runtime, model, threads, batch, repeats):
    """Runs in its own process; prints one JSON line."""
    import numpy as np
    x = np.random.default_rng(0).standard_normal((batch, 3, 32, 32)).astype(np.float32)
    before_import = rss_kib("VmRSS")
    if runtime == "ember":
        import ember
        ember.set_num_threads(threads)
        m = ember.onnx.load(model)
        run = lambda: m(x)  # noqa: E731
        version = "ember " + ember.__version__
    else:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        run = lambda: s.run(None, {"x": x})  # noqa: E731
        version = "onnxruntime " + ort.__version__
    base = rss_kib("VmRSS")
    anon_base = rss_kib("RssAnon")
    load_peak = rss_kib("VmHWM")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current resident set
    for _ in range(3):
        y = run()
    ms = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        y = run()
        ms.append((time.perf_counter() - t0) * 1e3)
    peak = rss_kib("VmHWM") - base
    ms.sort()
    out = dict(version=version, median=statistics.median(ms), p90=ms[int(0.9 * (len(ms) - 1))],
               peak_mib=peak / 1024, anon_mib=(rss_kib("RssAnon") - anon_base) / 1024,
               total_mib=(max(load_peak, rss_kib("VmHWM")) - before_import) / 1024, checksum=float(np.asarray(y if runtime == "ember" else y[0]).sum()))
    if runtime == "ember":
        out["allocator_peak_mib"] = m.last_run()["peak_bytes"] / 2**20
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3,
                    help="processes per runtime and configuration, taking turns (the best is shown)")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        rt, model, threads, batch, repeats = args.child
        return child(rt, model, int(threads), int(batch), int(repeats))
    py = venv_python()
    env = dict(os.environ, PYTHONPATH=str(Path(args.build) / "python"), OMP_NUM_THREADS="1")
    sys.path.insert(0, str(ROOT / "tests" / "onnx"))
    import torch_models  # noqa: E402 (PyTorch exports the models)
    folder = Path(tempfile.mkdtemp(prefix="ember_ort_"))
    print(f"{'model':10} {'thr':>3} {'batch':>5} {'Ember ms (p90)':>16} {'ORT ms (p90)':>16} "
          f"{'ratio':>6} {'Ember MiB':>9} {'ORT MiB':>8} {'Ember anon':>10} {'ORT anon':>8} "
          f"{'Ember total':>11} {'ORT total':>9}  Ember allocator MiB")
    for name in torch_models.MODELS:
        path = str(folder / (name + ".onnx"))
        torch_models.export(name, path)
        for threads in (1, 2):
            for batch in (1, 32):
                res = {}
                for _ in range(max(args.rounds, 1)):
                    for rt in ("ember", "ort"):
                        env["OMP_NUM_THREADS"] = str(threads)
                        p = subprocess.run([str(py), __file__, "--child", rt, path, str(threads),
                                            str(batch), str(args.repeats)],
                                           env=env, capture_output=True, text=True)
                        if p.returncode:
                            sys.exit(f"{rt} failed on {name}:\n{p.stderr}")
                        r = json.loads(p.stdout.strip().splitlines()[-1])
                        if rt not in res or r["median"] < res[rt]["median"]:
                            res[rt] = r
                e, o = res["ember"], res["ort"]
                print(f"{name:10} {threads:3} {batch:5} {e['median']:8.2f} ({e['p90']:5.2f}) "
                      f"{o['median']:8.2f} ({o['p90']:5.2f}) {e['median'] / o['median']:6.2f} "
                      f"{e['peak_mib']:9.1f} {o['peak_mib']:8.1f} {e['anon_mib']:10.1f} "
                      f"{o['anon_mib']:8.1f} {e['total_mib']:11.1f} {o['total_mib']:9.1f}  "
                      f"{e['allocator_peak_mib']:.1f}",
                      flush=True)
    print(f"({res['ember']['version']}, {res['ort']['version']}; models in {folder})")


if __name__ == "__main__":
    main()
