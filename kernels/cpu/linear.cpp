#include "kernels/cpu/linear.h"

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {

namespace {
template <typename T>
void add_bias(int64_t rows, int64_t cols, const T* b, T* y) {
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain && !omp_in_parallel())
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * cols;
    for (int64_t c = 0; c < cols; ++c) row[c] += b[c];
  }
}
}  // namespace

void add_bias_rows_cpu(DType t, int64_t rows, int64_t cols, const void* bias, void* y) {
  EMBER_DISPATCH_FLOAT(t, "linear", [&] {
    add_bias<scalar_t>(rows, cols, static_cast<const scalar_t*>(bias), static_cast<scalar_t*>(y));
  });
}

}  // namespace ember::kernels::cpu
