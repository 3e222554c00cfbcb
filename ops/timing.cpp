// Timing work on a device (ops/timing.h).
#include "ops/timing.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "ops/dispatch.h"
#include "runtime/gpu.h"

namespace ember::ops {
namespace {

// Two timing events on a GPU device, destroyed with the scope.
struct EventPair {
  gpu::Backend& be;
  gpu::Event start, end;
  EventPair(Device d, gpu::Backend& b)
      : be(b), start(b.event_create(d.index, true)), end(b.event_create(d.index, true)) {}
  ~EventPair() {
    be.event_destroy(start);
    be.event_destroy(end);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

double median_run_ms(Device dev, int runs, const std::function<void()>& run) {
  std::vector<double> ms;
  if (dev.is_cpu()) {
    run();
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      run();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(ms);
  }
  gpu::Backend& be = gpu::backend(dev);
  const gpu::Stream stream = stream_of(dev);
  EventPair ev(dev, be);
  run();
  be.stream_synchronize(stream);
  for (int i = 0; i < runs; ++i) {
    be.event_record(ev.start, stream);
    run();
    be.event_record(ev.end, stream);
    be.event_synchronize(ev.end);
    ms.push_back(be.event_elapsed_ms(ev.start, ev.end));
  }
  return median(ms);
}

}  // namespace ember::ops
