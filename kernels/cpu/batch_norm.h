// CPU kernels for batch normalisation over [N, C, S] contiguous data (S = product of the
// spatial sizes, 1 for [N, C] input). Work is split across channels.
#pragma once

#include <cstdint>

#include "kernels/batch_norm_shape.h"
#include "runtime/dtype.h"

namespace ember::kernels::cpu {

using kernels::BatchNormParams;
using kernels::BatchNormShape;

// y = (x - mean) * invstd * weight + bias, per channel.
// Training: mean and the biased variance come from x, accumulated in double (float32: one pass
// over values shifted by the channel's first one; float64: two passes);
// running_mean/running_var (may be null) become (1 - momentum) * old + momentum * batch, with the
// unbiased batch variance. Eval: mean and variance are running_mean/running_var.
// requires: t is f32 or f64; every pointer but x/y has c elements of type t; weight, bias may be
//           null (1 and 0); training needs n * s > 1, eval needs both running pointers.
// ensures:  save_mean/save_invstd hold the mean and 1/sqrt(var + eps) that were used.
void batch_norm_fwd_cpu(DType t, const BatchNormShape& shape, const BatchNormParams& params,
                        const void* x, const void* weight, const void* bias, void* running_mean,
                        void* running_var, void* y, void* save_mean, void* save_invstd);

// Gradients of batch_norm_fwd_cpu from dy and the saved statistics. Training differentiates
// through the batch mean and variance; eval treats them as constants.
// requires: dx, dweight, dbias may each be null (not wanted); weight may be null (1).
void batch_norm_bwd_cpu(DType t, const BatchNormShape& shape, bool training, const void* x,
                        const void* dy, const void* weight, const void* save_mean,
                        const void* save_invstd, void* dx, void* dweight, void* dbias);

}  // namespace ember::kernels::cpu
