"""The refactor guard: `ember train` must print the same first 40 losses as the recorded ones
(tests/cli/golden_train_losses.json, made by an earlier build; see its "about").

usage: golden_losses.py EMBER GOLDEN.json cpu|emu

cpu: bit for bit (the printed 9 significant digits identify a float32), when this build's SIMD
     set (`ember doctor --json`: build.simd) equals that of a record; otherwise the case cannot
     be judged here and exits 77 (ctest: skipped), saying which sets were recorded.
emu: within 1e-6 relative per step on every machine (the emulated GPU kernels do not use the
     CPU's vector units, but libm and the compiler's choices may differ by an ulp).
"""
import json
import os
import re
import subprocess
import sys

STEPS = 40
SKIP = 77


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def losses(ember, device):
    out = run([ember, "train", "--log-steps", "--max-steps", str(STEPS), "--threads", "1",
               "--device", device])
    found = [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)$", out, re.M)]
    if len(found) != STEPS:
        sys.exit(f"expected {STEPS} step losses on {device}, found {len(found)}:\n{out}")
    return found


def compare(device, got, want, rtol):
    worst, bad = 0.0, 0
    for i, (g, w) in enumerate(zip(got, want), 1):
        rel = abs(g - w) / max(abs(w), 1e-30)
        worst = max(worst, rel)
        flag = "" if rel <= rtol else "  <-- differs"
        bad += rel > rtol
        print(f"step {i:2d}  recorded {w:.9g}  now {g:.9g}  rel {rel:.2e}{flag}")
    print(f"{device}: worst relative difference {worst:.2e} (allowed {rtol:g}); "
          f"{STEPS - bad} passed, {bad} failed")
    return bad == 0


def main():
    ember, golden, device = sys.argv[1:4]
    with open(golden) as f:
        g = json.load(f)
    if device == "emu":
        ok = compare("emu", losses(ember, "emu"), g["emu"]["losses"], 1e-6)
        sys.exit(0 if ok else 1)
    doctor = json.loads(run([ember, "doctor", "--json"]))
    simd = doctor["build"]["simd"]
    # The records ran the best micro-kernels the CPU had; a lower EMBER_CPU_ISA cap runs others.
    conv = doctor.get("cpu_conv", {})
    if conv.get("implicit_gemm_isa") != (None if conv.get("cpu_isa_detected") == "baseline"
                                         else conv.get("cpu_isa_detected")):
        print(f"SKIPPED: cpu losses under EMBER_CPU_ISA={os.environ.get('EMBER_CPU_ISA')}: the "
              f"records ran this CPU's best micro-kernels ({conv.get('cpu_isa_detected')})")
        sys.exit(SKIP)
    for rec in g["cpu"]:
        if sorted(rec["build_simd"]) == sorted(simd):
            print(f"cpu: comparing with the record for SIMD set {' '.join(simd)} "
                  f"({rec['recorded_from']})")
            ok = compare("cpu", losses(ember, "cpu"), rec["losses"], 0.0)
            sys.exit(0 if ok else 1)
    known = "; ".join(" ".join(r["build_simd"]) for r in g["cpu"])
    print(f"SKIPPED: no cpu losses recorded for this build's SIMD set ({' '.join(simd) or 'none'}); "
          f"recorded: {known}. Record them from a build before a change to compare after it.")
    sys.exit(SKIP)


if __name__ == "__main__":
    main()
