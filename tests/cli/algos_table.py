"""`ember algos` prints, per direction, a table of every registered algorithm with the columns it
promises; exactly one heuristic pick and one benchmark pick per table, each a supported
algorithm; errors against the float64 loop within float32 rounding for the supported ones; with
--model one set of tables per distinct layer shape and the heuristic-vs-fastest summary; and
--policy benchmark --save FILE writes a cache file that EMBER_CONV_CACHE then takes. Timings are
printed, never asserted.

usage: algos_table.py EMBER
"""
import json
import os
import re
import subprocess
import sys
import tempfile

COLUMNS = ["algorithm", "supported", "workspace", "median ms", "GFLOP/s", "max err", "rms err",
           "heuristic", "benchmark", "note"]
ALGORITHMS = ["im2col_gemm", "direct", "implicit_gemm"]
DIRECTIONS = ["forward", "backward_data", "backward_filter"]


def run(ember, args, env=None):
    r = subprocess.run([ember, "algos"] + args, capture_output=True, text=True, timeout=600,
                       env=env)
    if r.returncode != 0:
        raise AssertionError(f"`ember algos {' '.join(args)}` exited {r.returncode}:\n"
                             f"{r.stdout}\n{r.stderr}")
    return r


def tables(stdout):
    """Yields (direction, header line, rows) for each table in the output."""
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(forward|backward_data|backward_filter): heuristic picks (\S+), "
                     r"benchmark picks (\S+)$", line)
        if not m:
            continue
        header = lines[i + 1]
        rows = []
        for row in lines[i + 2:]:
            if not row.startswith("  ") or not row.strip():
                break
            rows.append(row)
        yield m.group(1), m.group(2), m.group(3), header, rows


def check_tables(stdout, expected_tables):
    found = list(tables(stdout))
    assert len(found) == expected_tables, f"{len(found)} tables, expected {expected_tables}"
    for n, (direction, heur, bench, header, rows) in enumerate(found):
        assert direction == DIRECTIONS[n % 3], (direction, n)
        starts = [header.find(c) for c in COLUMNS]
        assert all(s >= 0 for s in starts) and starts == sorted(starts), header
        names = [r.split()[0] for r in rows]
        for a in ALGORITHMS:
            assert a in names, f"{a} missing from the {direction} table:\n" + "\n".join(rows)
        h_col, b_col = starts[COLUMNS.index("heuristic")], starts[COLUMNS.index("benchmark")]
        h_picks = [r.split()[0] for r in rows if r[h_col:h_col + 1] == "*"]
        b_picks = [r.split()[0] for r in rows if r[b_col:b_col + 1] == "*"]
        assert h_picks == [heur] and b_picks == [bench], (direction, h_picks, b_picks, rows)
        for r in rows:
            fields = r.split()
            supported = fields[1]
            assert supported in ("yes", "no"), r
            if supported == "no":
                continue
            # name, yes, workspace (a number and a unit), ms, GFLOP/s, max err, rms err, ...
            max_err, rms_err = fields[6], fields[7]
            assert float(max_err) < 1e-5 and float(rms_err) < 1e-5, r
            assert fields[0] != bench or "fastest measured" in r, r


def main():
    ember = sys.argv[1]
    # One shape, given as N,C,H,W.
    r = run(ember, ["--input", "2,4,9,9", "--weight", "6,4,3,3", "--stride", "2"])
    assert "conv2d x[2, 4, 9, 9] w[6, 4, 3, 3] -> y[2, 6, 5, 5], stride 2" in r.stdout, r.stdout
    check_tables(r.stdout, 3)

    # A small model, and the cache it writes.
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "conv_cache.json")
        r = run(ember, ["--model", "resnet20", "--batch", "1", "--image-size", "8", "--policy",
                        "benchmark", "--save", cache])
        m = re.search(r"^resnet20: (\d+) distinct convolution layer shapes", r.stdout, re.M)
        assert m, r.stdout
        layers = int(m.group(1))
        assert layers >= 4, r.stdout
        check_tables(r.stdout, 3 * layers)
        m = re.search(r"^heuristic within 1\.10x of the fastest: (\d+) of (\d+) \(layer, "
                      r"direction\) pairs", r.stdout, re.M)
        assert m and int(m.group(1)) <= int(m.group(2)) == 3 * layers, r.stdout
        assert "algos 1/" in r.stderr, r.stderr  # progress goes to stderr
        with open(cache) as f:
            doc = json.load(f)
        assert doc["format"] == "ember-conv-cache" and len(doc["entries"]) == 3 * layers, doc
        assert f"saved {3 * layers} measurement(s) to {cache}" in r.stdout, r.stdout
        # The same model under EMBER_CONV_CACHE: loaded, so the log says where measurements came
        # from, and no complaint about the file.
        env = dict(os.environ, EMBER_CONV_CACHE=cache, EMBER_CONV_POLICY="benchmark",
                   EMBER_LOG="select")
        r = run(ember, ["--model", "resnet20", "--batch", "1", "--image-size", "8"], env=env)
        assert f"EMBER_CONV_CACHE {cache}: loaded {3 * layers} measurement(s)" in r.stderr, \
            r.stderr
        assert "going on with an empty" not in r.stderr, r.stderr
    print("ember algos: tables, picks, errors, summary and cache file as promised")


if __name__ == "__main__":
    main()
