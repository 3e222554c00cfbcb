// Timing for the plain benchmarks (bench_gpu, bench_ladder, bench_conv_ladder): the median of
// several timed calls after two untimed ones; events on a GPU device, a steady clock on the cpu
// (whose ops are synchronous). On emu the events record host time, so emu timings are a check of
// the emulated path, not a GPU speed.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "runtime/device.h"
#include "runtime/gpu.h"

namespace ember::bench {

// Median milliseconds of `reps` timed calls of f (on a GPU each between two events on the default
// stream) after two untimed ones. requires: reps >= 1; f runs or enqueues its work on d.
inline double time_ms(Device d, int reps, const std::function<void()>& f) {
  if (d.is_cpu()) {
    std::vector<double> ms;
    for (int i = 0; i < 2; ++i) f();
    for (int i = 0; i < reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }
  gpu::Backend& be = gpu::backend(d);
  const gpu::Event start = be.event_create(d.index, true), stop = be.event_create(d.index, true);
  std::vector<double> ms;
  try {
    for (int i = 0; i < 2; ++i) f();
    be.device_synchronize(d.index);
    for (int i = 0; i < reps; ++i) {
      be.event_record(start, nullptr);
      f();
      be.event_record(stop, nullptr);
      be.event_synchronize(stop);
      ms.push_back(be.event_elapsed_ms(start, stop));
    }
  } catch (...) {
    be.event_destroy(start);
    be.event_destroy(stop);
    throw;
  }
  be.event_destroy(start);
  be.event_destroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace ember::bench
