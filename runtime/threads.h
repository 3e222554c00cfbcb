// The cpu's thread count: how many OpenMP threads the CPU kernels use (PyTorch's
// torch.set_num_threads / get_num_threads). OMP_NUM_THREADS sets the starting value.
#pragma once

namespace ember {

// requires: n >= 1 (ValueError otherwise).
// ensures:  CPU kernels the calling thread runs afterwards use at most n threads. (OpenMP keeps
//           the setting per thread: other threads keep OMP_NUM_THREADS's value, or all cores.)
void set_num_threads(int n);
// The number of threads the CPU kernels use.
int get_num_threads();

}  // namespace ember
