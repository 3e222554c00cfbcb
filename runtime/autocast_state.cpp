#include "runtime/autocast_state.h"

namespace ember {

const char* autocast_device_name(AutocastDevice d) {
  return d == AutocastDevice::cpu ? "cpu" : "cuda";
}

AutocastState& autocast_state(AutocastDevice d) {
  thread_local AutocastState cpu{false, kBFloat16, true}, cuda{false, kFloat16, true};
  return d == AutocastDevice::cpu ? cpu : cuda;
}

int& autocast_nesting() {
  thread_local int depth = 0;
  return depth;
}

int& autocast_excluded() {
  thread_local int depth = 0;
  return depth;
}

std::string autocast_note() {
  std::string on;
  for (AutocastDevice d : {AutocastDevice::cuda, AutocastDevice::cpu}) {
    const AutocastState& s = autocast_state(d);
    if (!s.enabled) continue;
    on += std::string(on.empty() ? "" : ", ") + autocast_device_name(d) + " " + dtype_name(s.dtype);
  }
  return on.empty() ? "" : " (autocast on: " + on + ")";
}

}  // namespace ember
