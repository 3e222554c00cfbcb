// CPU op benchmarks, each next to its ceiling measured in the same run: matmul vs a bare Eigen
// GEMM and the machine's peak FMA rate; large elementwise add vs memcpy bandwidth; per-op
// overhead on 16-element tensors.
//   build/bin/bench_cpu_ops --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>

#include <Eigen/Core>
#include <chrono>
#include <cstring>
#include <vector>

#include "kernels/kernel_table.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

using namespace ember;

namespace {

// Peak single-precision FMA rate: 12 independent 8-wide FMA chains per thread (enough to hide
// the FMA latency on current x86 cores), run on every OpenMP thread. 0 without AVX2/FMA.
__attribute__((target("avx2,fma"))) double fma_loop(int64_t iters) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

double peak_gflops() {
  static const double peak = [] {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0.0;
    const int64_t iters = 20'000'000;
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      double sink = 0;
#pragma omp parallel reduction(+ : sink)
      sink += fma_loop(iters);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      benchmark::DoNotOptimize(sink);
      best = std::max(best, 2.0 * 8 * 12 * iters * omp_get_max_threads() / s / 1e9);
    }
    return best;
  }();
  return peak;
}

// memcpy bandwidth (bytes read + written per second) on 16M floats, best of a few.
double memcpy_gbps() {
  static const double bw = [] {
    const size_t n = size_t{1} << 24;
    std::vector<float> a(n, 1.0f), b(n, 2.0f);
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      std::memcpy(b.data(), a.data(), n * sizeof(float));
      benchmark::ClobberMemory();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, 2.0 * n * sizeof(float) / s / 1e9);
    }
    return best;
  }();
  return bw;
}

void BM_PeakFma(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(peak_gflops());
  st.counters["GFLOP/s"] = peak_gflops();
  st.counters["threads"] = omp_get_max_threads();
}
BENCHMARK(BM_PeakFma)->Iterations(1);

void set_gemm_counters(benchmark::State& st, int64_t n) {
  const double flops = 2.0 * n * n * n;
  st.counters["GFLOP/s"] =
      benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["peak_GFLOP/s"] = peak_gflops();
}

void BM_EmberMatmul(benchmark::State& st) {
  const int64_t n = st.range(0);
  const Tensor a = ones({n, n}), b = ones({n, n});
  for (auto _ : st) benchmark::DoNotOptimize(ops::matmul(a, b).data_ptr());
  set_gemm_counters(st, n);
}
BENCHMARK(BM_EmberMatmul)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_EigenGemm(benchmark::State& st) {
  const int64_t n = st.range(0);
  Eigen::MatrixXf a = Eigen::MatrixXf::Ones(n, n), b = Eigen::MatrixXf::Ones(n, n), c(n, n);
  // The peer runs with Eigen's own threading (Ember turns it off for itself: Note [Eigen's
  // threads] in kernels/cpu/eigen_product.h), restored afterwards.
  Eigen::setNbThreads(omp_get_max_threads());
  for (auto _ : st) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  Eigen::setNbThreads(1);
  set_gemm_counters(st, n);
}
BENCHMARK(BM_EigenGemm)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Memcpy(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  std::vector<float> a(n, 1.0f), b(n, 2.0f);
  for (auto _ : st) {
    std::memcpy(b.data(), a.data(), n * sizeof(float));
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(st.iterations() * static_cast<int64_t>(2 * n * sizeof(float)));
}
BENCHMARK(BM_Memcpy)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_EmberAddLarge(benchmark::State& st) {
  const int64_t n = st.range(0);
  const Tensor a = ones({n}), b = ones({n});
  Tensor warm = ops::add(a, b);  // first touch of the allocator's pages outside the timing
  for (auto _ : st) benchmark::DoNotOptimize(ops::add(a, b).data_ptr());
  const double bytes = 3.0 * n * sizeof(float);
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * bytes));
  st.counters["memcpy_GB/s"] = memcpy_gbps();
}
BENCHMARK(BM_EmberAddLarge)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);

// The add kernel alone, into an output allocated once: the op above also pays for a fresh
// 64 MiB output each call (the CPU allocator maps new pages, which fault on first write).
void BM_AddKernelLarge(benchmark::State& st) {
  const int64_t n = st.range(0);
  const Tensor a = ones({n}), b = ones({n}), c = zeros({n});
  for (auto _ : st) {
    kernels_for(kCPU).binary_contiguous(kernels::BinaryOp::add, kFloat32, n, c.data_ptr(),
                                        a.data_ptr(), b.data_ptr(), nullptr);
    benchmark::ClobberMemory();
  }
  const double bytes = 3.0 * n * sizeof(float);
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * bytes));
  st.counters["memcpy_GB/s"] = memcpy_gbps();
}
BENCHMARK(BM_AddKernelLarge)->Arg(1 << 24)->UseRealTime()->Unit(benchmark::kMillisecond);

// Overhead of one op call on 16 elements: checks, allocation and dispatch.
void BM_TinyAdd(benchmark::State& st) {
  const Tensor a = ones({16}), b = ones({16});
  for (auto _ : st) benchmark::DoNotOptimize(ops::add(a, b).data_ptr());
}
BENCHMARK(BM_TinyAdd);
void BM_TinyAddBroadcast(benchmark::State& st) {
  const Tensor a = ones({4, 4}), b = ones({4});
  for (auto _ : st) benchmark::DoNotOptimize(ops::add(a, b).data_ptr());
}
BENCHMARK(BM_TinyAddBroadcast);
void BM_TinyExp(benchmark::State& st) {
  const Tensor a = ones({16});
  for (auto _ : st) benchmark::DoNotOptimize(ops::exp(a).data_ptr());
}
BENCHMARK(BM_TinyExp);
void BM_TinySum(benchmark::State& st) {
  const Tensor a = ones({16});
  for (auto _ : st) benchmark::DoNotOptimize(ops::sum(a).data_ptr());
}
BENCHMARK(BM_TinySum);
void BM_TinyMatmul(benchmark::State& st) {
  const Tensor a = ones({4, 4}), b = ones({4, 4});
  for (auto _ : st) benchmark::DoNotOptimize(ops::matmul(a, b).data_ptr());
}
BENCHMARK(BM_TinyMatmul);

}  // namespace

BENCHMARK_MAIN();
