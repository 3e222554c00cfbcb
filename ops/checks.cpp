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
  if (device.is_cpu()) return;
  EMBER_CHECK_DTYPE(is_floating(t) || t == kInt32 || t == kInt64, op, ": on ", device,
                    " only float32, float64, float16, bfloat16, int32 and int64 are implemented, "
                    "got ",
                    t, " (convert with .to(kInt64) or compute on the cpu)");
}

void check_floating(const char* op, const Tensor& x) {
  EMBER_CHECK_DTYPE(is_floating(x.dtype()), op,
                    ": expected a floating tensor (float32, float64, float16 or bfloat16), got ",
                    x.dtype(), " (convert with .to(kFloat32))");
}

}  // namespace ember::ops
