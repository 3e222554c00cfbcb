// Checks shared by the tensor ops: devices, dtypes and dims, each raising a typed error whose
// message names the op and what was expected and found.
#pragma once

#include <initializer_list>

#include "runtime/tensor.h"

namespace ember::ops {

// requires: every tensor on the same device (DeviceError naming both devices otherwise).
// ensures:  returns that device.
Device check_same_device(const char* op, std::initializer_list<const Tensor*> tensors);

// requires: `t` is a compute dtype the op's kernels implement on `device`: on the cpu any; on
//           cuda/emu float32, float64, float16, bfloat16, int32 or int64 (DTypeError naming op
//           otherwise).
void check_compute_dtype(const char* op, DType t, Device device);

// requires: x of a floating dtype: float32, float64, float16 or bfloat16 (DTypeError naming op
//           otherwise). For ops whose kernels compute every floating dtype.
void check_floating(const char* op, const Tensor& x);

}  // namespace ember::ops
