#!/usr/bin/python3
"""Converts the UCI optical-digits set carried by Debian's python3-sklearn into data/digits/digits.bin.

Run once, with the system Python, from the repository root:
    apt-get install -y python3-sklearn   # provides the CSV; nothing else is imported
    /usr/bin/python3 scripts/make_digits.py

The output format is documented in docs/data.md and data/digits/README.md. The split is fixed
and stratified: within each digit class, in the order of the CSV, every fifth image (the 5th,
10th, ...) is a test image and the others are training images. The file stores the training
images first (in CSV order), then the test images (in CSV order).
"""
import gzip
import struct
import sys
from pathlib import Path

SOURCE = Path("/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz")
TARGET = Path(__file__).resolve().parent.parent / "data" / "digits" / "digits.bin"
MAGIC = b"EMBRDIGT"
VERSION = 1
HEIGHT = WIDTH = 8
MAX_VALUE = 16


def main() -> int:
    if not SOURCE.exists():
        print(f"{SOURCE} not found: install python3-sklearn", file=sys.stderr)
        return 1
    rows = [line.split(",") for line in gzip.open(SOURCE, "rt").read().splitlines() if line]
    seen = [0] * 10
    train, test = [], []
    for row in rows:
        values = [int(v) for v in row]
        assert len(values) == HEIGHT * WIDTH + 1, len(values)
        assert all(0 <= v <= MAX_VALUE for v in values[:-1])
        assert 0 <= values[-1] <= 9
        seen[values[-1]] += 1
        (test if seen[values[-1]] % 5 == 0 else train).append(values)
    n = len(rows)
    assert n == 1797, n
    n_train = len(train)
    pixels, labels = bytearray(), bytearray()
    for values in train + test:
        pixels += bytes(values[:-1])
        labels.append(values[-1])
    header = MAGIC + struct.pack("<6I", VERSION, n, n_train, HEIGHT, WIDTH, MAX_VALUE)
    TARGET.write_bytes(header + pixels + labels)
    for name, part in (("train", labels[:n_train]), ("test", labels[n_train:])):
        counts = [part.count(d) for d in range(10)]
        print(f"{name}: {len(part)} examples, per digit {counts}")
    print(f"wrote {TARGET} ({TARGET.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
