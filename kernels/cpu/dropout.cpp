#include "kernels/kernel_table.h"

#include "kernels/cpu/loops.h"
#include "kernels/dropout_math.h"

namespace ember::kernels::cpu {

namespace {

template <typename T>
void fwd(int64_t n, uint64_t seed, uint64_t offset, double p, double scale, const T* x, bool* mask,
         T* y) {
  using C = compute_t<T>;
  const double keep = 1.0 - p;
  const C s = static_cast<C>(scale);
  const int64_t blocks = (n + 3) / 4;
  // One Philox block gives the four lanes of elements 4b .. 4b + 3 (kernels/dropout_math.h).
  parallel_range(blocks, [&](int64_t lo, int64_t len) {
    for (int64_t b = lo; b < lo + len; ++b) dropout_block(b, n, seed, offset, keep, s, x, mask, y);
  });
}

template <typename T>
void bwd(int64_t n, double scale, const bool* mask, const T* dy, T* dx) {
  using C = compute_t<T>;
  const C s = static_cast<C>(scale);
  parallel_range(n, [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) dx[i] = static_cast<T>(mask[i] ? C(dy[i]) * s : C(0));
  });
}

}  // namespace

void dropout_fwd(DType t, int64_t n, uint64_t seed, uint64_t offset, double p, double scale,
                 const void* x, bool* mask, void* y, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "dropout", [&] {
    fwd<scalar_t>(n, seed, offset, p, scale, static_cast<const scalar_t*>(x), mask,
                  static_cast<scalar_t*>(y));
  });
}

void dropout_bwd(DType t, int64_t n, double scale, const bool* mask, const void* dy, void* dx,
                 Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "dropout_backward", [&] {
    bwd<scalar_t>(n, scale, mask, static_cast<const scalar_t*>(dy), static_cast<scalar_t*>(dx));
  });
}

}  // namespace ember::kernels::cpu
