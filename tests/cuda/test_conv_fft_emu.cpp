// The FFT convolution on the GPU backends beyond the case table of tests/spec/conv2d.cpp: the 2-D
// transforms against closed forms, the error budget against the direct kernel, determinism over
// runs and thread orders, chunked plans, and what `fft` refuses (and the error a forced `fft`
// raises for it).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "kernels/kernel_table.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "ops/dispatch.h"
#include "skip_case.h"

namespace ember::test {
namespace {

using ops::ConvDirection;
using cplx = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

// The transforms of `count` real n x n tiles (forward) or half spectra (inverse) on the device.
std::vector<double> transform(int n, const std::vector<double>& in, bool inverse) {
  const int64_t half = int64_t(n) * (n / 2 + 1) * 2, full = int64_t(n) * n;
  const int64_t count = int64_t(in.size()) / (inverse ? half : full);
  const Tensor src = from_vector(in, {int64_t(in.size())}).to(emu());
  const Tensor dst = zeros({count * (inverse ? full : half)}, {kFloat64, emu()});
  kernels_for(emu()).conv2d_fft_tiles(kFloat64, n, count, inverse, src.data_ptr(), dst.data_ptr(),
                                      ops::stream_of(emu()));
  return dst.to_vector<double>();
}

// Spectrum entry (fy, fx) of a half spectrum.
cplx bin(const std::vector<double>& spec, int n, int fy, int fx) {
  const size_t i = 2 * (size_t(fy) * (n / 2 + 1) + fx);
  return {spec[i], spec[i + 1]};
}

double rel_rms(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

// Sets EMBER_CONV_FFT_CAP for a scope.
struct CapGuard {
  explicit CapGuard(size_t bytes) {
    setenv("EMBER_CONV_FFT_CAP", std::to_string(bytes).c_str(), 1);
  }
  ~CapGuard() { unsetenv("EMBER_CONV_FFT_CAP"); }
};

}  // namespace

TEST_CASE("emu fft: the 2-D transforms of an impulse and a cosine match their closed forms") {
  for (const simt_test::Config& order : emu_orders()) {
    simt_test::ScopedOptions scoped(order);
    for (int n : {16, 32, 64}) {
      CAPTURE(n);
      // Tile 0: an impulse at (a, b), X[fy][fx] = exp(-2 pi i (fy a + fx b) / n).
      // Tile 1: cos(2 pi (3 y + 5 x) / n), X = n^2 / 2 at (3, 5) (its mirror (-3, -5) is not in
      //         the half spectrum) and 0 elsewhere.
      // Tile 2: cos(2 pi 2 y / n), X = n^2 / 2 at (2, 0) and (n - 2, 0).
      const int a = 5, b = n - 3;
      std::vector<double> tiles(3 * size_t(n) * n, 0.0);
      tiles[size_t(a) * n + b] = 1.0;
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) {
          tiles[size_t(n) * n + y * n + x] = std::cos(2 * kPi * (3 * y + 5 * x) / n);
          tiles[2 * size_t(n) * n + y * n + x] = std::cos(2 * kPi * 2 * y / n);
        }
      const std::vector<double> spec = transform(n, tiles, false);
      const size_t per = size_t(n) * (n / 2 + 1) * 2;
      const std::vector<double> s1(spec.begin() + per, spec.begin() + 2 * per);
      const std::vector<double> s2(spec.begin() + 2 * per, spec.end());
      const double tol = 1e-12 * n * n;
      double worst = 0;
      for (int fy = 0; fy < n; ++fy)
        for (int fx = 0; fx <= n / 2; ++fx) {
          const cplx impulse = std::polar(1.0, -2 * kPi * double(fy * a + fx * b) / n);
          const cplx cosine = fy == 3 && fx == 5 ? cplx(n * n / 2.0) : cplx(0);
          const cplx row = (fy == 2 || fy == n - 2) && fx == 0 ? cplx(n * n / 2.0) : cplx(0);
          worst =
              std::max({worst, std::abs(bin(spec, n, fy, fx) - impulse),
                        std::abs(bin(s1, n, fy, fx) - cosine), std::abs(bin(s2, n, fy, fx) - row)});
        }
      CHECK(worst <= tol);
      // The inverse takes the closed forms back to the tiles.
      const std::vector<double> back = transform(n, spec, true);
      double back_err = 0;
      for (size_t i = 0; i < tiles.size(); ++i)
        back_err = std::max(back_err, std::abs(back[i] - tiles[i]));
      CHECK(back_err <= 1e-13 * n);
    }
  }
}

TEST_CASE("emu fft: the error budget, float32: at most 3x the direct kernel's relative RMS error") {
  // Relative RMS error against the float64 loops of ops/conv_test_util.h, forward and
  // backward-data, odd image sizes, padding R / 2; docs/conv.md records the numbers.
  ConvPolicyGuard guard;
  std::mt19937 g(fresh_seed());
  const ConvCase cases[] = {
      {"3x3", 2, 8, 23, 21, 6, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"5x5", 2, 8, 23, 21, 6, 5, 5, conv_params(1, 1, 2, 2, 1, 1, 1)},
      {"9x9", 2, 8, 25, 23, 6, 9, 9, conv_params(1, 1, 4, 4, 1, 1, 1)},
      {"13x13", 1, 8, 29, 27, 6, 13, 13, conv_params(1, 1, 6, 6, 1, 1, 1)},
  };
  simt_test::ScopedOptions scoped(simt_test::Config{simt::Order::Forward, 0, 1});
  for (const ConvCase& cs : cases) {
    CAPTURE(cs.name);
    const Shape xs{cs.n, cs.c, cs.h, cs.w}, ws{cs.k, cs.c, cs.r, cs.s};
    const Shape ys = ops::conv2d_output_shape(xs, ws, cs.p);
    const Tensor x = random_tensor(xs, kFloat32, -1, 1, g).to(emu());
    const Tensor w = random_tensor(ws, kFloat32, -1, 1, g).to(emu());
    const Tensor dy = random_tensor(ys, kFloat32, -1, 1, g).to(emu());
    const ConvRef ref = conv_reference(cs, x.to_vector<double>(), w.to_vector<double>(), {},
                                       dy.to_vector<double>(), ys[2], ys[3]);
    double err[2][2];  // [direct, fft][forward, backward-data]
    const char* algos[] = {"direct", "fft"};
    for (int a = 0; a < 2; ++a) {
      ops::set_conv_algo(algos[a]);
      err[a][0] = rel_rms(ops::conv2d(x, w, Tensor(), cs.p).to_vector<double>(), ref.y);
      err[a][1] = rel_rms(ops::conv2d_backward_data(dy, w, xs, cs.p).to_vector<double>(), ref.dx);
    }
    MESSAGE(std::string(cs.name), ": relative RMS error forward direct ", err[0][0], ", fft ",
            err[1][0], "; backward-data direct ", err[0][1], ", fft ", err[1][1]);
    CHECK(err[1][0] <= 3 * err[0][0]);
    CHECK(err[1][1] <= 3 * err[0][1]);
  }
}

TEST_CASE("emu fft: bit-identical over three runs in each thread order, chunked or not") {
  ConvPolicyGuard guard;
  std::mt19937 g(fresh_seed());
  const ConvCase cs{"9x9, several tiles a side",     2, 5, 29, 30, 3, 9, 9,
                    conv_params(1, 1, 4, 4, 1, 1, 1)};
  const Shape xs{cs.n, cs.c, cs.h, cs.w}, ws{cs.k, cs.c, cs.r, cs.s};
  const Shape ys = ops::conv2d_output_shape(xs, ws, cs.p);
  const Tensor x = random_tensor(xs, kFloat32, -1, 1, g).to(emu());
  const Tensor w = random_tensor(ws, kFloat32, -1, 1, g).to(emu());
  const Tensor b = random_tensor({cs.k}, kFloat32, -1, 1, g).to(emu());
  const ops::ConvKey key = ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat32, emu(), cs.p);
  const kernels::ConvFftPlan whole =
      kernels_for(emu()).conv2d_fft_plan(kFloat32, key.shape, key.direction);
  CHECK(whole.chunks[0] * whole.chunks[1] * whole.chunks[2] == 1);
  ops::set_conv_algo("fft");
  const std::vector<double> first = ops::conv2d(x, w, b, cs.p).to_vector<double>();
  const ConvRef ref = conv_reference(cs, x.to_vector<double>(), w.to_vector<double>(),
                                     b.to_vector<double>(), {}, ys[2], ys[3]);
  CHECK(rel_rms(first, ref.y) < 1e-6);
  for (const simt_test::Config& order : emu_orders()) {
    simt_test::ScopedOptions scoped(order);
    for (int run = 0; run < 3; ++run)
      CHECK(ops::conv2d(x, w, b, cs.p).to_vector<double>() == first);
  }
  // A cap that leaves room for one image, two input and two output channels at a time: the
  // chunks add their products in channel order, so the answer is the unchunked one bit for bit
  // (the same spectra, the same terms in the same order, the same explicit FMAs).
  {
    const size_t spectrum_bytes = 8 * size_t(whole.spectrum);
    const size_t tiles = size_t(whole.tiles_h * whole.tiles_w);
    CapGuard cap(spectrum_bytes * (2 * 2 + (2 + 2) * tiles));
    const kernels::ConvFftPlan p =
        kernels_for(emu()).conv2d_fft_plan(kFloat32, key.shape, key.direction);
    CHECK(p.images == 1);
    CHECK(p.in_chunk == 2);
    CHECK(p.out_chunk == 2);
    CHECK(p.chunks[0] == 2);
    CHECK(p.chunks[1] == 3);
    CHECK(p.chunks[2] == 2);
    CHECK(p.workspace_bytes == spectrum_bytes * (2 * 2 + (2 + 2) * tiles));
    const std::vector<double> chunked = ops::conv2d(x, w, b, cs.p).to_vector<double>();
    CHECK(rel_rms(chunked, ref.y) < 1e-6);
    CHECK(chunked == first);
    const Tensor dy = random_tensor(ys, kFloat32, -1, 1, g).to(emu());
    const std::vector<double> dx = ops::conv2d_backward_data(dy, w, xs, cs.p).to_vector<double>();
    unsetenv("EMBER_CONV_FFT_CAP");
    CHECK(ops::conv2d_backward_data(dy, w, xs, cs.p).to_vector<double>() == dx);
  }
}

TEST_CASE("emu fft: refuses stride, dilation, groups, backward-filter and a cap it cannot meet") {
  ConvPolicyGuard guard;
  struct Refusal {
    const char* name;
    Shape xs, ws;
    ops::Conv2dParams p;
    ConvDirection d;
    const char* reason;
    const char* shape;
  };
  constexpr ConvDirection fwd = ConvDirection::forward, bwd_data = ConvDirection::backward_data,
                          bwd_filter = ConvDirection::backward_filter;
  // clang-format off
  const Refusal refusals[] = {
      {"stride 2", {1, 3, 17, 17}, {4, 3, 7, 7}, conv_params(2, 2, 3, 3, 1, 1, 1), fwd,
       "stride 1 only", "stride 2x2"},
      {"dilation 2", {1, 3, 17, 17}, {4, 3, 7, 7}, conv_params(1, 1, 3, 3, 2, 2, 1), bwd_data,
       "dilation 1 only", "dil 2x2"},
      {"groups 3", {1, 6, 17, 17}, {6, 2, 7, 7}, conv_params(1, 1, 3, 3, 1, 1, 3), fwd,
       "groups 1 only", "groups 3"},
      {"backward-filter", {1, 3, 17, 17}, {4, 3, 7, 7}, conv_params(1, 1, 3, 3, 1, 1, 1),
       bwd_filter, "backward-filter is not implemented", "R7 S7"},
      // 30000 x 30000 at 13 x 13: some 330,000 tiles of 64 points for one image and one
      // channel, 11 GB of spectra against the 256 MiB cap.
      {"over the cap", {1, 1, 30000, 30000}, {1, 1, 13, 13}, conv_params(1, 1, 6, 6, 1, 1, 1), fwd,
       "workspace cap", "H30000 W30000"},
  };
  // clang-format on

  for (const Refusal& r : refusals) {
    CAPTURE(r.name);
    const ops::ConvKey key = ops::conv2d_key(r.d, r.xs, r.ws, kFloat32, emu(), r.p);
    const ops::ConvSelection sel = ops::explain_conv_algos(key);
    for (const ops::ConvCandidate& c : sel.candidates)
      if (c.name == "fft") {
        CHECK_FALSE(c.supported);
        check_message(c.reason, {r.reason, r.shape});
      }
  }
  // Forced onto one of them, the convolution fails naming the algorithm, the shape and why.
  ops::set_conv_algo("fft");
  const Tensor x = zeros({1, 3, 17, 17}, {kFloat32, emu()});
  const Tensor w = zeros({4, 3, 7, 7}, {kFloat32, emu()});
  try {
    ops::conv2d(x, w, Tensor(), conv_params(2, 2, 3, 3, 1, 1, 1));
    FAIL("a forced fft ran a stride-2 convolution");
  } catch (const ValueError& e) {
    check_message(e.what(), {"fft", "stride 1 only", "stride 2x2", "N1 C3 H17 W17 K4 R7 S7"});
  }
  // The kernels themselves refuse too (std::invalid_argument, as every GPU kernel entry does).
  const ops::ConvKey key = ops::conv2d_key(ConvDirection::forward, {1, 3, 17, 17}, {4, 3, 7, 7},
                                           kFloat32, emu(), conv_params(2, 2, 3, 3, 1, 1, 1));
  CHECK_THROWS_AS(
      kernels_for(emu()).conv2d_fwd_fft(kFloat32, key.shape, x.data_ptr(), w.data_ptr(), nullptr,
                                        nullptr, nullptr, 0, ops::stream_of(emu())),
      std::invalid_argument);
}

TEST_CASE("emu fft: the plan's tile, and the heuristic picks fft only for large filters") {
  ConvPolicyGuard guard;
  auto plan = [](const Shape& xs, const Shape& ws, const ops::Conv2dParams& p) {
    const ops::ConvKey k = ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat32, emu(), p);
    return kernels_for(emu()).conv2d_fft_plan(kFloat32, k.shape, k.direction);
  };
  // A 1x1 filter on an image smaller than a tile: one tile of 16.
  const kernels::ConvFftPlan small =
      plan({1, 3, 5, 7}, {2, 3, 1, 1}, conv_params(1, 1, 0, 0, 1, 1, 1));
  CHECK(small.tile == 16);
  CHECK(small.tiles_h * small.tiles_w == 1);
  CHECK(small.workspace_bytes == 8 * 16 * 9 * size_t(2 * 3 + (3 + 2) * 1));
  // 13 x 13 on 56 x 56, 64 channels: 64-point tiles would need 4 tiles, 32-point ones 9, but
  // the products cost T (T/2 + 1) each and dominate: 32 (Note [Choosing the FFT tile]).
  const kernels::ConvFftPlan mid =
      plan({8, 64, 56, 56}, {64, 64, 13, 13}, conv_params(1, 1, 6, 6, 1, 1, 1));
  CHECK(mid.tile == 32);
  CHECK(mid.out_h == 20);
  CHECK(mid.tiles_h == 3);
  // 17 x 17 on 40 x 40, two channels: the transforms dominate, and one 64-point tile (48 outputs
  // a side) beats nine of 32.
  const kernels::ConvFftPlan big =
      plan({1, 2, 40, 40}, {2, 2, 17, 17}, conv_params(1, 1, 8, 8, 1, 1, 1));
  CHECK(big.tile == 64);
  CHECK(big.out_h == 48);
  CHECK(big.tiles_h * big.tiles_w == 1);
  struct Pick {
    int64_t r, hw;
    const char* algo;
  };
  EmberKernelsOnly ember_only;  // the cost model's picks, not cuDNN's
  // Small filters go to the GEMM or Winograd algorithms (nullptr: anything but fft).
  for (const Pick& pick : {Pick{3, 56, nullptr}, Pick{5, 56, nullptr}, Pick{7, 56, "fft"},
                           Pick{9, 56, "fft"}, Pick{13, 28, "fft"}}) {
    CAPTURE(pick.r);
    const ops::Conv2dParams p = conv_params(1, 1, pick.r / 2, pick.r / 2, 1, 1, 1);
    for (ConvDirection d : {ConvDirection::forward, ConvDirection::backward_data}) {
      const ops::ConvKey k = ops::conv2d_key(d, {16, 64, pick.hw, pick.hw},
                                             {64, 64, pick.r, pick.r}, kFloat32, emu(), p);
      const std::string chosen = ops::explain_conv_algos(k).chosen;
      if (pick.algo != nullptr)
        CHECK(chosen == pick.algo);
      else
        CHECK((!chosen.empty() && chosen != "fft"));
    }
  }
}

#if !EMBER_TEST_DEVICE_CUDA
TEST_CASE(
    "emu fft: on a device with 64 KiB of opt-in shared memory, float64 avoids 64-point tiles") {
  // A float64 block of 64 points needs 67 KB of shared memory: more than a Turing GPU (sm_75)
  // lets a block opt in to. The emulator's limit lowered to 64 KiB stands for one.
  ConvPolicyGuard guard;
  std::mt19937 g(fresh_seed());
  const Shape xs{1, 2, 40, 40}, ws{2, 2, 17, 17};
  const ops::Conv2dParams p = conv_params(1, 1, 8, 8, 1, 1, 1);
  const ops::ConvKey key = ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat64, emu(), p);
  auto tile = [&] {
    return kernels_for(emu()).conv2d_fft_plan(kFloat64, key.shape, key.direction).tile;
  };
  CHECK(tile() == 64);
  simt::Options turing = simt::options();
  turing.shared_optin = 64 * 1024;
  const simt_test::ScopedOptions scoped(turing);
  CHECK(tile() == 32);
  const Tensor x = random_tensor(xs, kFloat64, -1, 1, g), w = random_tensor(ws, kFloat64, -1, 1, g);
  ops::set_conv_algo("direct");
  const Tensor want = ops::conv2d(x, w, Tensor(), p);
  ops::set_conv_algo("fft");
  const Tensor got = ops::conv2d(x.to(emu()), w.to(emu()), Tensor(), p);
  check_close(got, want, 1e-10, 1e-10);
}
#endif

}  // namespace ember::test
