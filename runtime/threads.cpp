// The cpu's thread count (runtime/threads.h), over OpenMP.
#include "runtime/threads.h"

#include <omp.h>

#include "runtime/error.h"

namespace ember {

void set_num_threads(int n) {
  EMBER_CHECK_VALUE(n >= 1, "set_num_threads: expected a positive number of threads, got ", n);
  omp_set_num_threads(n);
}

int get_num_threads() {
  return omp_get_max_threads();
}

}  // namespace ember
