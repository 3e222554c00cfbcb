// The loss scaler's kernels on the cpu (kernels/amp_shape.h).
#include <cmath>

#include "kernels/cpu/loops.h"
#include "kernels/kernel_table.h"

namespace ember::kernels::cpu {

namespace {

// Half gradients are multiplied in float and rounded once (kernels/cpu/loops.h).
template <typename T, typename C = compute_t<T>>
bool unscale(T* v, int64_t n, float inv) {
  bool bad = false;
#pragma omp parallel for if (n > (1 << 16)) schedule(static) reduction(|| : bad)
  for (int64_t i = 0; i < n; ++i) {
    const C x = static_cast<C>(v[i]);
    bad = bad || !std::isfinite(x);
    if (inv != 1.0f) v[i] = T(x * static_cast<C>(inv));
  }
  return bad;
}

}  // namespace

void amp_unscale(DType t, void* g, int64_t n, float* found_inf, const float* scale, Stream) {
  // PyTorch takes the reciprocal in float64 and rounds it to float once.
  const float inv = scale ? static_cast<float>(1.0 / static_cast<double>(*scale)) : 1.0f;
  EMBER_DISPATCH_FLOAT_HALF(t, "amp_unscale", [&] {
    if (unscale(static_cast<scalar_t*>(g), n, inv)) *found_inf = 1.0f;
  });
}

void amp_update_scale(float* scale, int32_t* tracker, const float* found_inf, double growth,
                      double backoff, int64_t interval, Stream) {
  if (*found_inf != 0.0f) {
    *scale = static_cast<float>(*scale * backoff);
    *tracker = 0;
    return;
  }
  const int64_t s = static_cast<int64_t>(*tracker) + 1;
  if (s == interval) {
    const float grown = static_cast<float>(*scale * growth);
    if (std::isfinite(grown)) *scale = grown;
    *tracker = 0;
  } else {
    *tracker = static_cast<int32_t>(s);
  }
}

void amp_count_step(double* step, const float* found_inf, Stream) {
  if (found_inf == nullptr || *found_inf == 0.0f) *step += 1;
}

}  // namespace ember::kernels::cpu
