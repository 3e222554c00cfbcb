// Strided copy with dtype conversion: one grid-stride kernel per (destination, source) type pair,
// all eight dtypes both ways.
#include "kernels/cuda/compat.h"
#include "kernels/kernel_table.h"
#include "kernels/cuda/device_utils.cuh"

#include <stdexcept>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

// Note [Float to narrow integer casts]: converting a float outside the target's range (-3.0f to
// uint8) is undefined in C++. x86 (the cpu and emu builds) truncates to a 32-bit integer and
// keeps the low bits, so -3.0f becomes 253; the GPU saturates to 0. Going through int64 makes the
// GPU give the cpu's answer for every value that fits in an int32 (wider targets keep the plain
// cast).
// Half types convert through float, as the cpu's scalar_cast (runtime/dtype.h) does (widened
// keeping a NaN's sign: Note [Half NaNs keep their sign] in device_utils.cuh).
template <typename D, typename S>
__device__ __forceinline__ D convert(S v) {
  if constexpr (kIsHalf<S>)
    return convert<D>(widen(v));
  else if constexpr (kIsHalf<D>)
    return D(static_cast<float>(v));
  else if constexpr (std::is_same_v<D, bool>)
    return v != S(0);
  else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D> &&
                     sizeof(D) < sizeof(int))
    return static_cast<D>(static_cast<int64_t>(v));
  else
    return static_cast<D>(v);
}

template <typename D, typename S>
__global__ void copy_strided_kernel(StridedIndex<2> s, int64_t n, D* __restrict__ dst,
                                    const S* __restrict__ src) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    int64_t off[2];
    strided_offsets(s, i, off);
    dst[off[0]] = convert<D>(src[off[1]]);
  }
}

template <typename D, typename S>
void launch(const StridedIndex<2>& s, int64_t n, void* dst, const void* src, gpu::Stream stream) {
  auto* k = &copy_strided_kernel<D, S>;
  EMBER_LAUNCH(k, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s, n, static_cast<D*>(dst),
               static_cast<const S*>(src));
}

template <typename D>
void launch_from(DType src_t, const StridedIndex<2>& s, int64_t n, void* dst, const void* src,
                 gpu::Stream stream) {
  switch (src_t) {
    case DType::f32:
      return launch<D, float>(s, n, dst, src, stream);
    case DType::f64:
      return launch<D, double>(s, n, dst, src, stream);
    case DType::i32:
      return launch<D, int32_t>(s, n, dst, src, stream);
    case DType::i64:
      return launch<D, int64_t>(s, n, dst, src, stream);
    case DType::u8:
      return launch<D, uint8_t>(s, n, dst, src, stream);
    case DType::b8:
      return launch<D, bool>(s, n, dst, src, stream);
    case DType::f16:
      return launch<D, __half>(s, n, dst, src, stream);
    case DType::bf16:
      return launch<D, __nv_bfloat16>(s, n, dst, src, stream);
  }
  throw std::invalid_argument("copy_strided: unknown source dtype");
}

}  // namespace

void copy_strided(DType dst_t, DType src_t, const StridedIndex<2>& index, void* dst,
                  const void* src, gpu::Stream stream) {
  int64_t n = 1;
  for (int d = 0; d < index.ndim; ++d) n *= index.sizes[d];
  if (n == 0) return;
  switch (dst_t) {
    case DType::f32:
      return launch_from<float>(src_t, index, n, dst, src, stream);
    case DType::f64:
      return launch_from<double>(src_t, index, n, dst, src, stream);
    case DType::i32:
      return launch_from<int32_t>(src_t, index, n, dst, src, stream);
    case DType::i64:
      return launch_from<int64_t>(src_t, index, n, dst, src, stream);
    case DType::u8:
      return launch_from<uint8_t>(src_t, index, n, dst, src, stream);
    case DType::b8:
      return launch_from<bool>(src_t, index, n, dst, src, stream);
    case DType::f16:
      return launch_from<__half>(src_t, index, n, dst, src, stream);
    case DType::bf16:
      return launch_from<__nv_bfloat16>(src_t, index, n, dst, src, stream);
  }
  throw std::invalid_argument("copy_strided: unknown destination dtype");
}

}  // namespace ember::kernels::EMBER_KERNEL_NS
