// Autocast's per-thread state: for each kind of device, whether an autocast region is open and
// its lower-precision dtype, and how deeply the regions nest. autograd/autocast.h opens the
// regions and applies the op policy; the state lives here, below it, so that every DTypeError
// can say whether autocast was on when it was raised (runtime/error.cpp).
#pragma once

#include <string>

#include "runtime/device.h"
#include "runtime/dtype.h"

namespace ember {

// The device kinds autocast tells apart, PyTorch's device_type: `cuda`, which covers the cuda and
// emu devices (they run the same kernels), and `cpu`.
enum class AutocastDevice : uint8_t { cpu, cuda };
inline AutocastDevice autocast_device_of(Device d) {
  return d.is_cpu() ? AutocastDevice::cpu : AutocastDevice::cuda;
}
const char* autocast_device_name(AutocastDevice d);

struct AutocastState {
  bool enabled = false;
  DType dtype = kFloat16;  // the lower precision: float16 or bfloat16
  bool cache_enabled = true;
};

// This thread's state for `d` (default: disabled; float16 for cuda, bfloat16 for cpu).
AutocastState& autocast_state(AutocastDevice d);
// This thread's count of open AutocastGuards, enabled or not (the cast cache is cleared when it
// returns to 0), and of running autocast wrappers (inside one, ops are not cast again).
int& autocast_nesting();
int& autocast_excluded();

// " (autocast: cuda float16 on)" naming each enabled device kind, or "" when none is: what a
// DTypeError appends to its message.
std::string autocast_note();

}  // namespace ember
