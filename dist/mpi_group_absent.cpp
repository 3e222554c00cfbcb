// The MPI backend of a build without MPI: every entry point says why and how to get it.
#include "dist/backends.h"

namespace ember::dist {

std::string mpi_missing_reason() {
  return "this build of Ember has no MPI backend (no MPI was found when it was configured): "
         "install Open MPI (Debian: libopenmpi-dev openmpi-bin; scripts/setup.sh installs them) "
         "and configure again";
}

ProcessGroupPtr make_mpi_group(const Launch&, std::chrono::milliseconds) {
  EMBER_THROW(DistError, mpi_missing_reason());
}

Bootstrap mpi_bootstrap(std::chrono::milliseconds) {
  EMBER_THROW(DistError, mpi_missing_reason());
}

void mpi_bootstrap_broadcast(void*, int, std::chrono::milliseconds) {
  EMBER_THROW(DistError, mpi_missing_reason());
}

}  // namespace ember::dist
