// Matrix products through Eigen, parallelised by Ember rather than by Eigen.
//
// Note [Eigen's threads]: Eigen splits every product above ~50k multiply-adds over all OpenMP
// threads and synchronises them with spin-waits. For the many small products of a training step
// that costs far more than it saves (a LeNet step on 2 threads took 8 ms instead of 0.5 ms).
// So Ember turns Eigen's threading off once, and turns it on around each large product made
// outside an OpenMP region (Eigen's partition is fixed, so results do not depend on timing).
// Inside an OpenMP region (e.g. one image per thread) products run serially. The switch is a
// process-wide setting of Eigen's: two user threads running large Ember products at the same
// moment share it, which changes only how many threads each product uses.
#pragma once

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>

namespace ember::kernels::cpu {

// Products with fewer multiply-adds run on one thread.
constexpr int64_t kParallelProductMacs = int64_t{1} << 21;

// Eigen::setNbThreads(1), done once per process; returns true.
bool eigen_serial_once();

// dst = lhs * rhs (or dst += lhs * rhs): serial below kParallelProductMacs or inside an OpenMP
// region; above it, outside one, with Eigen's own parallel GEMM for this product only.
template <typename Dst, typename Lhs, typename Rhs>
void product_rows(Dst&& dst, const Lhs& lhs, const Rhs& rhs, bool accumulate = false) {
  static const bool serial = eigen_serial_once();
  (void)serial;
  const int64_t macs = static_cast<int64_t>(dst.rows()) * static_cast<int64_t>(dst.cols()) *
                       static_cast<int64_t>(lhs.cols());
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const bool parallel = threads > 1 && macs >= kParallelProductMacs;
  if (parallel) Eigen::setNbThreads(threads);
  if (accumulate)
    dst.noalias() += lhs * rhs;
  else
    dst.noalias() = lhs * rhs;
  if (parallel) Eigen::setNbThreads(1);
}

}  // namespace ember::kernels::cpu
