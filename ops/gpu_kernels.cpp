// The per-backend kernel tables, and the device hooks the runtime calls for copies and random
// fills on GPU-like devices (registered here when the library loads, since runtime/ may not
// include kernels).
#include "ops/gpu_kernels.h"

#include "ember/build_config.h"
#include "runtime/gpu.h"
#include "runtime/rng.h"

namespace ember::ops {

namespace {

// One line per launcher, a section per op family.
#define EMBER_GPU_KERNEL_TABLE(ns)                                                     \
  [] {                                                                                 \
    GpuKernels k{};                                                                    \
    k.binary_contiguous = &kernels::ns::binary_contiguous;                             \
    k.binary_strided = &kernels::ns::binary_strided;                                   \
    k.unary_contiguous = &kernels::ns::unary_contiguous;                               \
    k.unary_strided = &kernels::ns::unary_strided;                                     \
    k.where_strided = &kernels::ns::where_strided;                                     \
    k.copy_strided = &kernels::ns::copy_strided;                                       \
    k.reduce_rows = &kernels::ns::reduce_rows;                                         \
    k.gemm_batched = &kernels::ns::gemm_batched;                                       \
    k.random_fill = &kernels::ns::random_fill;                                         \
    k.sgd_step = &kernels::ns::sgd_step;                                               \
    k.adam_step = &kernels::ns::adam_step;                                             \
    /* convolution */                                                                  \
    k.conv2d_fwd_direct = &kernels::ns::conv2d_fwd_direct;                             \
    k.conv2d_bwd_data_direct = &kernels::ns::conv2d_bwd_data_direct;                   \
    k.conv2d_bwd_filter_direct = &kernels::ns::conv2d_bwd_filter_direct;               \
    k.conv2d_fwd_implicit_gemm = &kernels::ns::conv2d_fwd_implicit_gemm;               \
    k.conv2d_bwd_data_implicit_gemm = &kernels::ns::conv2d_bwd_data_implicit_gemm;     \
    k.conv2d_bwd_filter_implicit_gemm = &kernels::ns::conv2d_bwd_filter_implicit_gemm; \
    k.conv2d_implicit_gemm_workspace = &kernels::ns::conv2d_implicit_gemm_workspace;   \
    /* pooling, batch norm */                                                          \
    k.max_pool2d_fwd = &kernels::ns::max_pool2d_fwd;                                   \
    k.max_pool2d_bwd = &kernels::ns::max_pool2d_bwd;                                   \
    k.avg_pool2d_fwd = &kernels::ns::avg_pool2d_fwd;                                   \
    k.avg_pool2d_bwd = &kernels::ns::avg_pool2d_bwd;                                   \
    k.adaptive_avg_pool2d_fwd = &kernels::ns::adaptive_avg_pool2d_fwd;                 \
    k.adaptive_avg_pool2d_bwd = &kernels::ns::adaptive_avg_pool2d_bwd;                 \
    k.batch_norm_fwd = &kernels::ns::batch_norm_fwd;                                   \
    k.batch_norm_bwd = &kernels::ns::batch_norm_bwd;                                   \
    /* activations, softmax, losses, dropout */                                        \
    k.activation_fwd = &kernels::ns::activation_fwd;                                   \
    k.activation_bwd = &kernels::ns::activation_bwd;                                   \
    k.softmax_fwd = &kernels::ns::softmax_fwd;                                         \
    k.softmax_bwd = &kernels::ns::softmax_bwd;                                         \
    k.cross_entropy_fwd = &kernels::ns::cross_entropy_fwd;                             \
    k.nll_fwd = &kernels::ns::nll_fwd;                                                 \
    k.nll_bwd = &kernels::ns::nll_bwd;                                                 \
    k.mse_fwd = &kernels::ns::mse_fwd;                                                 \
    k.mse_bwd = &kernels::ns::mse_bwd;                                                 \
    k.dropout_fwd = &kernels::ns::dropout_fwd;                                         \
    k.dropout_bwd = &kernels::ns::dropout_bwd;                                         \
    return k;                                                                          \
  }()

constexpr GpuKernels kEmuKernels = EMBER_GPU_KERNEL_TABLE(emu);
#if EMBER_HAVE_CUDA
constexpr GpuKernels kCudaKernels = EMBER_GPU_KERNEL_TABLE(cuda);
#endif
#undef EMBER_GPU_KERNEL_TABLE

// Tensor::copy_ between two views on one GPU-like device.
bool device_copy(const Tensor& dst, const Tensor& src) {
  if (!gpu_has_scalar(dst.dtype()) || !gpu_has_scalar(src.dtype())) return false;
  gpu_types::StridedIndex<2> index;
  if (!make_strided_index<2>(dst.shape(), {dst.strides(), src.strides()}, index)) return false;
  gpu_kernels(dst.device())
      .copy_strided(gpu_scalar(dst.dtype(), "copy_"), gpu_scalar(src.dtype(), "copy_"), index,
                    dst.data_ptr(), src.data_ptr(), nullptr);
  return true;
}

// uniform_/normal_/bernoulli_ on a GPU-like device: straight into a contiguous float tensor,
// otherwise through a float64 one (as the CPU fills go through float64).
bool device_random_fill(Tensor& t, RandomDist dist, double a, double b, uint64_t seed,
                        uint64_t offset) {
  const GpuKernels& k = gpu_kernels(t.device());
  const gpu_types::RandomDist d = dist == RandomDist::Uniform  ? gpu_types::RandomDist::uniform
                                  : dist == RandomDist::Normal ? gpu_types::RandomDist::normal
                                                               : gpu_types::RandomDist::bernoulli;
  if ((t.dtype() == kFloat32 || t.dtype() == kFloat64) && t.is_contiguous()) {
    k.random_fill(d, gpu_scalar(t.dtype(), "random fill"), t.numel(), t.data_ptr(), seed, offset, a,
                  b, nullptr);
    return true;
  }
  if (!gpu_has_scalar(t.dtype())) return false;
  Tensor tmp = empty(t.shape(), {kFloat64, t.device()});
  k.random_fill(d, gpu_types::Scalar::f64, tmp.numel(), tmp.data_ptr(), seed, offset, a, b,
                nullptr);
  t.copy_(tmp);
  return true;
}

const bool kHooksRegistered = [] {
  set_device_copy(&device_copy);
  set_device_random_fill(&device_random_fill);
  return true;
}();

}  // namespace

const GpuKernels& gpu_kernels(DeviceType type) {
  switch (type) {
    case DeviceType::EMU:
      return kEmuKernels;
    case DeviceType::CUDA:
#if EMBER_HAVE_CUDA
      return kCudaKernels;
#else
      EMBER_THROW(DeviceError,
                  "cuda: this build of Ember has no CUDA kernels (it was built "
                  "without nvcc); use the cpu or emu device");
#endif
    case DeviceType::CPU:
      break;
  }
  EMBER_THROW(DeviceError, "gpu_kernels: the cpu has no GPU kernel table");
}

const GpuKernels& gpu_kernels(Device d) {
  const GpuKernels& k = gpu_kernels(d.type);
  gpu::backend(d).set_device(d.index);
  return k;
}

bool gpu_has_scalar(DType t) {
  return t != DType::f16 && t != DType::bf16;
}

gpu_types::Scalar gpu_scalar(DType t, const char* op) {
  switch (t) {
    case DType::f32:
      return gpu_types::Scalar::f32;
    case DType::f64:
      return gpu_types::Scalar::f64;
    case DType::i32:
      return gpu_types::Scalar::i32;
    case DType::i64:
      return gpu_types::Scalar::i64;
    case DType::u8:
      return gpu_types::Scalar::u8;
    case DType::b8:
      return gpu_types::Scalar::b8;
    default:
      break;
  }
  EMBER_THROW(DTypeError, op, ": the GPU kernels do not implement ", t,
              " yet (convert with .to(kFloat32))");
}

Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  const int64_t nd = static_cast<int64_t>(shape.size()), td = t.dim();
  Shape st(shape.size(), 0);
  for (int64_t i = 0; i < td; ++i) {
    const int64_t d = nd - td + i;
    st[d] = t.shape()[i] == 1 && shape[d] != 1 ? 0 : t.strides()[i];
  }
  return st;
}

}  // namespace ember::ops
