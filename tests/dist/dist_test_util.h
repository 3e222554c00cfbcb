// Helpers of the distributed tests (tests/dist). The mpi_* files run under mpirun with 2 and 3
// ranks (tests/CMakeLists.txt); every rank runs the same cases in the same order, so each
// collective meets its partners.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "dist/process_group.h"

namespace ember::test {

// The default process group (mpi backend), started on first use. A short timeout: a case that
// goes wrong on one rank fails the others in seconds instead of hanging.
inline dist::ProcessGroup& group() {
  if (!dist::is_initialized()) {
    dist::InitOptions o;
    o.backend = "mpi";
    o.timeout = std::chrono::seconds(60);
    dist::init_process_group(o);
  }
  return dist::default_group();
}

// The values rank `rank` contributes in case `tag`: every rank can compute every other rank's
// input, so each checks the collective against its own float64 reference.
inline std::vector<double> rank_values(int rank, int tag, int64_t n, double lo, double hi) {
  std::mt19937_64 gen(static_cast<uint64_t>(tag) * 1000003u + static_cast<uint64_t>(rank) * 7919u +
                      17u);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = u(gen);
  return v;
}

}  // namespace ember::test
