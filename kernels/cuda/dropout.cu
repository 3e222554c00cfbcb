// Dropout: one thread per Philox block, i.e. per group of four elements, which it masks and
// scales by kernels/dropout_math.h's rule, which the CPU kernel shares (its loop body, one
// iteration per thread).
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"
#include "kernels/dropout_math.h"

#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

template <typename T, typename C = compute_t<T>>
__global__ void dropout_fwd_kernel(int64_t n, uint64_t seed, uint64_t offset, double keep, C scale,
                                   const T* __restrict__ x, bool* __restrict__ mask,
                                   T* __restrict__ y) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t b = global_thread(); b < blocks; b += grid_threads())
    dropout_block(b, n, seed, offset, keep, scale, x, mask, y);
}

template <typename T, typename C = compute_t<T>>
__global__ void dropout_bwd_kernel(int64_t n, C scale, const bool* __restrict__ mask,
                                   const T* __restrict__ dy, T* __restrict__ dx) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    dx[i] = static_cast<T>(mask[i] ? C(dy[i]) * scale : C(0));
}

}  // namespace

void dropout_fwd(DType t, int64_t n, uint64_t seed, uint64_t offset, double p, double scale,
                 const void* x, bool* mask, void* y, gpu::Stream stream) {
  dispatch_float_half(t, "dropout_fwd", [&](auto zero) {
    using T = decltype(zero);
    if (n == 0) return;
    EMBER_LAUNCH(dropout_fwd_kernel<T>, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0, stream, n,
                 seed, offset, 1.0 - p, static_cast<compute_t<T>>(scale), static_cast<const T*>(x),
                 mask, static_cast<T*>(y));
  });
}

void dropout_bwd(DType t, int64_t n, double scale, const bool* mask, const void* dy, void* dx,
                 gpu::Stream stream) {
  dispatch_float_half(t, "dropout_bwd", [&](auto zero) {
    using T = decltype(zero);
    if (n == 0) return;
    EMBER_LAUNCH(dropout_bwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, n,
                 static_cast<compute_t<T>>(scale), mask, static_cast<const T*>(dy),
                 static_cast<T*>(dx));
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS
