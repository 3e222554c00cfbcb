// The cpu's random fills: Philox4x32-10 in float64 (runtime/rng.h), rounded to float32 when
// asked, which is what uniform_/normal_/bernoulli_ compute for a cpu tensor.
#include <vector>

#include "kernels/kernel_table.h"
#include "runtime/rng.h"

namespace ember::kernels::cpu {

void random_fill(RandomDist dist, DType t, int64_t n, void* out, uint64_t seed, uint64_t offset,
                 double a, double b, Stream) {
  EMBER_CHECK_DTYPE(t == DType::f32 || t == DType::f64,
                    "random_fill: the cpu kernel fills float32 or float64, got ", t);
  if (t == DType::f64) return philox_fill_f64(static_cast<double*>(out), n, seed, offset, dist, a, b);
  std::vector<double> buf(static_cast<size_t>(n));
  philox_fill_f64(buf.data(), n, seed, offset, dist, a, b);
  float* o = static_cast<float*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(buf[i]);
}

}  // namespace ember::kernels::cpu
