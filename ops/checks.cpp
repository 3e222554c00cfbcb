#include "ops/checks.h"

namespace ember::ops {

Device check_same_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = *tensors.begin();
  for (const Tensor* t : tensors)
    EMBER_CHECK_DEVICE(t->device() == first->device(), op,
                       ": expected all tensors on the same device, got ", first->device(), " and ",
                       t->device());
  return first->device();
}

void check_compute_dtype(const char* op, DType t, Device device) {
  if (device.is_cpu()) return check_cpu_dtype(op, t);
  EMBER_CHECK_DTYPE(t == kFloat32 || t == kFloat64 || t == kInt32 || t == kInt64, op, ": on ",
                    device, " only float32, float64, int32 and int64 are implemented, got ", t,
                    " (convert with .to(kFloat32) or compute on the cpu)");
}

void check_cpu_operands(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = *tensors.begin();
  check_same_device(op, tensors);
  EMBER_CHECK_DEVICE(first->device().is_cpu(), op, ": no kernel for device ", first->device(),
                     " yet (only cpu is implemented); move the tensors with .cpu()");
}

void check_cpu_dtype(const char* op, DType t) {
  EMBER_CHECK_DTYPE(t != DType::f16 && t != DType::bf16, op, ": ", t,
                    " is not supported on the cpu; expected float32, float64, int32, int64, "
                    "uint8 or bool (convert with .to(kFloat32))");
}

void check_cpu_float(const char* op, const Tensor& x) {
  check_cpu_operands(op, {&x});
  EMBER_CHECK_DTYPE(x.dtype() == kFloat32 || x.dtype() == kFloat64, op,
                    ": expected a float32 or float64 tensor, got ", x.dtype());
}

}  // namespace ember::ops
