// Checks shared by the tensor ops: devices, dtypes and dims, each raising a typed error whose
// message names the op and what was expected and found.
#pragma once

#include <initializer_list>

#include "runtime/tensor.h"

namespace ember::ops {

// requires: every tensor on the same device (DeviceError naming both devices otherwise).
// ensures:  returns that device.
Device check_same_device(const char* op, std::initializer_list<const Tensor*> tensors);

// requires: as check_same_device, and that device is the cpu (DeviceError: no kernel for that
//           device yet). For ops that have no GPU kernels yet.
void check_cpu_operands(const char* op, std::initializer_list<const Tensor*> tensors);

// requires: `t` is a compute dtype the op's kernels implement on `device`: on the cpu as
//           check_cpu_dtype; on cuda/emu float32, float64, int32 or int64 (DTypeError naming
//           op otherwise).
void check_compute_dtype(const char* op, DType t, Device device);

// requires: t is f32, f64, i32, i64, u8 or bool: the dtypes the CPU kernels implement.
void check_cpu_dtype(const char* op, DType t);

// requires: x on the cpu (as check_cpu_operands) and float32 or float64 (DTypeError naming op).
void check_cpu_float(const char* op, const Tensor& x);

}  // namespace ember::ops
