// Process groups (dist/process_group.h): the checks the backends share, how the process was
// launched, and the default group.
#include "dist/process_group.h"

#include <cstdlib>
#include <mutex>

#include "dist/backends.h"

namespace ember::dist {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::avg:
      return "avg";
    case ReduceOp::product:
      return "product";
    case ReduceOp::min:
      return "min";
    case ReduceOp::max:
      return "max";
  }
  return "?";
}

void ProcessGroup::check_tensor(const char* what, const Tensor& t) const {
  EMBER_CHECK_VALUE(t.defined(), what, ": got an undefined tensor");
  EMBER_CHECK_VALUE(t.is_contiguous(), what, ": the tensor must be contiguous (got shape ",
                    t.shape(), " with strides ", t.strides(), "); call .contiguous() first");
}

void ProcessGroup::check_op(const char* what, const Tensor& t, ReduceOp op) const {
  EMBER_CHECK_DTYPE(op != ReduceOp::avg || is_floating(t.dtype()), what,
                    ": ReduceOp.AVG needs a floating-point tensor, got ", t.dtype(),
                    " (use SUM and divide, so that the rounding is yours)");
}

void ProcessGroup::check_list(const char* what, const std::vector<Tensor>& list, const Tensor& like,
                              const char* list_name) const {
  EMBER_CHECK_VALUE(static_cast<int>(list.size()) == size_, what, ": expected ", size_, " ",
                    list_name, " (one per rank), got ", list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    check_tensor(what, list[i]);
    EMBER_CHECK_SHAPE(list[i].shape() == like.shape(), what, ": ", list_name, "[", i,
                      "] has shape ", list[i].shape(), ", expected ", like.shape());
    EMBER_CHECK_DTYPE(list[i].dtype() == like.dtype(), what, ": ", list_name, "[", i,
                      "] has dtype ", list[i].dtype(), ", expected ", like.dtype());
    EMBER_CHECK_DEVICE(list[i].device() == like.device(), what, ": ", list_name, "[", i, "] is on ",
                       list[i].device(), ", expected ", like.device());
  }
}

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, int lo, int hi) {
  const char* v = env(name);
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  EMBER_CHECK_VALUE(end && *end == '\0' && x >= lo && x <= hi, "environment variable ", name, "='",
                    v, "': expected an integer in [", lo, ", ", hi, "]");
  return static_cast<int>(x);
}

std::mutex g_mutex;
ProcessGroupPtr g_default;

}  // namespace

std::string Launch::describe() const {
  switch (kind) {
    case Kind::mpi:
      return "mpirun (rank " + std::to_string(rank) + " of " + std::to_string(world_size) + ")";
    case Kind::env:
      return "env:// (rank " + std::to_string(rank) + " of " + std::to_string(world_size) + ", " +
             master_addr + ":" + std::to_string(master_port) + ")";
    case Kind::none:
      break;
  }
  return "a single process";
}

std::string how_to_launch(const std::string& program) {
  return "start one process per rank with mpirun (`mpirun -np 2 " + program +
         "`; Open MPI refuses root unless given --allow-run-as-root), or with a launcher that sets "
         "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in each process (the nccl backend, "
         "e.g. `RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 " +
         program + " --device cuda:0`, and RANK=1 with cuda:1); docs/distributed.md";
}

Launch detect_launch() {
  Launch l;
  constexpr int kMax = 1 << 20;
  if (env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMIX_RANK")) {
    l.kind = Launch::Kind::mpi;
    if (env("OMPI_COMM_WORLD_SIZE")) {
      l.world_size = env_int("OMPI_COMM_WORLD_SIZE", 1, kMax);
      l.rank = env_int("OMPI_COMM_WORLD_RANK", 0, kMax);
    } else if (env("PMI_SIZE")) {
      l.world_size = env_int("PMI_SIZE", 1, kMax);
      l.rank = env("PMI_RANK") ? env_int("PMI_RANK", 0, kMax) : 0;
    } else {
      l.world_size = 0;  // known once MPI is up
    }
  }
  const bool any_env = env("RANK") || env("WORLD_SIZE") || env("MASTER_ADDR") || env("MASTER_PORT");
  if (any_env) {
    for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
      EMBER_CHECK_T(DistError, env(v) || l.kind == Launch::Kind::mpi, "env:// launch: ", v,
                    " is not set (a launcher for env:// sets RANK, "
                    "WORLD_SIZE, MASTER_ADDR and MASTER_PORT in every process)");
    if (env("RANK") && env("WORLD_SIZE") && env("MASTER_ADDR") && env("MASTER_PORT")) {
      const int world = env_int("WORLD_SIZE", 1, kMax);
      const int rank = env_int("RANK", 0, world - 1);
      EMBER_CHECK_VALUE(l.kind != Launch::Kind::mpi || l.world_size == 0 ||
                            (rank == l.rank && world == l.world_size),
                        "RANK=", rank, " and WORLD_SIZE=", world, " disagree with mpirun's rank ",
                        l.rank, " of ", l.world_size, "; unset them or make them match");
      if (l.kind == Launch::Kind::none) l.kind = Launch::Kind::env;
      l.rank = rank;
      l.world_size = world;
      l.master_addr = env("MASTER_ADDR");
      l.master_port = env_int("MASTER_PORT", 1, 65535);
    }
  }
  return l;
}

ProcessGroupPtr init_process_group(const InitOptions& o) {
  EMBER_CHECK_VALUE(o.backend == "mpi" || o.backend == "nccl",
                    "init_process_group: unknown backend '", o.backend,
                    "': Ember has 'mpi' (cpu tensors, and host copies of emu and cuda "
                    "tensors) and 'nccl' (cuda tensors)");
  EMBER_CHECK_VALUE(o.init_method == "env://", "init_process_group: init_method '", o.init_method,
                    "' is not supported: use 'env://' (the variables mpirun or an env:// launcher "
                    "sets)");
  EMBER_CHECK_VALUE(o.timeout.count() > 0, "init_process_group: the timeout must be positive");
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    EMBER_CHECK_VALUE(!g_default,
                      "init_process_group: the default process group is already "
                      "initialised; call destroy_process_group() first");
  }
  const Launch launch = detect_launch();
  EMBER_CHECK_T(DistError, launch.kind != Launch::Kind::none,
                "init_process_group: this process was not launched for distributed work (no "
                "mpirun variables and no RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT): ",
                how_to_launch());
  ProcessGroupPtr pg;
  if (o.backend == "mpi") {
    EMBER_CHECK_T(DistError, launch.kind == Launch::Kind::mpi,
                  "init_process_group(backend='mpi'): MPI's ranks come from mpirun, and this "
                  "process was started by ",
                  launch.describe(), "; start it with `mpirun -np ", launch.world_size,
                  " ...`, or use backend='nccl' for cuda tensors");
    pg = make_mpi_group(launch, o.timeout);
  } else {
    pg = make_nccl_group(launch, o.timeout, o.device);
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_default = pg;
  return pg;
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_default != nullptr;
}

ProcessGroupPtr default_group_ptr() {
  std::lock_guard<std::mutex> lock(g_mutex);
  EMBER_CHECK_VALUE(g_default != nullptr,
                    "the default process group is not initialised; call "
                    "init_process_group() first");
  return g_default;
}

ProcessGroup& default_group() {
  return *default_group_ptr();
}

int get_rank() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_default ? g_default->rank() : 0;
}

int get_world_size() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_default ? g_default->size() : 1;
}

void destroy_process_group() {
  ProcessGroupPtr pg;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    pg.swap(g_default);
  }
}

}  // namespace ember::dist
