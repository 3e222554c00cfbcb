// Every kernel entry point that each device implements, listed once: one table per device
// (`cpu`: kernels/cpu, `cuda`: kernels/cuda by nvcc, `emu`: kernels/cuda by g++ on the SIMT
// emulator), the same names and signatures on all three, the stream last (the cpu ignores it).
// An op picks its kernels in one line: `kernels_for(x.device()).max_pool2d_fwd(...)`.
//
// Each entry's contract (what it requires of its buffers, what it writes) is written next to
// its parameters in kernels/<op>_shape.h. The common rules: buffers live on the table's device;
// dtypes are Ember's DType, and a kernel given one it does not implement throws (DTypeError on
// the cpu, std::invalid_argument on a GPU; ops/ checks dtypes first, so users see ops' errors);
// GPU entries enqueue on `stream` and return without waiting; `*_workspace_bytes` say how much
// scratch memory the matching kernel wants on that device (0: none; the pointer may be null).
//
// Adding a kernel: one line in EMBER_KERNEL_LIST, one definition per device. Adding a device:
// one more namespace declared from the list and one more table in kernels/kernel_table.cpp.
// Algorithms that exist on one device only (the cpu's im2col_gemm, cuDNN) are not entries
// here: the convolution registry (ops/conv2d_algo.h) reaches them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/amp_shape.h"
#include "kernels/batch_norm_shape.h"
#include "kernels/conv_fft_plan.h"
#include "kernels/conv_shape.h"
#include "kernels/elementwise_shape.h"
#include "kernels/gemm_shape.h"
#include "kernels/index_shape.h"
#include "kernels/interpolate_shape.h"
#include "kernels/loss_shape.h"
#include "kernels/norm_rows_shape.h"
#include "kernels/optim_shape.h"
#include "kernels/pad_shape.h"
#include "kernels/pool_shape.h"
#include "kernels/reduce_shape.h"
#include "kernels/softmax_shape.h"
#include "kernels/sort_shape.h"
#include "kernels/winograd_shape.h"
#include "runtime/dtype.h"
#include "runtime/gpu.h"
#include "runtime/philox.h"

namespace ember::kernels {

using Stream = ::ember::gpu::Stream;

// X(name, return type, (parameters)).
#define EMBER_KERNEL_LIST(X)                                                                       \
  /* elementwise, copies and random fills (kernels/elementwise_shape.h) */                         \
  X(binary_contiguous, void,                                                                       \
    (BinaryOp op, DType t, int64_t n, void* out, const void* a, const void* b, Stream stream))     \
  X(binary_strided, void,                                                                          \
    (BinaryOp op, DType t, const StridedIndex<2>& index, void* out, const void* a, const void* b,  \
     Stream stream))                                                                               \
  X(unary_contiguous, void,                                                                        \
    (UnaryOp op, DType t, const UnaryParams& p, int64_t n, void* out, const void* a,               \
     Stream stream))                                                                               \
  X(unary_strided, void,                                                                           \
    (UnaryOp op, DType t, const UnaryParams& p, const StridedIndex<1>& index, void* out,           \
     const void* a, Stream stream))                                                                \
  X(where_strided, void,                                                                           \
    (DType t, const StridedIndex<3>& index, void* out, const bool* cond, const void* a,            \
     const void* b, Stream stream))                                                                \
  X(copy_strided, void,                                                                            \
    (DType dst_t, DType src_t, const StridedIndex<2>& index, void* dst, const void* src,           \
     Stream stream))                                                                               \
  X(random_fill, void,                                                                             \
    (RandomDist dist, DType t, int64_t n, void* out, uint64_t seed, uint64_t offset, double a,     \
     double b, Stream stream))                                                                     \
  /* indexing (kernels/index_shape.h) */                                                           \
  X(index_gather, void,                                                                            \
    (int elem_bytes, const IndexIteration& it, const IndexedDims& dims, const IndexPointers& idx,  \
     void* out, const void* src, uint64_t* fault, Stream stream))                                  \
  X(index_scatter_workspace_bytes, size_t, (const IndexIteration& it))                             \
  X(index_scatter, void,                                                                           \
    (ScatterMode mode, DType t, const IndexIteration& it, const IndexedDims& dims,                 \
     const IndexPointers& idx, void* dst, const void* src, uint64_t* fault, void* workspace,       \
     size_t workspace_bytes, Stream stream))                                                       \
  X(nonzero_coords, void,                                                                          \
    (const NonzeroShape& s, int64_t n, const int64_t* prefix, int64_t* out, Stream stream))        \
  /* sorting and scans (kernels/sort_shape.h) */                                                   \
  X(sort_workspace_bytes, size_t, (DType t, const SortShape& s))                                   \
  X(sort_rows, void,                                                                               \
    (DType t, const SortShape& s, const void* keys, void* sorted, int64_t* indices,                \
     void* workspace, size_t workspace_bytes, Stream stream))                                      \
  X(scan, void,                                                                                    \
    (ScanOp op, DType t, const ScanShape& s, const void* in, void* out, Stream stream))            \
  X(cumprod_backward, void,                                                                        \
    (DType t, const ScanShape& s, const void* x, const void* g, void* dx, Stream stream))          \
  /* reductions (kernels/reduce_shape.h), matrix products (kernels/gemm_shape.h) */                \
  X(reduce_workspace_bytes, size_t, (ReduceOp op, DType t, const ReduceShape& s))                 \
  X(reduce, void,                                                                                  \
    (ReduceOp op, DType t, const ReduceShape& s, const void* in, void* out, void* workspace,       \
     Stream stream))                                                                               \
  X(gemm_batched, void,                                                                            \
    (DType t, const GemmShape& s, const void* a, const void* b, void* c, Stream stream))           \
  X(gemm_plan, GemmPlan,                                                                           \
    (DType t, const GemmShape& s, const void* a, const void* b, const void* c))                    \
  X(gemm_tc_batched, void,                                                                         \
    (const TcGemm& g, const void* a, const void* b, void* c, Stream stream))                       \
  X(gemm_tc_plan, TcGemmPlan, (const TcGemm& g, const void* a, const void* b, const void* c))      \
  /* optimiser updates (kernels/optim_shape.h) */                                                  \
  X(sgd_step, void,                                                                                \
    (DType t, void* p, const void* g, void* buf, int64_t n, const SgdParams& s, Stream stream))    \
  X(adam_step, void,                                                                               \
    (DType t, void* p, const void* g, void* m, void* v, int64_t n, const AdamParams& s,            \
     Stream stream))                                                                               \
  X(rmsprop_step, void,                                                                            \
    (DType t, void* p, const void* g, void* square_avg, void* grad_avg, void* momentum_buffer,     \
     int64_t n, const RmspropParams& s, Stream stream))                                            \
  X(adagrad_step, void,                                                                            \
    (DType t, void* p, const void* g, void* sum, int64_t n, const AdagradParams& s,                \
     Stream stream))                                                                               \
  X(clip_grad_scale, void,                                                                         \
    (DType t, void* g, int64_t n, DType norm_t, const void* total_norm, double max_norm,           \
     Stream stream))                                                                               \
  /* the loss scaler (kernels/amp_shape.h) */                                                      \
  X(amp_unscale, void,                                                                             \
    (DType t, void* g, int64_t n, float* found_inf, const float* scale, Stream stream))            \
  X(amp_update_scale, void,                                                                        \
    (float* scale, int32_t* tracker, const float* found_inf, double growth, double backoff,        \
     int64_t interval, Stream stream))                                                             \
  X(amp_count_step, void, (double* step, const float* found_inf, Stream stream))                   \
  /* convolution (kernels/conv_shape.h) */                                                         \
  X(conv2d_fwd_direct, void,                                                                       \
    (DType t, const ConvShape& s, const void* x, const void* w, const void* bias, void* y,         \
     Stream stream))                                                                               \
  X(conv2d_bwd_data_direct, void,                                                                  \
    (DType t, const ConvShape& s, const void* dy, const void* w, void* dx, Stream stream))         \
  X(conv2d_bwd_filter_direct, void,                                                                \
    (DType t, const ConvShape& s, const void* dy, const void* x, void* dw, Stream stream))         \
  X(conv2d_tc_supports, const char*, (DType t, const ConvShape& s, ConvDirection d))               \
  X(conv2d_tc, void,                                                                               \
    (DType t, const ConvShape& s, ConvDirection d, const void* a, const void* b, const void* bias, \
     void* out, Stream stream))                                                                    \
  X(conv2d_implicit_gemm_supports, bool,                                                           \
    (DType t, const ConvShape& s, ConvDirection d, const char** why))                              \
  X(conv2d_implicit_gemm_workspace_bytes, size_t, (DType t, const ConvShape& s, ConvDirection d))  \
  X(conv2d_implicit_gemm_plan, ConvGemmPlan, (DType t, const ConvShape& s, ConvDirection d))       \
  X(conv2d_fwd_implicit_gemm, void,                                                                \
    (DType t, const ConvShape& s, const void* x, const void* w, const void* bias, void* y,         \
     void* workspace, size_t workspace_bytes, Stream stream))                                      \
  X(conv2d_bwd_data_implicit_gemm, void,                                                           \
    (DType t, const ConvShape& s, const void* dy, const void* w, void* dx, void* workspace,        \
     size_t workspace_bytes, Stream stream))                                                       \
  X(conv2d_bwd_filter_implicit_gemm, void,                                                         \
    (DType t, const ConvShape& s, const void* dy, const void* x, void* dw, void* workspace,        \
     size_t workspace_bytes, Stream stream))                                                       \
  /* Winograd F(2x2, 3x3) and F(4x4, 3x3), non-fused (kernels/winograd_shape.h) */                 \
  X(conv2d_fwd_winograd, void,                                                                     \
    (DType t, WinogradTile tile, const ConvShape& s, const void* x, const void* w,                 \
     const void* bias, void* y, void* workspace, size_t workspace_bytes, Stream stream))           \
  X(conv2d_bwd_data_winograd, void,                                                                \
    (DType t, WinogradTile tile, const ConvShape& s, const void* dy, const void* w, void* dx,      \
     void* workspace, size_t workspace_bytes, Stream stream))                                      \
  /* FFT convolution (kernels/conv_fft_plan.h): forward and backward-data */                       \
  X(conv2d_fft_supports, bool, (DType t, const ConvShape& s, ConvDirection d, const char** why))   \
  X(conv2d_fft_plan, ConvFftPlan, (DType t, const ConvShape& s, ConvDirection d))                  \
  X(conv2d_fft_workspace_bytes, size_t, (DType t, const ConvShape& s, ConvDirection d))            \
  X(conv2d_fwd_fft, void,                                                                          \
    (DType t, const ConvShape& s, const void* x, const void* w, const void* bias, void* y,         \
     void* workspace, size_t workspace_bytes, Stream stream))                                      \
  X(conv2d_bwd_data_fft, void,                                                                     \
    (DType t, const ConvShape& s, const void* dy, const void* w, void* dx, void* workspace,        \
     size_t workspace_bytes, Stream stream))                                                       \
  X(conv2d_fft_tiles, void,                                                                        \
    (DType t, int tile, int64_t count, bool inverse, const void* in, void* out, Stream stream))    \
  /* pooling (kernels/pool_shape.h) */                                                             \
  X(max_pool2d_fwd, void,                                                                          \
    (DType t, const PoolShape& s, const void* x, void* y, int64_t* idx, Stream stream))            \
  X(max_pool2d_bwd_workspace_bytes, size_t, (const PoolShape& s))                                  \
  X(max_pool2d_bwd, void,                                                                          \
    (DType t, const PoolShape& s, const void* dy, const int64_t* idx, void* dx,                    \
     int64_t* workspace, Stream stream))                                                           \
  X(avg_pool2d_fwd, void, (DType t, const PoolShape& s, const void* x, void* y, Stream stream))    \
  X(avg_pool2d_bwd, void, (DType t, const PoolShape& s, const void* dy, void* dx, Stream stream))  \
  X(adaptive_avg_pool2d_fwd, void,                                                                 \
    (DType t, const PoolShape& s, const void* x, void* y, Stream stream))                          \
  X(adaptive_avg_pool2d_bwd, void,                                                                 \
    (DType t, const PoolShape& s, const void* dy, void* dx, Stream stream))                        \
  /* batch norm (kernels/batch_norm_shape.h) */                                                    \
  X(batch_norm_workspace_bytes, size_t, (const BatchNormShape& s))                                 \
  X(batch_norm_fwd, void,                                                                          \
    (DType t, const BatchNormShape& s, const BatchNormParams& p, const void* x,                    \
     const void* weight, const void* bias, void* running_mean, void* running_var, void* y,         \
     void* save_mean, void* save_invstd, double* workspace, Stream stream))                        \
  X(batch_norm_bwd, void,                                                                          \
    (DType t, const BatchNormShape& s, bool training, const void* x, const void* dy,               \
     const void* weight, const void* save_mean, const void* save_invstd, void* dx, void* dweight,  \
     void* dbias, double* workspace, Stream stream))                                               \
  /* activations (kernels/activation_math.h), softmax (kernels/softmax_shape.h) */                 \
  X(activation_fwd, void,                                                                          \
    (Activation act, DType t, const ActivationParams& p, int64_t n, const void* x, void* y,        \
     Stream stream))                                                                               \
  X(activation_bwd, void,                                                                          \
    (Activation act, DType t, const ActivationParams& p, int64_t n, const void* saved,             \
     const void* dy, void* dx, Stream stream))                                                     \
  X(softmax_fwd, void,                                                                             \
    (DType t, const SoftmaxShape& s, bool log, const void* x, void* y, Stream stream))             \
  X(softmax_bwd, void,                                                                             \
    (DType t, const SoftmaxShape& s, bool log, const void* y, const void* dy, void* dx,            \
     Stream stream))                                                                               \
  /* losses (kernels/loss_shape.h) */                                                              \
  X(nll_workspace_bytes, size_t, (const NllShape& s))                                              \
  X(cross_entropy_fwd, void,                                                                       \
    (DType t, const NllShape& s, const void* logits, const int64_t* target, const void* weight,    \
     void* log_probs, void* loss, double* workspace, double divisor, void* total, Stream stream))  \
  X(nll_fwd, void,                                                                                 \
    (DType t, const NllShape& s, const void* log_probs, const int64_t* target, const void* weight, \
     void* loss, double* workspace, double divisor, void* total, Stream stream))                   \
  X(nll_bwd, void,                                                                                 \
    (DType t, const NllShape& s, bool fused, const void* log_probs, const int64_t* target,         \
     const void* weight, const void* grad, int64_t grad_stride, double scale, void* dx,            \
     Stream stream))                                                                               \
  X(mse_workspace_bytes, size_t, (int64_t n))                                                      \
  X(mse_fwd, void,                                                                                 \
    (DType t, int64_t n, const void* x, const void* y, void* loss, double* workspace,              \
     double divisor, void* total, Stream stream))                                                  \
  X(mse_bwd, void,                                                                                 \
    (DType t, int64_t n, const void* x, const void* y, const void* grad, int64_t grad_stride,      \
     double scale, void* dx, Stream stream))                                                       \
  /* layer, group and instance norm (kernels/norm_rows_shape.h) */                                 \
  X(norm_rows_fwd, void,                                                                           \
    (DType t, const NormRowsShape& s, const void* x, const void* weight, const void* bias,         \
     void* y, void* mean, void* rstd, Stream stream))                                              \
  X(norm_rows_bwd_workspace_bytes, size_t, (const NormRowsShape& s))                               \
  X(norm_rows_bwd, void,                                                                           \
    (DType t, const NormRowsShape& s, const void* x, const void* dy, const void* weight,           \
     const void* mean, const void* rstd, void* dx, void* dweight, void* dbias, double* workspace,  \
     Stream stream))                                                                               \
  /* padding (kernels/pad_shape.h), interpolation (kernels/interpolate_shape.h) */                 \
  X(pad_fwd, void, (DType t, const PadShape& s, const void* x, void* y, Stream stream))            \
  X(pad_bwd, void, (DType t, const PadShape& s, const void* dy, void* dx, Stream stream))          \
  X(interpolate_fwd, void, (DType t, const InterpShape& s, const void* x, void* y, Stream stream)) \
  X(interpolate_bwd, void,                                                                         \
    (DType t, const InterpShape& s, const void* dy, void* dx, Stream stream))                      \
  /* dropout (kernels/dropout_math.h) */                                                           \
  X(dropout_fwd, void,                                                                             \
    (DType t, int64_t n, uint64_t seed, uint64_t offset, double p, double scale, const void* x,    \
     bool* mask, void* y, Stream stream))                                                          \
  X(dropout_bwd, void,                                                                             \
    (DType t, int64_t n, double scale, const bool* mask, const void* dy, void* dx, Stream stream))

#define EMBER_KERNEL_DECLARE(name, ret, params) ret name params;
#define EMBER_KERNEL_FIELD(name, ret, params) ret(*name) params;

// One table of function pointers per device.
struct KernelTable {
  EMBER_KERNEL_LIST(EMBER_KERNEL_FIELD)
};

namespace cpu {
EMBER_KERNEL_LIST(EMBER_KERNEL_DECLARE)
}  // namespace cpu
namespace cuda {
EMBER_KERNEL_LIST(EMBER_KERNEL_DECLARE)
}  // namespace cuda
namespace emu {
EMBER_KERNEL_LIST(EMBER_KERNEL_DECLARE)
}  // namespace emu

#undef EMBER_KERNEL_FIELD
#undef EMBER_KERNEL_DECLARE

}  // namespace ember::kernels

namespace ember {

// The kernel table of `d`'s device type. For cuda and emu it also makes `d` the calling
// thread's current device, since kernels launch on the current device (a tensor on cuda:1 runs
// its kernels there); the device stays current afterwards.
// Throws DeviceError for cuda in a build without it.
const kernels::KernelTable& kernels_for(Device d);

}  // namespace ember
