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

--layers compares single layers instead, batch 1 on 1 and 2 threads: ResNet-style's stride-1
3x3 convolutions (Conv + Relu, 16 channels on 32 x 32, 32 on 16 x 16, 64 on 8 x 8) as chains of
one and of eight identical nodes; a layer's time is (eight - one) / 7, which leaves out each
runtime's fixed cost per run (and ONNX Runtime's layout changes at the model's ends), and which
ONNX Runtime's own profile overstates by about 3 us a node.
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


def input_shape(model, batch):
    """The model's input shape with its first dim set to `batch`."""
    import onnx
    dims = onnx.load(model).graph.input[0].type.tensor_type.shape.dim
    return (batch,) + tuple(d.dim_value for d in dims[1:])


def child(runtime, model, threads, batch, repeats):
    """Runs in its own process; prints one JSON line."""
    import numpy as np
    x = np.random.default_rng(0).standard_normal(input_shape(model, batch)).astype(np.float32)
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
        run = lambda: s.run(None, {s.get_inputs()[0].name: x})  # noqa: E731
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


def conv_chain(path, channels, size, nodes):
    """Writes a model of `nodes` Conv (3x3, padding 1, bias) + Relu pairs on [1, channels, size,
    size]."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(nodes)
    inits, graph_nodes, cur = [], [], "x"
    for i in range(nodes):
        w = (rng.standard_normal((channels, channels, 3, 3)) * 0.05).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"),
                  numpy_helper.from_array(np.zeros(channels, np.float32), f"b{i}")]
        out = "y" if i == nodes - 1 else f"r{i}"
        graph_nodes += [helper.make_node("Conv", [cur, f"w{i}", f"b{i}"], [f"c{i}"],
                                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                        helper.make_node("Relu", [f"c{i}"], [out])]
        cur = out
    shape = [1, channels, size, size]
    graph = helper.make_graph(graph_nodes, "conv_chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


def median_of(py, env, runtime, path, threads, repeats):
    env["OMP_NUM_THREADS"] = str(threads)
    p = subprocess.run([str(py), __file__, "--child", runtime, path, str(threads), "1",
                        str(repeats)], env=env, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{runtime} failed on {path}:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])["median"]


def layers(py, env, repeats, rounds):
    folder = Path(tempfile.mkdtemp(prefix="ember_ort_layers_"))
    print(f"{'layer':22} {'thr':>3} {'Ember ms':>9} {'ORT ms':>9} {'ratio':>6}")
    for channels, size in ((16, 32), (32, 16), (64, 8)):
        paths = {}
        for nodes in (1, 8):
            paths[nodes] = str(folder / f"chain{channels}x{size}_{nodes}.onnx")
            conv_chain(paths[nodes], channels, size, nodes)
        for threads in (1, 2):
            best = {}
            for _ in range(rounds):  # the runtimes and chain lengths taking turns
                for rt in ("ember", "ort"):
                    for n in (1, 8):
                        m = median_of(py, env, rt, paths[n], threads, repeats)
                        best[rt, n] = min(m, best.get((rt, n), m))
            per = {rt: (best[rt, 8] - best[rt, 1]) / 7 for rt in ("ember", "ort")}
            name = f"{channels}->{channels} 3x3 {size}x{size}"
            print(f"{name:22} {threads:3} {per['ember']:9.4f} {per['ort']:9.4f} "
                  f"{per['ember'] / per['ort']:6.2f}", flush=True)
    print(f"(batch 1, each node Conv + Relu; models in {folder})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3,
                    help="processes per runtime and configuration, taking turns (the best is shown)")
    ap.add_argument("--layers", action="store_true",
                    help="single stride-1 3x3 layers as chains of nodes, batch 1 (see above)")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        rt, model, threads, batch, repeats = args.child
        return child(rt, model, int(threads), int(batch), int(repeats))
    py = venv_python()
    env = dict(os.environ, PYTHONPATH=str(Path(args.build) / "python"), OMP_NUM_THREADS="1")
    if args.layers:
        return layers(py, env, max(args.repeats, 200), max(args.rounds, 1))
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
