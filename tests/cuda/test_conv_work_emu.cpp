// The cost model's counts against the kernels' own: every GPU convolution algorithm, on shapes
// that reach its edge cases (odd sizes, padding, strides, dilation, groups, split-K, FFT chunks),
// run on emu with the work counters on (runtime/simt/work_count.h), and its ConvAlgo::work
// (ops/conv2d_work.h) held to the counted floating-point operations and bytes within 1 %, and to
// the same number of launches. The counters exist on the emulator only.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

#include "cuda/cuda_test_util.h"
#include "kernels/kernel_table.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "ops/dispatch.h"
#include "runtime/simt/work_count.h"

#if !EMBER_TEST_DEVICE_CUDA

namespace ember::test {
namespace {

using ops::ConvDirection;

struct WorkCase {
  const char* name;
  int64_t n, c, h, w, k, r, s;
  ops::Conv2dParams p;
};

// clang-format off
const WorkCase kCases[] = {
    {"3x3 pad 1, odd sizes",        2, 5, 9, 11, 7, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
    {"3x3 pad 0, one image",        1, 3, 7, 6, 4, 3, 3, conv_params(1, 1, 0, 0, 1, 1, 1)},
    {"3x3 pad 2, more channels",    2, 19, 6, 7, 21, 3, 3, conv_params(1, 1, 2, 2, 1, 1, 1)},
    {"3x3 wide, many tiles",        2, 8, 12, 12, 40, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
    {"split-K backward-filter",     2, 3, 18, 18, 5, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
    {"stride 2, dilation 2",        2, 4, 11, 10, 6, 3, 3, conv_params(2, 2, 1, 2, 2, 2, 1)},
    {"groups 2, 1x1",               2, 6, 5, 7, 4, 1, 1, conv_params(1, 1, 0, 0, 1, 1, 2)},
    {"5x5 pad 2",                   1, 3, 13, 9, 5, 5, 5, conv_params(1, 1, 2, 2, 1, 1, 1)},
    {"9x9 pad 3",                   1, 2, 20, 17, 3, 9, 9, conv_params(1, 1, 3, 3, 1, 1, 1)},
};
// clang-format on

const ConvDirection kDirections[] = {ConvDirection::forward, ConvDirection::backward_data,
                                     ConvDirection::backward_filter};

double rel_diff(double model, double counted) {
  if (model == counted) return 0.0;
  return std::abs(model - counted) / std::max(std::abs(counted), 1.0);
}

// Runs `algo` on random buffers for `key` with the counters on; the counted total.
simt::KernelWork counted_run(const ops::ConvAlgo& algo, const ops::ConvKey& key, bool bias,
                             std::string* breakdown) {
  const kernels::ConvShape& s = key.shape;
  std::mt19937 gen(fresh_seed());
  auto buffer = [&](int64_t n) { return random_tensor({n}, key.dtype, -1.0, 1.0, gen).to(emu()); };
  const Tensor x = buffer(s.x_numel()), w = buffer(s.w_numel()), y = buffer(s.y_numel());
  const Tensor b = buffer(s.k);
  const size_t ws_bytes = algo.workspace_bytes(key);
  const Tensor ws = zeros({int64_t(ws_bytes) + 1}, {kUInt8, emu()});
  const ops::ConvWorkspace space{ws_bytes > 0 ? ws.data_ptr() : nullptr, ws_bytes};
  simt::WorkCount count;
  switch (key.direction) {
    case ConvDirection::forward:
      algo.run_forward(key, x.data_ptr(), w.data_ptr(), bias ? b.data_ptr() : nullptr, y.data_ptr(),
                       space);
      break;
    case ConvDirection::backward_data:
      algo.run_backward_data(key, y.data_ptr(), w.data_ptr(), x.data_ptr(), space);
      break;
    case ConvDirection::backward_filter:
      algo.run_backward_filter(key, y.data_ptr(), x.data_ptr(), w.data_ptr(), space);
      break;
  }
  std::ostringstream os;
  for (const simt::KernelWork& k : count.kernels())
    os << "  " << k.kernel << ": " << k.launches << " launches, " << k.flops << " flops, "
       << k.bytes << " B\n";
  *breakdown = os.str();
  return count.total();
}

void check_work(const std::string& algo_name, const ops::ConvKey& key, bool bias, int* checked) {
  const ops::ConvAlgoPtr algo = ops::find_conv_algo(algo_name);
  REQUIRE(algo != nullptr);
  std::string why;
  if (!algo->supports(key, &why)) return;
  std::string breakdown;
  const simt::KernelWork got = counted_run(*algo, key, bias, &breakdown);
  const ops::ConvWork model = algo->work(key, bias);
  CAPTURE(algo_name);
  CAPTURE(ops::conv_key_string(key));
  CAPTURE(bias);
  CAPTURE(breakdown);
  CHECK(model.launches == got.launches);
  CHECK(rel_diff(model.flops, double(got.flops)) <= 0.01);
  CHECK(rel_diff(model.bytes, double(got.bytes)) <= 0.01);
  CHECK(got.bytes > 0);
  ++*checked;
}

}  // namespace

TEST_CASE("emu conv work: the cost model's flops, bytes and launches match the kernels' counts") {
  const char* algos[] = {"direct",
                         "implicit_gemm",
                         "winograd_f2x2_3x3",
                         "winograd_f4x4_3x3",
                         "winograd_f2x2_3x3_fused",
                         "fft"};
  // The counts are a property of the code, not of the schedule: the same in every thread order.
  for (const simt_test::Config& order : emu_orders()) {
    simt_test::ScopedOptions scoped(order);
    CAPTURE(order.name());
    int checked = 0;
    for (const WorkCase& cs : kCases) {
      CAPTURE(cs.name);
      for (DType t : {kFloat32, kFloat64})
        for (ConvDirection d : kDirections) {
          const ops::ConvKey key = ops::conv2d_key(
              d, {cs.n, cs.c, cs.h, cs.w}, {cs.k, cs.c / cs.p.groups, cs.r, cs.s}, t, emu(), cs.p);
          for (const char* a : algos) {
            check_work(a, key, /*bias=*/false, &checked);
            if (d == ConvDirection::forward) check_work(a, key, /*bias=*/true, &checked);
          }
        }
    }
    MESSAGE(checked, " algorithm, shape and direction combinations counted");
    CHECK(checked > 100);
  }
}

TEST_CASE("emu conv work: chunked FFT plans and split-K are counted per chunk") {
  // A 64 KiB FFT workspace cap cuts the images and channels into chunks (several launches of each
  // kernel, the products accumulated over input chunks).
  setenv("EMBER_CONV_FFT_CAP", "65536", 1);
  const ops::ConvKey key = ops::conv2d_key(ConvDirection::forward, {3, 6, 20, 20}, {5, 6, 7, 7},
                                           kFloat32, emu(), conv_params(1, 1, 3, 3, 1, 1, 1));
  const kernels::ConvFftPlan p =
      kernels_for(emu()).conv2d_fft_plan(kFloat32, key.shape, key.direction);
  CHECK(p.chunks[0] * p.chunks[1] * p.chunks[2] > 1);
  int checked = 0;
  check_work("fft", key, /*bias=*/true, &checked);
  check_work("fft", key, /*bias=*/false, &checked);
  const ops::ConvKey bwd =
      ops::conv2d_key(ConvDirection::backward_data, {3, 6, 20, 20}, {5, 6, 7, 7}, kFloat32, emu(),
                      conv_params(1, 1, 3, 3, 1, 1, 1));
  check_work("fft", bwd, /*bias=*/false, &checked);
  unsetenv("EMBER_CONV_FFT_CAP");
  CHECK(checked == 3);
  // Backward-filter over 2 x 18 x 18 pixels splits its reduction.
  const ops::ConvKey wgrad =
      ops::conv2d_key(ConvDirection::backward_filter, {2, 3, 18, 18}, {5, 3, 3, 3}, kFloat32, emu(),
                      conv_params(1, 1, 1, 1, 1, 1, 1));
  CHECK(
      kernels_for(emu()).conv2d_implicit_gemm_plan(kFloat32, wgrad.shape, wgrad.direction).splits >
      1);
  check_work("implicit_gemm", wgrad, /*bias=*/false, &checked);
  CHECK(checked == 4);
}

TEST_CASE("emu work counters: one at a time, and nothing counted outside one") {
  simt::WorkCount count;
  CHECK_THROWS_AS(simt::WorkCount(), ValueError);
  CHECK(count.total().launches == 0);
}

}  // namespace ember::test

#endif  // !EMBER_TEST_DEVICE_CUDA
