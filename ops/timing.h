// Timing work on a device, for the choices made by measurement: the convolution's benchmark
// policy (ops/conv2d_benchmark.cpp) and the `benchmark` backend preference (ops/cudnn_ops.cpp).
#pragma once

#include <functional>

#include "runtime/device.h"

namespace ember::ops {

// The median of `runs` timed calls of `run` after one untimed warm-up, in milliseconds. On a GPU
// device the calls are timed by events on the current stream, so that neither the host's launch
// overhead nor other streams' work is counted; on the cpu by the steady clock.
// requires: runs >= 1; `run` launches its work on the current stream of `device`.
double median_run_ms(Device device, int runs, const std::function<void()>& run);

}  // namespace ember::ops
