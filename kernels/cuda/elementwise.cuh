// Elementwise unary, binary and where kernels for the GPU backends, declared for both builds
// (ember::kernels::cuda by nvcc, ember::kernels::emu by g++).
//
// requires: t is f32, f64, i32 or i64 (std::invalid_argument otherwise; integer t: no div, and
//           of the unary ops only neg, abs and clamp); every pointer on the backend's device;
//           `out` contiguous over the iteration space (n elements, or the product of
//           index.sizes); inputs addressed through index.strides (0 along broadcast dims);
//           comparisons write bool (one byte per element), every other op writes t.
// ensures:  the same values as kernels/cpu/elementwise (NaN-propagating maximum/minimum; clamp
//           as min(max(x, lo), hi) with NaN passing through and integer bounds rounded inwards;
//           integer pow with a negative exponent 0 unless the base is 1 or -1), up to the
//           device's rounding of exp/log/pow; throws CudaError if a launch fails.
#define EMBER_ELEMENTWISE_KERNEL_DECLS                                                        \
  void binary_contiguous(gpu_types::BinaryOp op, gpu_types::Scalar t, int64_t n, void* out,   \
                         const void* a, const void* b, ::ember::gpu::Stream stream);          \
  void binary_strided(gpu_types::BinaryOp op, gpu_types::Scalar t,                            \
                      const gpu_types::StridedIndex<2>& index, void* out, const void* a,      \
                      const void* b, ::ember::gpu::Stream stream);                            \
  void unary_contiguous(gpu_types::UnaryOp op, gpu_types::Scalar t, double lo, double hi,     \
                        int64_t n, void* out, const void* a, ::ember::gpu::Stream stream);    \
  void unary_strided(gpu_types::UnaryOp op, gpu_types::Scalar t, double lo, double hi,        \
                     const gpu_types::StridedIndex<1>& index, void* out, const void* a,       \
                     ::ember::gpu::Stream stream);                                            \
  void where_strided(gpu_types::Scalar t, const gpu_types::StridedIndex<3>& index, void* out, \
                     const bool* cond, const void* a, const void* b, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_ELEMENTWISE_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_ELEMENTWISE_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_ELEMENTWISE_KERNEL_DECLS
