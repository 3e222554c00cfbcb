"""ember.trace() and EMBER_TRACE: every kernel call of a block, with its device, sizes and time,
on stderr or in a Chrome trace file."""
import json
import os
import subprocess
import sys

import pytest

import ember


def test_trace_to_a_chrome_file(tmp_path):
    path = tmp_path / "run.json"
    x = ember.ones(4, 5, device="emu")
    with ember.trace(path) as t:
        y = (x + x).relu()
        ember.sort(y, 1)
    assert t.events >= 3
    events = json.loads(path.read_text())["traceEvents"]
    names = [e["name"] for e in events]
    assert "binary_contiguous" in names and "activation_fwd" in names and "sort_rows" in names
    assert all(e["args"]["device"] == "emu:0" and e["dur"] >= 0 for e in events)
    # Nothing is recorded outside the block.
    x + x
    assert json.loads(path.read_text())["traceEvents"] == events


def test_environment_variable_prints_lines():
    code = "import ember; x = ember.ones(3); print((x * 2).sum().item())"
    env = dict(os.environ, EMBER_TRACE="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True)
    assert r.stdout.strip() == "6.0"
    lines = [l for l in r.stderr.splitlines() if l.startswith("[ember trace]")]
    assert any("binary_" in l and "mul" in l and "cpu" in l for l in lines)
    assert any("reduce" in l and "sum" in l for l in lines)


def test_bad_trace_targets_are_refused():
    with pytest.raises(ember.ValueError, match="ending in .json"):
        with ember.trace("out.txt"):
            pass
    with pytest.raises(ember.IOError, match="cannot open"):
        with ember.trace("/nonexistent-folder/run.json"):
            pass
