"""`ember doctor` says which CPU convolution paths this machine gets and why, under every
EMBER_CPU_ISA cap this CPU can take, and refuses a malformed one (exit 1, naming the variable,
the value and the allowed ones).

usage: doctor_isa.py EMBER
"""
import json
import os
import re
import subprocess
import sys


def doctor(ember, isa, *args):
    env = dict(os.environ)
    env.pop("EMBER_CPU_ISA", None)
    if isa is not None:
        env["EMBER_CPU_ISA"] = isa
    return subprocess.run([ember, "doctor", *args], capture_output=True, text=True, env=env)


def main():
    ember = sys.argv[1]
    r = doctor(ember, None, "--json")
    assert r.returncode == 0, r
    conv = json.loads(r.stdout)["cpu_conv"]
    detected = conv["cpu_isa_detected"]
    assert detected in ("avx512", "avx2", "baseline"), conv
    # No cap: the best the CPU has, and the CPU's features as the reason.
    assert conv["implicit_gemm_isa"] == (None if detected == "baseline" else detected), conv
    text = doctor(ember, None).stdout
    want = (r"implicit_gemm_cpu\s+unavailable: needs AVX2\+FMA or AVX-512 \(cpu has"
            if detected == "baseline" else rf"implicit_gemm_cpu\s+{detected} micro-kernel \(cpu has")
    assert re.search(want, text), text
    caps = {"avx512": ["avx512", "avx2", "baseline"], "avx2": ["avx2", "baseline"],
            "baseline": ["baseline"]}[detected]
    for isa in caps:
        text = doctor(ember, isa).stdout
        if isa == "baseline":
            want = (r"implicit_gemm_cpu\s+unavailable: needs AVX2\+FMA or AVX-512 "
                    r"\(EMBER_CPU_ISA=baseline; cpu has .*\); convolutions use im2col_gemm")
        else:
            want = rf"implicit_gemm_cpu\s+{isa} micro-kernel \(EMBER_CPU_ISA={isa}; cpu has"
        assert re.search(want, text), (isa, text)
        conv = json.loads(doctor(ember, isa, "--json").stdout)["cpu_conv"]
        assert conv["implicit_gemm_isa"] == (None if isa == "baseline" else isa), conv
        print(f"EMBER_CPU_ISA={isa}: {re.search(r'implicit_gemm_cpu.*', text).group(0)}")
    for isa in ["avx512", "avx2"]:
        if isa not in caps:
            print(f"SKIPPED: doctor under EMBER_CPU_ISA={isa}: this CPU has only {detected}")
    bad = doctor(ember, "avx3")
    assert bad.returncode == 1, bad
    assert "EMBER_CPU_ISA=avx3: expected one of avx512, avx2, baseline" in bad.stdout, bad.stdout
    print("EMBER_CPU_ISA=avx3: refused")


if __name__ == "__main__":
    main()
