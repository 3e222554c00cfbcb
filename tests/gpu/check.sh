#!/usr/bin/env bash
# The GPU check: builds Ember for this machine's GPU (nvcc, Release, no Python), runs the
# `gpu`-labelled tests and the GPU benchmarks, and ends with a summary table. Without a usable
# GPU it still builds, then says so and exits 0 (a dry run). Full logs go under $EMBER_GPU_LOGS
# when it is set (else <build dir>/check-logs). docs/gpu_backend.md, "Checking on a real GPU",
# explains the table and the targets.
#
# For a GPU machine that has no Eigen, nlohmann-json, doctest or CLI11 installed, stage them
# first on a machine that has them (`bash tests/gpu/check.sh --stage`, into the git-ignored
# .deps/), copy the checkout with .deps/ there, and run `bash tests/gpu/check.sh` (the whole run
# takes under 8 minutes on 16 cores).
#
# Usage: tests/gpu/check.sh [--stage | --only PATTERN]
#   --only PATTERN: a quick rerun: builds Ember and the gpu tests only, runs the gpu test cases
#   whose names match PATTERN (doctest's --test-case: wildcards, commas between patterns), and
#   skips the benchmarks.
# Environment: EMBER_GPU_BUILD_DIR (build-gpu), EMBER_GPU_JOBS (all cores), EMBER_GPU_LOGS,
#              EMBER_CUDA_ARCH (detected from the GPU, else 90), EMBER_GPU_CMAKE_ARGS (more
#              CMake arguments, e.g. -DEMBER_SIMT_FIBERS=ucontext).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
ONLY=""
case "${1:-}" in
  --stage) exec bash tests/gpu/stage_deps.sh "$ROOT/.deps" ;;
  --only)
    ONLY="${2:-}"
    [ -n "$ONLY" ] || { echo "check.sh: --only needs a test-case pattern" >&2; exit 2; } ;;
  "") ;;
  *) echo "check.sh: unknown argument '$1' (expected --stage or --only PATTERN)" >&2; exit 2 ;;
esac

BUILD="${EMBER_GPU_BUILD_DIR:-$ROOT/build-gpu}"
JOBS="${EMBER_GPU_JOBS:-$(nproc)}"
LOGS="${EMBER_GPU_LOGS:-$BUILD/check-logs}"
mkdir -p "$LOGS" "$BUILD"
start=$SECONDS
say() { echo "check.sh: $*"; }

# --- Toolchain, GPU and libraries -------------------------------------------------------------
# ccache (where there is one): paths relative to the checkout, so other build dirs' objects hit.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}" CCACHE_NOHASHDIR=1
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
gpu_name=""
arch="${EMBER_CUDA_ARCH:-}"
if command -v nvidia-smi >/dev/null; then
  gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')"
  [ -z "$arch" ] && [ -n "$cap" ] && arch="$cap"
fi
arch="${arch:-90}"

# The Python environment's nvidia/* wheels (cuBLAS, cuDNN, ...): CMake finds them by itself
# (cmake/NvidiaLibs.cmake); the loader needs their folders too, since cuDNN opens its
# sub-libraries by name at run time.
PY="$(command -v python3 || true)"
if [ -n "$PY" ]; then
  wheel_libs="$("$PY" - <<'EOF' 2>/dev/null
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
dirs = set()
for p in nvidia.__path__:
    for lib in glob.glob(os.path.join(p, "*", "lib")):
        dirs.add(os.path.realpath(lib))
print(":".join(sorted(dirs)))
EOF
)"
  if [ -n "$wheel_libs" ]; then
    # The toolkit's own libraries first: where it has cuBLAS, that is the one CMake found and the
    # one libember loads on first use (runtime/cublas_api.h).
    toolkit_libs=""
    [ -d /usr/local/cuda/lib64 ] && toolkit_libs="/usr/local/cuda/lib64:"
    export LD_LIBRARY_PATH="$toolkit_libs$wheel_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi

cmake_args=(-DCMAKE_BUILD_TYPE=Release -DEMBER_PYTHON=OFF -DEMBER_BENCH=ON -DEMBER_TESTS=ON
            "-DCMAKE_CUDA_ARCHITECTURES=$arch")
if [ -d "$ROOT/.deps/share/cmake" ]; then
  cmake_args+=("-DCMAKE_PREFIX_PATH=$ROOT/.deps")
  deps="staged .deps"
else
  deps="system"
fi
command -v nvcc >/dev/null && cmake_args+=(-DEMBER_CUDA=ON)
command -v ninja >/dev/null && [ ! -f "$BUILD/CMakeCache.txt" ] && cmake_args+=(-G Ninja)
if [ -n "$PY" ]; then
  cmake_args+=("-DPython3_EXECUTABLE=$PY")
fi
# shellcheck disable=SC2206  # word splitting of the extra arguments is intended
cmake_args+=(${EMBER_GPU_CMAKE_ARGS:-})
say "GPU: ${gpu_name:-none found}; CUDA arch $arch; header-only deps: $deps; $JOBS jobs; logs in $LOGS"

# --- Build ------------------------------------------------------------------------------------
build_status="ok"
# Ninja keeps going past a failing file (-k 0), so one run lists every file that fails.
keep_going=()
if ! cmake -S "$ROOT" -B "$BUILD" "${cmake_args[@]}" >"$LOGS/configure.log" 2>&1; then
  build_status="FAILED (configure; see configure.log)"
  tail -30 "$LOGS/configure.log"
else
  grep -qs "^CMAKE_GENERATOR:INTERNAL=Ninja" "$BUILD/CMakeCache.txt" && keep_going=(-k 0)
  targets=(ember test_gpu ember_cli)
  [ -z "$ONLY" ] && targets+=(bench_gpu bench_ladder bench_conv_ladder bench_dist)
  if ! cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" -- "${keep_going[@]}" \
      >"$LOGS/build.log" 2>&1; then
    build_status="FAILED (see build.log)"
    # Every distinct error, from every file that failed (the build keeps going past the first).
    grep -E "^FAILED:|error|Error" "$LOGS/build.log" | sort | uniq | head -80
  fi
fi
# The ONNX runtime's conformance runner, where the machine has ONNX and protobuf (configure says).
onnx_built=0
if [ -z "$ONLY" ] && [ "$build_status" = "ok" ] && grep -q "ONNX import ON" "$LOGS/configure.log" &&
    cmake --build "$BUILD" -j "$JOBS" --target onnx_conformance >>"$LOGS/build.log" 2>&1; then
  onnx_built=1
fi
build_s=$((SECONDS - start))
grep "^-- Ember" "$LOGS/configure.log" 2>/dev/null
say "build: $build_status (${build_s} s)"

# --- Is the GPU usable (as Ember sees it)? ----------------------------------------------------
usable=0
why="no GPU"
if [ "$build_status" = "ok" ]; then
  "$BUILD/bin/ember" doctor >"$LOGS/doctor.log" 2>&1
  if grep -q "CUDA usable: yes" "$LOGS/doctor.log"; then
    usable=1
  else
    # "CUDA usable: no (no NVIDIA driver found); using cpu" -> "no NVIDIA driver found"
    reason="$(grep -m1 "CUDA usable" "$LOGS/doctor.log" | sed -n 's/^CUDA usable: no (\(.*\));.*/\1/p')"
    why="no GPU${reason:+ ($reason)}"
  fi
fi

# --- gpu-labelled tests -----------------------------------------------------------------------
tests_line="not run (build failed)"
tests_ok=0
if [ "$build_status" = "ok" ]; then
  # The cuDNN engine test writes the GPU's device description (for data/cudnn/).
  if [ -n "$ONLY" ]; then
    EMBER_CUDNN_CAPTURE="$LOGS/cudnn_device.json" timeout 300 "$BUILD/tests/test_gpu" \
      "--test-case=$ONLY" >"$LOGS/test_gpu.log" 2>&1
  else
    EMBER_CUDNN_CAPTURE="$LOGS/cudnn_device.json" \
      timeout 300 ctest --test-dir "$BUILD" -L gpu -V --output-on-failure >"$LOGS/test_gpu.log" 2>&1
  fi
  rc=$?
  [ $rc -eq 77 ] && rc=0  # test_gpu's "skipped" (gpu_main.cpp)
  cases="$(grep -m1 "\[doctest\] test cases:" "$LOGS/test_gpu.log" | sed 's/.*test cases: *//')"
  asserts="$(grep -m1 "\[doctest\] assertions:" "$LOGS/test_gpu.log" | sed 's/.*assertions: *//')"
  if grep -q "gpu tests skipped" "$LOGS/test_gpu.log"; then
    tests_line="skipped: $why"
    tests_ok=1
  elif [ $rc -eq 0 ]; then
    tests_line="passed: test cases $cases; assertions $asserts"
    tests_ok=1
  elif [ $rc -eq 124 ]; then
    tests_line="TIMED OUT after 300 s (see test_gpu.log)"
  else
    tests_line="FAILED: test cases ${cases:-?}; assertions ${asserts:-?} (see test_gpu.log)"
    grep -E "ERROR|FAILED|error:" "$LOGS/test_gpu.log" | head -20
  fi
fi
say "tests: $tests_line"
if [ -n "$ONLY" ]; then
  {
    echo
    echo "== GPU check summary (--only '$ONLY'): ${gpu_name:-no GPU}, sm_$arch, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "build  | $build_status (${build_s} s, deps: $deps)"
    echo "tests  | test_gpu --test-case='$ONLY': $tests_line"
    echo "total  | $((SECONDS - start)) s"
  } | tee "$LOGS/summary.txt"
  exit 0
fi

# --- Benchmarks -------------------------------------------------------------------------------
# Each program runs on cuda with TF32 off in every library, whatever it defaults to (fp32 against
# fp32), its output in $LOGS/<program>.log; a failure clears bench_ok and sets the program's line.
bench_ok=1
declare -A bench_line
run_bench() {
  local name="$1" limit="$2"
  shift 2
  if [ "$build_status" != "ok" ]; then
    bench_line[$name]="not run (build failed)"
  elif [ $usable -ne 1 ]; then
    bench_line[$name]="skipped: $why"
  else
    NVIDIA_TF32_OVERRIDE=0 timeout "$limit" "$BUILD/bin/$name" --device cuda "$@" \
      >"$LOGS/$name.log" 2>&1
    local rc=$?
    if [ $rc -ne 0 ]; then
      bench_ok=0
      bench_line[$name]="$name exited with $rc (see $name.log)"
    fi
  fi
}
run_bench bench_gpu 300
# The ladders (README.md, "Benchmarks"; docs/conv.md, "The convolution ladder"): each op's rungs
# from version 1 to the vendor library, and every convolution algorithm on each model's layers.
run_bench bench_ladder 180
run_bench bench_conv_ladder 180

# NCCL with one rank on this GPU (docs/distributed.md): an env:// rendezvous through the TCP store
# on 127.0.0.1, ResNet-20's gradient buckets all-reduced, a DistributedDataParallel step against
# the plain one, and NCCL's all-reduce over 1 to 256 MiB (one rank: NCCL's own loopback path,
# no link crossed; the collectives' results are checked by the gpu suite's test_nccl_gpu.cpp).
nccl_line="not run"
if [ "$build_status" != "ok" ]; then
  nccl_line="not run (build failed)"
elif [ $usable -ne 1 ]; then
  nccl_line="skipped: $why"
elif grep -q "NCCL backend ON" "$LOGS/configure.log"; then
  RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + RANDOM % 1000)) \
    timeout 120 "$BUILD/bin/bench_dist" --backend nccl --device cuda --model resnet20 --batch 128 \
    >"$LOGS/bench_dist.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    bench_ok=0
    nccl_line="bench_dist exited with $rc (see bench_dist.log)"
  else
    nccl_line="$(grep -m1 "bucketed all-reduce" "$LOGS/bench_dist.log"); $(grep -m1 "256 MiB" "$LOGS/bench_dist.log")"
  fi
else
  nccl_line="skipped: the build has no NCCL (see configure.log)"
fi

# cuDNN in the selector (docs/gpu_backend.md, "cuDNN's engines"): every candidate (Ember's
# kernels, cuDNN's engine configs, its classic algorithms) of each distinct ResNet-50 and VGG-16
# layer timed in all three directions, with its error against float64, and how often the
# heuristic's pick (cuDNN's mode A list first) is within 1.10x of the fastest (target: 90% of
# the pairs). Smaller images than 224 keep the float64 reference on the host short.
# The float16 row: the same for ResNet-50's layers in half precision (implicit_gemm_tc, cuDNN's
# tensor-op engines, widened_f32), and Ember's fastest against cuDNN's (target: implicit_gemm_tc
# within 2x of cuDNN's best half engine, i.e. at least 0.5x its speed).
declare -A algos_row
run_algos() {
  local model="$1" image="$2" dtype="$3" row="$1 $3" log="$LOGS/algos_$1_$3.log"
  if [ "$build_status" != "ok" ]; then
    algos_row[$row]="not run (build failed)"
  elif [ $usable -ne 1 ]; then
    algos_row[$row]="skipped: $why"
  else
    NVIDIA_TF32_OVERRIDE=0 timeout 150 "$BUILD/bin/ember" algos --model "$model" --batch 8 \
      --image-size "$image" --dtype "$dtype" --device cuda >"$log" 2>&1
    local rc=$?
    if [ $rc -ne 0 ]; then
      bench_ok=0
      algos_row[$row]="ember algos exited with $rc (see $(basename "$log"))"
    else
      algos_row[$row]="$(grep -m1 "heuristic within" "$log") (target: 90% of the pairs)"
      local versus
      versus="$(grep -m1 "Ember's fastest / cuDNN's fastest" "$log")"
      [ -n "$versus" ] && algos_row[$row]+="; $versus"
    fi
  fi
}
run_algos resnet50 112 float32
run_algos vgg16 64 float32
run_algos resnet50 56 float16

# ONNX models on cuda (docs/onnx.md): the node test suite (Debian's libonnx-testdata) with the
# same expected failures as on cpu and emu, and the ResNet-style and MobileNet-style models that
# PyTorch exports (where it is installed) run by `ember run` at batch 32, against PyTorch's eager
# time on this GPU where PyTorch has CUDA.
onnx_conf_line="skipped: the build has no ONNX import (libonnx-dev, libprotobuf-dev)"
onnx_models_line="$onnx_conf_line"
if [ $onnx_built -eq 1 ] && [ $usable -ne 1 ]; then
  onnx_conf_line="skipped: $why"
  onnx_models_line="skipped: $why"
elif [ $onnx_built -eq 1 ]; then
  if [ -d /usr/share/libonnx-testdata/data/node ]; then
    timeout 300 "$BUILD/tests/onnx_conformance" --device cuda \
      --expected-failures "$ROOT/tests/onnx/expected_failures.txt" >"$LOGS/onnx_conformance.log" 2>&1
    rc=$?
    onnx_conf_line="$(tail -1 "$LOGS/onnx_conformance.log")"
    if [ $rc -ne 0 ]; then
      bench_ok=0
      onnx_conf_line="FAILED ($rc): $(grep -c "^UNEXPECTED" "$LOGS/onnx_conformance.log") unexpected results (see onnx_conformance.log); $onnx_conf_line"
    fi
  else
    onnx_conf_line="skipped: no /usr/share/libonnx-testdata (apt-get install libonnx-testdata)"
  fi
  if python3 -c "import torch" 2>/dev/null; then
    onnx_models_line=""
    for m in resnet mobilenet; do
      python3 - "$LOGS/onnx_models" "$m" "$ROOT" >"$LOGS/onnx_export_$m.log" 2>&1 <<'PY'
import sys, time, torch
out, name, root = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, root + "/tests/onnx")
import torch_models
import os; os.makedirs(out, exist_ok=True)
model = torch_models.export(name, os.path.join(out, name + ".onnx"))
if torch.cuda.is_available():
    model = model.cuda()
    x = torch.randn(32, 3, 32, 32, device="cuda")
    with torch.no_grad():
        for _ in range(10): model(x)
        torch.cuda.synchronize(); t = time.perf_counter()
        for _ in range(50): model(x)
        torch.cuda.synchronize()
    print(f"pytorch eager: {(time.perf_counter() - t) / 50 * 1e3:.3f} ms")
PY
      (cd "$ROOT" && timeout 120 "$BUILD/bin/ember" run "$LOGS/onnx_models/$m.onnx" --device cuda \
        --batch 32 --repeat 50 >"$LOGS/onnx_run_$m.log" 2>&1) || bench_ok=0
      onnx_models_line+="$m b32: $(grep -m1 "latency" "$LOGS/onnx_run_$m.log" | sed 's/latency over 50 runs: //')"
      onnx_models_line+=", $(grep -m1 "pytorch eager" "$LOGS/onnx_export_$m.log" || echo "no PyTorch CUDA time"); "
    done
  else
    onnx_models_line="skipped: no PyTorch to export the models"
  fi
fi

# One summary row: `label | name`, then the lines of name's log from the first line matching
# `from` up to the line matching `done`, or the reason there is no table.
summary_rows() {
  local label="$1" name="$2" from="$3" done="$4" log="$LOGS/$2.log"
  if [ -s "$log" ] && grep -q "$done" "$log"; then
    echo "$label | $name --device cuda${bench_line[$name]:+: ${bench_line[$name]}}"
    sed -n "/$from/,/$done/p" "$log" | grep -v "^\$\|$done"
  else
    echo "$label | ${bench_line[$name]:-no table (see $name.log)}"
  fi
}

# --- Summary ----------------------------------------------------------------------------------
{
  echo
  echo "== GPU check summary: ${gpu_name:-no GPU}, sm_$arch, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "build  | $build_status (${build_s} s, deps: $deps)"
  echo "tests  | ctest -L gpu: $tests_line"
  # The wgmma case runs in a test_gpu of its own (Note [wgmma in a process of its own]).
  wgmma="$(grep -m1 -E 'Test +#[0-9]+: gpu_wgmma ' "$LOGS/test_gpu.log" | sed 's/^.*gpu_wgmma[ .]*//')"
  echo "wgmma  | ctest gpu_wgmma (the case 'gemm_tc wgmma*'): ${wgmma:-not run}"
  if [ -s "$LOGS/cudnn_device.json" ]; then
    echo "cudnn  | device description captured: $LOGS/cudnn_device.json (copy to data/cudnn/)"
    grep -m1 "cuDNN configs checked against float64" "$LOGS/test_gpu.log" | sed 's/^.*MESSAGE: /cudnn  | /'
    grep -m1 "FindEx under FMA" "$LOGS/test_gpu.log" | sed 's/^.*MESSAGE: /cudnn  | /'
  fi
  # The benchmark preference's verdicts on ResNet-50's stem: cuDNN's and Ember's times.
  grep "backend verdict | " "$LOGS/test_gpu.log" | sed 's/^.*MESSAGE: backend verdict | /cudnn  | /'

  echo "cudnn  | ember algos resnet50 b8 112x112: ${algos_row[resnet50 float32]}"
  echo "cudnn  | ember algos vgg16 b8 64x64: ${algos_row[vgg16 float32]}"
  echo "half   | ember algos resnet50 b8 56x56 float16: ${algos_row[resnet50 float16]}"
  echo "nccl   | bench_dist --backend nccl, 1 rank: $nccl_line"
  echo "onnx   | node test suite on cuda: $onnx_conf_line"
  echo "onnx   | ember run --device cuda: $onnx_models_line"
  summary_rows "bench " bench_gpu "== bench_gpu summary" "^bench_gpu: done"
  summary_rows "ladder" bench_ladder "^== " "^bench_ladder: done"
  summary_rows "conv  " bench_conv_ladder "^== summary" "^bench_conv_ladder: done"
  echo "total  | $((SECONDS - start)) s"
} | tee "$LOGS/summary.txt"

[ "$build_status" = "ok" ] && [ $tests_ok -eq 1 ] && [ $bench_ok -eq 1 ]
