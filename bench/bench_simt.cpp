// The SIMT emulator's costs: a fiber round trip, a block barrier per thread, and a tiled SGEMM.
// Targets: under 100 ns per thread per barrier; SGEMM 256^3 (16x16 blocks) under 0.2 s.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/cuda/compat.h"
#include "simt/kernels_good.cuh"  // the emulator tests' tiled SGEMM: the same kernel is timed

namespace {

using ember::simt_test::kTile;
using ember::simt_test::sgemm_tiled_kernel;

__global__ void barriers_kernel(int rounds, int* sink) {
  int v = 0;
  for (int r = 0; r < rounds; ++r) {
    v += threadIdx.x;
    __syncthreads();
  }
  if (v == -1) *sink = v;  // keeps the loop
}

// One thread, `rounds` barriers: each is a switch to the scheduler and back.
void BM_FiberRoundTrip(benchmark::State& state) {
  const int rounds = 10000;
  int sink = 0;
  for (auto _ : state) EMBER_LAUNCH(barriers_kernel, dim3(1), dim3(1), 0, nullptr, rounds, &sink);
  state.counters["ns_per_switch"] =
      benchmark::Counter(double(state.iterations()) * rounds * 2,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_FiberRoundTrip)->Unit(benchmark::kMillisecond);

void BM_SyncthreadsPerThread(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0)), rounds = 200;
  int sink = 0;
  for (auto _ : state)
    EMBER_LAUNCH(barriers_kernel, dim3(1), dim3(threads), 0, nullptr, rounds, &sink);
  state.counters["ns_per_thread_barrier"] =
      benchmark::Counter(double(state.iterations()) * rounds * threads,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SyncthreadsPerThread)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_Sgemm256(benchmark::State& state) {
  const int n = 256;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> A(n * n), B(n * n), C(n * n);
  for (float& x : A) x = d(rng);
  for (float& x : B) x = d(rng);
  for (auto _ : state)
    EMBER_LAUNCH(sgemm_tiled_kernel, dim3(n / kTile, n / kTile), dim3(kTile, kTile), 0, nullptr, n,
                 n, n, A.data(), B.data(), C.data());
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Sgemm256)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
