// A seeded bug for the AddressSanitizer build: a kernel with an off-by-one bound writes one
// element past the end of its buffer. Run on the emulator, ASan must report the overflow with
// the kernel's source line (ctest checks the report).
#include <cstdio>
#include <memory>

#include "kernels/cuda/compat.h"

namespace ember::seeded {
__global__ void oob_write_kernel(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) out[i] = 1.0f;  // the bug: i == n is past the end
}
}  // namespace ember::seeded

int main() {
  const int n = 64;
  std::unique_ptr<float[]> buf(new float[n]);
  EMBER_LAUNCH(ember::seeded::oob_write_kernel, dim3(1), dim3(n + 1), 0, nullptr, buf.get(), n);
  std::printf("the out-of-bounds write went unreported\n");
  return 0;
}
