// A seeded bug for the ThreadSanitizer build: threads of a block write shared memory and read a
// neighbour's slot with no barrier between. The emulator tells TSan that each CUDA thread is a
// fiber of its own, so TSan must report the data race (ctest checks the report).
#include <cstdio>
#include <vector>

#include "kernels/cuda/compat.h"

namespace ember::seeded {
__global__ void shared_race_kernel(const float* x, float* y) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  s[t] = x[t];
  y[t] = s[63 - t];  // the bug: no __syncthreads() before reading another thread's slot
}
}  // namespace ember::seeded

int main() {
  std::vector<float> x(64, 1.0f), y(64, 0.0f);
  EMBER_LAUNCH(ember::seeded::shared_race_kernel, dim3(1), dim3(64), 0, nullptr, x.data(), y.data());
  std::printf("the shared-memory race went unreported\n");
  return 0;
}
