#!/usr/bin/env bash
# Every test suite: install what is missing, build in Release, run ctest (GPU-labelled tests
# skip cleanly without a GPU); then the sanitizer builds: the CPU suites under ASan+UBSan, and
# the emulator's suite under TSan, each with a seeded bug its sanitizer must report.
# Exits non-zero on any failure. Arguments go to the first ctest run (e.g. -R ops).
# EMBER_TEST_SANITIZERS=0 skips the sanitizer builds.
set -euo pipefail
cd "$(dirname "$0")"
jobs="$(nproc)"
# The main build includes the Python package (its pytest suite runs in ctest against PyTorch);
# Debian's interpreter, which has NumPy, pytest and PyTorch.
# EMBER_FUZZ: clang builds the ONNX loader's libFuzzer target, which ctest runs for a minute.
EMBER_CMAKE_ARGS="-DEMBER_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3 -DEMBER_FUZZ=ON ${EMBER_CMAKE_ARGS:-}" \
  scripts/setup.sh build
ctest --test-dir build --output-on-failure -j "$jobs" "$@"

if [ "${EMBER_TEST_SANITIZERS:-1}" != "0" ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer build (portable: no -march=native)"
  # EMBER_NATIVE=OFF: the main build above targets this CPU, so on an AVX-512 machine it never
  # runs the code that machines without AVX-512 (or binaries built for other CPUs) take: the
  # SSE2 Eigen paths, and implicit_gemm_cpu's micro-kernels chosen at run time by a baseline
  # binary (the spec tests run each instruction set the CPU has, under EMBER_CPU_ISA's cap).
  # This build runs that code on every run.
  EMBER_CMAKE_ARGS="-DEMBER_SANITIZE=address -DEMBER_NATIVE=OFF -DEMBER_CUDA=OFF -DEMBER_BENCH=OFF" \
    scripts/setup.sh build-asan
  # install_package is left out: an instrumented library needs an instrumented consumer. So are
  # the two accuracy runs of mixed precision on the emulator (6 epochs each through the emulated
  # Tensor Core kernels: some 8 minutes each here); the same kernels run under the sanitizers in
  # the cuda and spec suites, and the cpu's accuracy run and the AMP resume test stay in.
  # The emulated kernels in forward thread order only (EMBER_TEST_EMU_ORDERS): a sanitizer looks
  # for memory errors, which the order does not change; the main build above runs all three.
  # So are the DistributedDataParallel runs under mpirun (dist.ddp.np2/np3 and the ResNet-20 case
  # of cli_train_distributed: several instrumented ranks on two cores take some 7 minutes each);
  # the collectives, the faults and the digits cases of `ember train --distributed` stay in (with
  # leak checking off in the ranks: tests/CMakeLists.txt says why).
  EMBER_TEST_EMU_ORDERS=forward UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -L cpu \
      -E "install_package|^cli_train_amp_(fp16|bf16)_emu$|^dist\.ddp\.np|^cli_train_distributed\.resnet20"

  echo "== ThreadSanitizer build (the emulator)"
  EMBER_CMAKE_ARGS="-DEMBER_SANITIZE=thread -DEMBER_CUDA=OFF -DEMBER_BENCH=OFF" \
  EMBER_BUILD_TARGETS="test_simt seeded_shared_race" \
    scripts/setup.sh build-tsan
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" \
    -R "^(simt|simt_tensor_core|seeded_shared_race)$"
fi
