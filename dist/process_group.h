// Process groups: the ranks of a distributed job and the collectives between them, with
// PyTorch's semantics (torch.distributed). Two backends: `mpi` (dist/mpi_group.h: cpu tensors,
// and host copies of emu and cuda tensors) and `nccl` (dist/nccl_group.h: cuda tensors, on a
// stream of its own).
//
// Every collective is asynchronous: it returns a Work whose wait() blocks until the result is in
// place (on cuda: until the current stream is ordered after it, with no host wait). A collective
// that does not finish within the group's timeout raises DistError naming the ranks that stopped
// answering (dist/watchdog.h). Tensors are updated in place and must be contiguous.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dist/errors.h"
#include "runtime/tensor.h"

namespace ember::dist {

// avg: sum / world size (floating dtypes only). On bool tensors, sum and max are a logical or,
// product and min a logical and (as PyTorch's NCCL backend).
enum class ReduceOp { sum, avg, product, min, max };
const char* reduce_op_name(ReduceOp op);

constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(5);

class Work {
 public:
  virtual ~Work() = default;
  // Whether the collective has finished, its outputs written; never blocks. Throws the failure
  // (DistError) of a collective that failed or passed its deadline.
  virtual bool is_completed() = 0;
  // Blocks until the collective has finished (cuda: until the current stream is ordered after
  // it). Throws DistError at the deadline (issue time + the group's timeout), naming the ranks.
  virtual void wait() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size, std::chrono::milliseconds timeout)
      : rank_(rank), size_(size), timeout_(timeout) {}
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  virtual std::string backend() const = 0;

  // t <- op over the ranks of t. requires: t contiguous, same shape and dtype on every rank.
  virtual WorkPtr all_reduce(const Tensor& t, ReduceOp op = ReduceOp::sum) = 0;
  // t <- root's t. requires: 0 <= root < size().
  virtual WorkPtr broadcast(const Tensor& t, int root = 0) = 0;
  // outputs[r] <- rank r's input. requires: size() outputs of input's shape and dtype.
  virtual WorkPtr all_gather(const std::vector<Tensor>& outputs, const Tensor& input) = 0;
  // output <- op over the ranks of inputs[rank()]. requires: size() inputs of output's shape
  // and dtype.
  virtual WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                 ReduceOp op = ReduceOp::sum) = 0;
  virtual WorkPtr barrier() = 0;
  // Lets outstanding collectives progress without waiting for them (MPI moves a non-blocking
  // collective along only inside MPI calls; dist/ddp.h calls this from its gradient hooks).
  virtual void poll() {}

 protected:
  // The checks every backend shares; they throw ValueError/ShapeError/DTypeError/DeviceError
  // naming `what` (the collective).
  void check_tensor(const char* what, const Tensor& t) const;
  void check_op(const char* what, const Tensor& t, ReduceOp op) const;
  void check_list(const char* what, const std::vector<Tensor>& list, const Tensor& like,
                  const char* list_name) const;

 private:
  int rank_, size_;
  std::chrono::milliseconds timeout_;
};
using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

// How this process was started: by mpirun (Open MPI's or a PMI launcher's variables), by a
// launcher that sets the env:// variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), or not
// for a distributed job at all.
struct Launch {
  enum class Kind { none, mpi, env } kind = Kind::none;
  int rank = 0, world_size = 1;
  std::string master_addr;  // env only
  int master_port = 0;      // env only
  std::string describe() const;
};
// Reads the environment. Malformed variables are a ValueError naming them.
Launch detect_launch();
// The sentence every "not launched for distributed training" error ends with.
std::string how_to_launch(const std::string& program = "ember train --distributed");

struct InitOptions {
  std::string backend = "mpi";         // "mpi" or "nccl"
  std::string init_method = "env://";  // the only one: the launcher's environment
  std::chrono::milliseconds timeout = kDefaultTimeout;
  Device device = kCPU;  // nccl: the cuda device of this rank (default cuda:<local rank>)
};

// Starts the default process group (torch.distributed.init_process_group). Raises ValueError for
// an unknown backend (naming the choices), DistError when the process was not launched for it
// (saying how to launch), DistError/DeviceError when a backend is not built in or not usable.
ProcessGroupPtr init_process_group(const InitOptions& options);
bool is_initialized();
// requires: is_initialized() (ValueError saying to call init_process_group otherwise).
ProcessGroup& default_group();
ProcessGroupPtr default_group_ptr();
int get_rank();        // 0 when not initialised, as a single process
int get_world_size();  // 1 when not initialised
// Finishes the default group (waits for nothing; outstanding work is abandoned).
void destroy_process_group();

}  // namespace ember::dist
