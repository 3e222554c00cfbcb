// Event timing for the plain GPU benchmarks (bench_gpu, bench_ladder): the median of several
// timed calls after two untimed ones. On emu the events record host time, so emu timings are a
// check of the emulated path, not a GPU speed.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "runtime/device.h"
#include "runtime/gpu.h"

namespace ember::bench {

// Median milliseconds of `reps` timed calls of f (each between two events on the default
// stream) after two untimed ones. requires: reps >= 1; f enqueues its work on d.
inline double time_ms(Device d, int reps, const std::function<void()>& f) {
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
