"""Shows which convolution algorithm Ember picks for a few layer shapes and why, under the
default (heuristic) policy and the deterministic one, then forces one by name.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/inspect_algos.py [device]
"""
import sys

import ember

conv = ember.backends.conv

SHAPES = [  # (name, input NCHW, weight KCRS, stride, padding)
    ("lenet conv1 (8x8 digits)", (64, 1, 8, 8), (16, 1, 3, 3), 1, 1),
    ("resnet20 3x3", (128, 16, 32, 32), (16, 16, 3, 3), 1, 1),
    ("strided 3x3", (32, 32, 16, 16), (64, 32, 3, 3), 2, 1),
    ("large 7x7", (8, 3, 64, 64), (32, 3, 7, 7), 1, 3),
]


def show(device):
    for name, x, w, stride, pad in SHAPES:
        r = conv.explain(x, w, stride=stride, padding=pad, device=device)
        print(f"{name}: {r['key']}")
        print(f"  policy {r['policy']}: chose {r['chosen'] or '(none)'} - {r['reason']}")
        for c in sorted(r["candidates"], key=lambda c: (c["rank"] < 0, c["rank"])):
            mark = "*" if c["chosen"] else " "
            rank = c["rank"] if c["rank"] >= 0 else "-"
            print(f"   {mark} {rank:>2} {c['name']:<20} {c['backend']:<10} "
                  f"{'det' if c['deterministic'] else 'nondet':<6} {c['reason']}")


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    print(f"algorithms: {', '.join(conv.algo_names())}\n")
    show(device)
    print("\nwith set_deterministic(True):")
    conv.set_deterministic(True)
    show(device)
    conv.set_deterministic(False)
    conv.set_algo("direct")
    x, w = ember.randn(2, 3, 8, 8), ember.randn(4, 3, 3, 3)
    print(f"\nforced 'direct': output shape {ember.conv2d(x, w, padding=1).shape}")
    conv.set_algo(None)


if __name__ == "__main__":
    main()
