// Pooling and batch norm on cuDNN (docs/gpu_backend.md, "Pooling and batch norm on cuDNN"):
// the legacy calls, as the graph API has neither as a standalone op. Each `*_refusal` says why
// cuDNN cannot compute a case exactly as Ember's kernels do (nullptr when it can); the op then
// runs Ember's kernel. The operands are contiguous NCHW on the handle's device.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include "kernels/batch_norm_shape.h"
#include "kernels/pool_shape.h"
#include "runtime/dtype.h"

namespace ember::ops::cudnn {

// --- Pooling: cudnnPoolingForward / cudnnPoolingBackward ----------------------------------------

enum class PoolKind : uint8_t { max, avg };

// cuDNN's windows are PyTorch's when there is no dilation, no divisor_override, and no extra
// window of ceil_mode (cuDNN's output sizes are floor's); every size must fit an int.
const char* pool_refusal(PoolKind k, const kernels::PoolShape& s);
// y from x: max (deterministic mode, NaN propagated) or average (padding counted as
// s.count_include_pad says). requires: pool_refusal(k, s) == nullptr.
void pooling_forward(cudnnHandle_t h, PoolKind k, DType t, const kernels::PoolShape& s,
                     const void* x, void* y);
// dx from dy, x and the forward's y (cuDNN's max backward finds each window's maximum again
// from x and y; it has no indices). Average pooling reads neither: x and y may then be any
// buffers of their sizes.
void pooling_backward(cudnnHandle_t h, PoolKind k, DType t, const kernels::PoolShape& s,
                      const void* x, const void* y, const void* dy, void* dx);

// --- Batch norm: cudnnBatchNormalization*Ex, SPATIAL (or SPATIAL_PERSISTENT) mode ---------------

struct BatchNormCall {
  DType t = DType::f32;
  kernels::BatchNormShape s;  // x is n x c x s, seen by cuDNN as n x c x s x 1
  double eps = 1e-5;
  bool persistent = false;  // CUDNN_BATCHNORM_SPATIAL_PERSISTENT (set_cudnn_batch_norm_persistent)
};

// Why cuDNN cannot normalise `c` (nullptr when it can): a dtype other than float32 / float64,
// sizes beyond its int descriptors, eps below CUDNN_BN_MIN_EPSILON.
const char* batch_norm_refusal(const BatchNormCall& c);
// The reserve space the training forward fills and the backward reads (0 bytes in SPATIAL mode
// on current cuDNN; the persistent mode may need some).
size_t batch_norm_reserve_bytes(cudnnHandle_t h, const BatchNormCall& c);

// Training: y, the batch mean and 1/sqrt(var + eps) (Ember's save_mean and save_invstd), and the
// running stats (may be null) updated with `momentum` and the unbiased variance, as PyTorch. The
// workspace comes from the caching allocator of `device`. w and b: c.s.c values (not null).
void batch_norm_forward_training(cudnnHandle_t h, int device, const BatchNormCall& c,
                                 double momentum, const void* x, const void* w, const void* b,
                                 void* running_mean, void* running_var, void* y, void* save_mean,
                                 void* save_invstd, void* reserve, size_t reserve_bytes);
// Eval: y from the running stats.
void batch_norm_forward_inference(cudnnHandle_t h, const BatchNormCall& c, const void* x,
                                  const void* w, const void* b, const void* running_mean,
                                  const void* running_var, void* y);
// The training backward: dx, dw and db (none null) from the forward's saved statistics and
// reserve space.
void batch_norm_backward(cudnnHandle_t h, int device, const BatchNormCall& c, const void* x,
                         const void* dy, const void* w, const void* save_mean,
                         const void* save_invstd, void* dx, void* dw, void* db, void* reserve,
                         size_t reserve_bytes);

}  // namespace ember::ops::cudnn
