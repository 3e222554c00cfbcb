// The backends' constructors, for dist/process_group.cpp. Each is built in its own file and
// replaced by a stub that says why when the build lacks its library (mpi_group_absent.cpp,
// nccl_group_absent.cpp).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "dist/process_group.h"
#include "dist/store.h"

namespace ember::dist {

// Empty when the backend is compiled in, else why not (for errors and `ember doctor`).
std::string mpi_missing_reason();
std::string nccl_missing_reason();

// requires: launch.kind == mpi (DistError otherwise); initialises MPI (once per process).
ProcessGroupPtr make_mpi_group(const Launch& launch, std::chrono::milliseconds timeout);
// requires: an env:// launch (the unique id goes through the TCP store) or an MPI launch (it
// goes through MPI); `device` a usable cuda device.
ProcessGroupPtr make_nccl_group(const Launch& launch, std::chrono::milliseconds timeout,
                                Device device);

// Under an MPI launch: starts MPI if needed, and a TCP store on rank 0 whose address every rank
// learns through MPI (127.0.0.1 when all ranks share rank 0's host name, else MASTER_ADDR or rank
// 0's host name). Every step waits with the deadline (DistError after it).
struct Bootstrap {
  int rank = 0, size = 1;
  std::unique_ptr<TcpStore> store;  // rank 0's also runs the server
};
Bootstrap mpi_bootstrap(std::chrono::milliseconds timeout);
// Broadcasts `bytes` bytes at `data` from rank 0 over MPI_COMM_WORLD (the NCCL unique id).
void mpi_bootstrap_broadcast(void* data, int bytes, std::chrono::milliseconds timeout);

}  // namespace ember::dist
