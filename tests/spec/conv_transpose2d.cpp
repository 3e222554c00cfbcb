// conv_transpose2d and its gradients on every target (tests/spec/spec.h) against the definition
// in a float64 loop: each input element scatters x * w into the outputs o = i * stride - pad +
// k * dilation of its group; the gradients gather through the same index map. Strides,
// paddings, output paddings (one below the stride, and one at or past the stride, allowed under
// a larger dilation), rectangular kernels, groups, a batch of 0, non-contiguous inputs; float32,
// float64 (within 16 roundings of the terms' absolute sum, as tests/ops/conv_test_util.h),
// float16 and bfloat16 (float32 sums rounded once).
#include <doctest/doctest.h>

#include <cmath>

#include "ops/conv_transpose2d.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

struct TCase {
  const char* name;
  int64_t n, cin, h, w, cout, kh, kw;
  ops::ConvTranspose2dParams p;
  Layout layout = Layout::contiguous;
};

ops::ConvTranspose2dParams tparams(int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t oph,
                                   int64_t opw, int64_t dh, int64_t dw, int64_t g) {
  ops::ConvTranspose2dParams p;
  p.conv.stride = {sh, sw}, p.conv.padding = {ph, pw}, p.conv.dilation = {dh, dw};
  p.conv.groups = g;
  p.output_padding = {oph, opw};
  return p;
}

// Values and, per element, the sum of its terms' magnitudes (the rounding bound's scale).
struct Ref {
  std::vector<double> v, mag;
};

struct TRef {
  Shape ys;
  Ref y, dx, dw, db;
};

TRef reference(const TCase& c, const std::vector<double>& x, const std::vector<double>& w,
               const std::vector<double>& b, const std::vector<double>& g_in, bool has_g) {
  const auto& q = c.p.conv;
  const int64_t g = q.groups, cig = c.cin / g, cog = c.cout / g;
  const int64_t oh = (c.h - 1) * q.stride[0] - 2 * q.padding[0] + q.dilation[0] * (c.kh - 1) +
                     c.p.output_padding[0] + 1;
  const int64_t ow = (c.w - 1) * q.stride[1] - 2 * q.padding[1] + q.dilation[1] * (c.kw - 1) +
                     c.p.output_padding[1] + 1;
  TRef r;
  r.ys = {c.n, c.cout, oh, ow};
  const size_t ny = static_cast<size_t>(c.n * c.cout * oh * ow);
  r.y.v.assign(ny, 0.0), r.y.mag.assign(ny, 0.0);
  r.dx.v.assign(x.size(), 0.0), r.dx.mag.assign(x.size(), 0.0);
  r.dw.v.assign(w.size(), 0.0), r.dw.mag.assign(w.size(), 0.0);
  r.db.v.assign(static_cast<size_t>(c.cout), 0.0), r.db.mag.assign(r.db.v.size(), 0.0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t oc = 0; oc < c.cout; ++oc)
      for (int64_t i = 0; i < oh * ow; ++i) {
        const size_t e = static_cast<size_t>((n * c.cout + oc) * oh * ow + i);
        r.y.v[e] = b.empty() ? 0.0 : b[oc];
        r.y.mag[e] = std::abs(r.y.v[e]);
        if (has_g) r.db.v[oc] += g_in[e], r.db.mag[oc] += std::abs(g_in[e]);
      }
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t ic = 0; ic < c.cin; ++ic)
      for (int64_t ih = 0; ih < c.h; ++ih)
        for (int64_t iw = 0; iw < c.w; ++iw) {
          const size_t xi = static_cast<size_t>(((n * c.cin + ic) * c.h + ih) * c.w + iw);
          const int64_t grp = ic / cig;
          for (int64_t j = 0; j < cog; ++j)
            for (int64_t a = 0; a < c.kh; ++a)
              for (int64_t bb = 0; bb < c.kw; ++bb) {
                const int64_t y0 = ih * q.stride[0] - q.padding[0] + a * q.dilation[0];
                const int64_t y1 = iw * q.stride[1] - q.padding[1] + bb * q.dilation[1];
                if (y0 < 0 || y0 >= oh || y1 < 0 || y1 >= ow) continue;
                const int64_t oc = grp * cog + j;
                const size_t ye = static_cast<size_t>(((n * c.cout + oc) * oh + y0) * ow + y1);
                const size_t wi = static_cast<size_t>(((ic * cog + j) * c.kh + a) * c.kw + bb);
                r.y.v[ye] += x[xi] * w[wi];
                r.y.mag[ye] += std::abs(x[xi] * w[wi]);
                if (!has_g) continue;
                r.dx.v[xi] += g_in[ye] * w[wi];
                r.dx.mag[xi] += std::abs(g_in[ye] * w[wi]);
                r.dw.v[wi] += g_in[ye] * x[xi];
                r.dw.mag[wi] += std::abs(g_in[ye] * x[xi]);
              }
        }
  return r;
}

// Within 16 roundings of float32 (the half types too: float32 sums) or float64 of the terms'
// magnitude, and, for the half types, 1 ulp of the result.
void check_close(const Tensor& got, Device dev, DType t, const Shape& s, const Ref& want) {
  const double eps = t == kFloat64 ? 2.3e-16 : 1.2e-7;
  check_result_each(got, dev, t, s, want.v, [&](size_t i) {
    Tolerance tol = default_tolerance(t);
    tol.rtol = 0;
    tol.atol = 16 * eps * want.mag[i] + 1e-30;
    return tol;
  });
}

}  // namespace

TEST_CASE("conv_transpose2d and its gradients match a float64 loop on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  const TCase cases[] = {
      {"3x3 plain", 2, 3, 4, 5, 4, 3, 3, tparams(1, 1, 0, 0, 0, 0, 1, 1, 1)},
      {"stride 2 pad 1 output_padding 1", 2, 3, 5, 4, 2, 3, 3, tparams(2, 2, 1, 1, 1, 1, 1, 1, 1),
       Layout::transposed},
      {"4x4 stride 2 (DCGAN)", 1, 4, 3, 3, 3, 4, 4, tparams(2, 2, 1, 1, 0, 0, 1, 1, 1)},
      {"asymmetric everything", 2, 3, 4, 3, 5, 2, 3, tparams(2, 1, 0, 1, 1, 0, 1, 2, 1),
       Layout::sliced},
      {"groups 2", 1, 4, 3, 4, 6, 3, 2, tparams(1, 2, 1, 0, 0, 1, 1, 1, 2)},
      {"depthwise", 2, 3, 4, 4, 3, 3, 3, tparams(2, 2, 1, 1, 1, 1, 1, 1, 3)},
      {"output_padding >= stride under dilation", 1, 2, 3, 4, 3, 3, 2,
       tparams(1, 1, 0, 1, 1, 2, 2, 3, 1)},
      {"batch 0", 0, 2, 3, 3, 2, 3, 3, tparams(2, 2, 0, 0, 0, 0, 1, 1, 1)},
      {"1x1 input", 2, 3, 1, 1, 4, 3, 3, tparams(1, 1, 0, 0, 0, 0, 1, 1, 1)},
  };
  for_each_target([&](Device dev) {
    for (const TCase& c : cases)
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16})
        for (bool bias : {false, true}) {
          CAPTURE(c.name);
          CAPTURE(t);
          CAPTURE(bias);
          const Shape xs{c.n, c.cin, c.h, c.w};
          const Shape ws{c.cin, c.cout / c.p.conv.groups, c.kh, c.kw};
          const Tensor x = random_operand(xs, t, c.layout, -2, 2, gen, 0.0, dev);
          const Tensor w = random_tensor(ws, t, -1, 1, gen).to(dev);
          const Tensor b = bias ? random_tensor({c.cout}, t, -1, 1, gen).to(dev) : Tensor();
          const Tensor y = ops::conv_transpose2d(x, w, b, c.p);
          const Tensor g = random_tensor(y.shape(), t, -1, 1, gen).to(dev);
          const TRef want = reference(c, x.to_vector<double>(), w.to_vector<double>(),
                                      bias ? b.to_vector<double>() : std::vector<double>{},
                                      g.to_vector<double>(), true);
          CHECK(ops::conv_transpose2d_output_shape(xs, ws, c.p) == want.ys);
          check_close(y, dev, t, want.ys, want.y);
          check_close(ops::conv_transpose2d_backward_input(g, w, xs, c.p), dev, t, xs, want.dx);
          check_close(ops::conv_transpose2d_backward_weight(g, x, ws, c.p), dev, t, ws, want.dw);
        }
  });
}

TEST_CASE("conv_transpose2d: typed errors on every target") {
  for_each_target([&](Device dev) {
    const Tensor x = zeros({1, 4, 3, 3}, {kFloat32, dev});
    const Tensor w = zeros({4, 2, 3, 3}, {kFloat32, dev});
    CHECK_THROWS_WITH_AS(ops::conv_transpose2d(x, w, Tensor(), tparams(2, 2, 0, 0, 2, 0, 1, 1, 1)),
                         doctest::Contains("output padding must be smaller"), ValueError);
    CHECK_THROWS_AS(ops::conv_transpose2d(x, zeros({3, 2, 3, 3}, {kFloat32, dev}), Tensor(),
                                          tparams(1, 1, 0, 0, 0, 0, 1, 1, 1)),
                    ShapeError);
    CHECK_THROWS_AS(ops::conv_transpose2d(x, w, zeros({3}, {kFloat32, dev}),
                                          tparams(1, 1, 0, 0, 0, 0, 1, 1, 1)),
                    ShapeError);
    CHECK_THROWS_AS(ops::conv_transpose2d(x, w, Tensor(), tparams(1, 1, 0, 0, 0, 0, 1, 1, 3)),
                    ShapeError);
    CHECK_THROWS_AS(
        ops::conv_transpose2d(x, w.to(kFloat64), Tensor(), tparams(1, 1, 0, 0, 0, 0, 1, 1, 1)),
        DTypeError);
  });
}

}  // namespace ember::test
