"""A small simulation of DistributedDataParallel's step time at 8, 64 and 512 GPUs: how long the
bucketed gradient all-reduce takes with NCCL's ring and tree algorithms at published bandwidths,
and how much of it hides behind the backward pass (docs/distributed.md, "Scaling out").

Input: a profile written by `bench_dist --profile FILE.json` (forward, backward and optimiser
times, when each gradient was ready during the backward pass, the buckets), optionally rescaled to
the compute time of a GPU step (--compute-ms). The simulation replays the backward pass: bucket b
is ready when its last gradient is; the all-reduces run one after another on one stream (as
NCCL's do), each starting when its bucket is ready and the previous one has finished:

    start_b = max(ready_b, end_{b-1}),  end_b = start_b + T(bytes_b, N)
    step    = forward + max(backward, end_last) + optimiser

T is NCCL's cost model in alpha-beta form (nccl-tests, doc/PERFORMANCE.md: an all-reduce of S
bytes moves 2(N-1)/N * S per GPU, so busbw = algbw * 2(N-1)/N):
    ring: 2(N-1) * alpha + 2(N-1)/N * S / B        tree: 2 log2(N) * alpha + 2(N-1)/N * S / B
and NCCL picks the cheaper (the tree wins at small sizes and many ranks). B is the bus bandwidth
of the slowest link a ring crosses: NVLink inside an 8-GPU node, the node's network between nodes.

Published figures used (the defaults; override them with the options):
  - NVLink 4 on H100 SXM: 900 GB/s per GPU, both directions together (NVIDIA H100 Tensor Core GPU
    datasheet), so 450 GB/s each way; NCCL reaches about 80% of it: --nvlink-gbs 360.
  - Between nodes: one 400 Gb/s NDR InfiniBand adapter (ConnectX-7) per GPU, as in a DGX H100
    (NVIDIA DGX H100 user guide): 50 GB/s each way per GPU; about 90% of it: --net-gbs 45.
  - alpha, the latency of one step of the algorithm: 2 us inside a node, 6 us between nodes (a
    model parameter of this script, of the order of NCCL's own tuning tables, not a measurement).

usage: ddp_scaling.py PROFILE.json [--compute-ms MS] [--bucket-mb 25 ...]
"""
import argparse
import json
import math


def allreduce_us(size, n, gpn, nvlink_gbs, net_gbs, alpha_intra_us, alpha_inter_us):
    """Microseconds for NCCL's cheaper algorithm (ring or tree) to all-reduce `size` bytes."""
    if n == 1:
        return 0.0, "-"
    inter = n > gpn
    bw = (net_gbs if inter else nvlink_gbs) * 1e3  # bytes per microsecond
    alpha = alpha_inter_us if inter else alpha_intra_us
    volume = 2 * (n - 1) / n * size / bw
    ring = 2 * (n - 1) * alpha + volume
    tree = 2 * math.ceil(math.log2(n)) * alpha + volume
    return (ring, "ring") if ring <= tree else (tree, "tree")


def buckets_for(params, cap_bytes):
    """PyTorch's (and Ember's) assignment: reverse registration order, the first bucket capped at
    1 MiB, the others at cap_bytes (one dtype: float32 gradients)."""
    out, cur, size = [], [], 0
    for i in reversed(range(len(params))):
        cur.append(i)
        size += params[i]["bytes"]
        limit = min(cap_bytes, 1 << 20) if not out else cap_bytes
        if size >= limit:
            out.append(cur)
            cur, size = [], 0
    if cur:
        out.append(cur)
    return out


def simulate(profile, scale, n, cap_mb, args):
    params = profile["params"]
    buckets = buckets_for(params, int(cap_mb * 1024 * 1024))
    end, total_comm, algo = 0.0, 0.0, "-"
    backward = profile["backward_ms"] * scale * 1e3  # us
    for b in buckets:
        ready = max(params[i]["ready_ms"] for i in b) * scale * 1e3
        size = sum(params[i]["bytes"] for i in b)
        t, algo = allreduce_us(size, n, args.gpus_per_node, args.nvlink_gbs, args.net_gbs,
                               args.alpha_intra_us, args.alpha_inter_us)
        end = max(ready, end) + t
        total_comm += t
    exposed = max(0.0, end - backward)
    step = (profile["forward_ms"] + profile["optimizer_ms"]) * scale * 1e3 + backward + exposed
    return {"buckets": len(buckets), "comm_ms": total_comm / 1e3, "exposed_ms": exposed / 1e3,
            "step_ms": step / 1e3, "hidden": 1.0 - exposed / total_comm if total_comm else 1.0,
            "algo": algo}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("--compute-ms", type=float, default=0.0,
                    help="rescale forward+backward+optimiser to this many ms (0: as measured)")
    ap.add_argument("--bucket-mb", type=float, nargs="+", default=[1.0, 25.0, 100.0])
    ap.add_argument("--gpus", type=int, nargs="+", default=[8, 64, 512])
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--nvlink-gbs", type=float, default=360.0)
    ap.add_argument("--net-gbs", type=float, default=45.0)
    ap.add_argument("--alpha-intra-us", type=float, default=2.0)
    ap.add_argument("--alpha-inter-us", type=float, default=6.0)
    args = ap.parse_args()
    p = json.load(open(args.profile))
    measured = p["forward_ms"] + p["backward_ms"] + p["optimizer_ms"]
    scale = args.compute_ms / measured if args.compute_ms > 0 else 1.0
    grads = sum(q["bytes"] for q in p["params"])
    print(f"{p['model']}, batch {p['batch']} per GPU: {grads / 2**20:.1f} MiB of gradients in "
          f"{len(p['params'])} tensors; measured on {p['device']} ({p['threads']} threads): "
          f"forward {p['forward_ms']:.1f} ms, backward {p['backward_ms']:.1f} ms, optimiser "
          f"{p['optimizer_ms']:.1f} ms" + (f"; rescaled to a {args.compute_ms:g} ms step"
                                            if scale != 1.0 else ""))
    print(f"links: NVLink {args.nvlink_gbs:g} GB/s inside {args.gpus_per_node}-GPU nodes, network "
          f"{args.net_gbs:g} GB/s per GPU between nodes; alpha {args.alpha_intra_us:g}/"
          f"{args.alpha_inter_us:g} us")
    print(f"{'GPUs':>5} {'bucket MB':>9} {'buckets':>7} {'algo':>5} {'all-reduce ms':>13} "
          f"{'exposed ms':>10} {'hidden':>7} {'step ms':>8} {'efficiency':>10}")
    compute = measured * scale
    for n in args.gpus:
        for cap in args.bucket_mb:
            r = simulate(p, scale, n, cap, args)
            print(f"{n:5d} {cap:9g} {r['buckets']:7d} {r['algo']:>5} {r['comm_ms']:13.3f} "
                  f"{r['exposed_ms']:10.3f} {100 * r['hidden']:6.0f}% {r['step_ms']:8.2f} "
                  f"{100 * compute / r['step_ms']:9.0f}%")


if __name__ == "__main__":
    main()
