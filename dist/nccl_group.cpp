// The NCCL process group (dist/backends.h, make_nccl_group): collectives on cuda tensors, on a
// stream of the group's own.
//
// Note [NCCL streams and events]: a collective waits for the work already queued on the current
// (compute) stream through an event (recorded there, waited for by the NCCL stream), runs on the
// NCCL stream, and records a "done" event; Work::wait() makes the current stream wait for that
// event. The host never waits (barrier() excepted: its point is the host). The tensors and any
// staging buffer stay referenced by the group until the done event has fired, checked on the
// host thread at the next collective, so the caching allocator cannot hand their memory to the
// compute stream while NCCL still uses it. The communicator is non-blocking (ncclConfig_t
// blocking = 0), so joining it and every call can be watched with the deadline; a monitor thread
// queries the in-flight collectives' events and, past the deadline, aborts the communicator
// (which ends NCCL's kernels, so a host waiting on the GPU returns) and records why, naming the
// ranks from the store (Note [Timeouts and the watchdog]); the next collective raises it.
#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "dist/backends.h"
#include "dist/watchdog.h"
#include "runtime/gpu.h"

namespace ember::dist {

std::string nccl_missing_reason() {
  return "";
}

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
    case DType::u8:
    case DType::b8:
      return ncclUint8;  // bool is one byte, 0 or 1
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op, DType t) {
  if (t == DType::b8) return op == ReduceOp::sum || op == ReduceOp::max ? ncclMax : ncclMin;
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::avg:
      return ncclAvg;
    case ReduceOp::product:
      return ncclProd;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::max:
      return ncclMax;
  }
  return ncclSum;
}

struct NcclWork;

struct NcclState {
  ncclComm_t comm = nullptr;
  Device device;
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{};
  gpu::Stream stream = nullptr;
  std::unique_ptr<TcpStore> store;
  std::unique_ptr<Watchdog> watchdog;
  uint64_t issued = 0;
  std::mutex mu;                                    // guards in_flight and broken
  std::deque<std::shared_ptr<NcclWork>> in_flight;  // oldest first
  std::string broken;
  std::atomic<bool> stop{false};
  std::thread monitor;

  // A call on the non-blocking communicator: ncclInProgress is polled to an end, up to the
  // deadline.
  void call(ncclResult_t rc, const char* what, Clock::time_point deadline) {
    while (rc == ncclInProgress) {
      if (Clock::now() >= deadline) {
        ncclCommAbort(comm);
        comm = nullptr;
        EMBER_THROW(DistError, what, " did not complete within ", timeout.count() / 1000.0,
                    " s on rank ", rank, " of ", size, ": ",
                    watchdog ? watchdog->diagnose(issued) : "");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      ncclCommGetAsyncError(comm, &rc);
    }
    EMBER_CHECK_T(DistError, rc == ncclSuccess, what, ": NCCL error: ", ncclGetErrorString(rc),
                  " (", ncclGetLastError(comm), ")");
  }
};

struct NcclWork final : public Work {
  std::shared_ptr<NcclState> s;
  std::string what;
  uint64_t seq = 0;
  Clock::time_point deadline;
  gpu::Event done = nullptr;
  std::vector<Tensor> keep;
  bool host_wait = false;  // barrier: wait() waits on the host

  ~NcclWork() override {
    if (done) gpu::backend(s->device).event_destroy(done);
  }
  bool fired() { return gpu::backend(s->device).event_query(done); }
  void raise_if_broken() {
    std::lock_guard<std::mutex> lock(s->mu);
    EMBER_CHECK_T(DistError, s->broken.empty(), s->broken);
  }
  bool is_completed() override {
    raise_if_broken();
    return fired();
  }
  void wait() override {
    raise_if_broken();
    gpu::Backend& b = gpu::backend(s->device);
    b.stream_wait_event(gpu::current_stream(s->device), done);
    if (!host_wait) return;
    while (!fired()) {
      raise_if_broken();  // the monitor aborts the communicator at the deadline
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
};

void monitor_loop(NcclState* s) {
  const auto tick = s->watchdog->interval();
  while (!s->stop.load()) {
    std::this_thread::sleep_for(tick);
    std::shared_ptr<NcclWork> late;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      if (!s->broken.empty() || s->in_flight.empty()) continue;
      for (auto& w : s->in_flight)
        if (Clock::now() >= w->deadline && !w->fired()) {
          late = w;
          break;
        }
    }
    if (!late) continue;
    std::string why = late->what + " #" + std::to_string(late->seq) + " timed out after " +
                      detail::str_cat(s->timeout.count() / 1000.0) + " s on rank " +
                      std::to_string(s->rank) + " of " + std::to_string(s->size) + ": " +
                      s->watchdog->diagnose(late->seq);
    std::fprintf(stderr, "ember: error: %s; aborting the NCCL communicator\n", why.c_str());
    ncclCommAbort(s->comm);
    std::lock_guard<std::mutex> lock(s->mu);
    s->comm = nullptr;
    s->broken = why;
  }
}

class NcclGroup final : public ProcessGroup {
 public:
  explicit NcclGroup(std::shared_ptr<NcclState> s)
      : ProcessGroup(s->rank, s->size, s->timeout), s_(std::move(s)) {}
  ~NcclGroup() override {
    s_->stop = true;
    if (s_->monitor.joinable()) s_->monitor.join();
    std::lock_guard<std::mutex> lock(s_->mu);
    if (s_->comm) ncclCommDestroy(s_->comm);
    s_->in_flight.clear();
    if (s_->stream) gpu::backend(s_->device).stream_destroy(s_->stream);
  }
  std::string backend() const override { return "nccl"; }

  WorkPtr all_reduce(const Tensor& t, ReduceOp op) override {
    check("all_reduce", t);
    check_op("all_reduce", t, op);
    return run("all_reduce", t, {t}, [&](cudaStream_t st) {
      return ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t.dtype()),
                           nccl_op(op, t.dtype()), s_->comm, st);
    });
  }

  WorkPtr broadcast(const Tensor& t, int root) override {
    check("broadcast", t);
    EMBER_CHECK_VALUE(root >= 0 && root < size(), "broadcast: root ", root,
                      " is not a rank of this group of ", size());
    return run("broadcast", t, {t}, [&](cudaStream_t st) {
      return ncclBroadcast(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t.dtype()), root,
                           s_->comm, st);
    });
  }

  WorkPtr all_gather(const std::vector<Tensor>& outputs, const Tensor& input) override {
    check("all_gather", input);
    check_list("all_gather", outputs, input, "outputs");
    const int64_t n = input.numel();
    Tensor flat = empty({n * size()}, {input.dtype(), input.device()});
    std::vector<Tensor> keep = outputs;
    keep.push_back(input);
    keep.push_back(flat);
    return run("all_gather", input, keep, [&](cudaStream_t st) {
      ncclResult_t rc = ncclAllGather(input.data_ptr(), flat.data_ptr(), n,
                                      nccl_type(input.dtype()), s_->comm, st);
      if (rc != ncclSuccess && rc != ncclInProgress) return rc;
      const gpu::StreamGuard on_nccl(s_->device, s_->stream);  // the copies follow the gather
      for (int r = 0; r < size(); ++r) {
        Tensor out = outputs[r];
        out.copy_(flat.slice(0, r * n, (r + 1) * n).view(input.shape()));
      }
      return rc;
    });
  }

  WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                         ReduceOp op) override {
    check("reduce_scatter", output);
    check_list("reduce_scatter", inputs, output, "inputs");
    check_op("reduce_scatter", output, op);
    const int64_t n = output.numel();
    Tensor flat = empty({n * size()}, {output.dtype(), output.device()});
    for (int r = 0; r < size(); ++r)
      flat.slice(0, r * n, (r + 1) * n).copy_(inputs[r].reshape({n}));
    return run("reduce_scatter", output, {output, flat}, [&](cudaStream_t st) {
      return ncclReduceScatter(flat.data_ptr(), output.data_ptr(), n, nccl_type(output.dtype()),
                               nccl_op(op, output.dtype()), s_->comm, st);
    });
  }

  WorkPtr barrier() override {
    Tensor one = zeros({1}, {kFloat32, s_->device});
    auto w = std::static_pointer_cast<NcclWork>(all_reduce(one, ReduceOp::sum));
    w->what = "barrier";
    w->host_wait = true;
    return w;
  }

 private:
  void check(const char* what, const Tensor& t) {
    check_tensor(what, t);
    EMBER_CHECK_DEVICE(t.device() == s_->device, what, ": the nccl group of rank ", rank(),
                       " works on ", s_->device, ", got a tensor on ", t.device(),
                       t.device().is_emu() ? " (NCCL is not supported on emu: use the mpi backend, "
                                             "which carries host copies of emu tensors)"
                                           : "");
  }

  template <typename Launch>
  WorkPtr run(const char* what, const Tensor& t, std::vector<Tensor> keep, Launch launch) {
    gpu::Backend& b = gpu::backend(s_->device);
    std::lock_guard<std::mutex> lock(s_->mu);
    EMBER_CHECK_T(DistError, s_->broken.empty(), what, ": the process group is broken since ",
                  s_->broken, "; end this job and start again");
    while (!s_->in_flight.empty() && s_->in_flight.front()->fired()) s_->in_flight.pop_front();
    auto w = std::make_shared<NcclWork>();
    w->s = s_;
    w->what = detail::str_cat(what, " (", format_bytes(t.numel() * t.element_size()), " ",
                              t.dtype(), ")");
    w->seq = ++s_->issued;
    w->deadline = Clock::now() + s_->timeout;
    w->keep = std::move(keep);
    s_->watchdog->issued(w->seq);
    // Order after the compute stream's work, with no host wait.
    gpu::Event ready = b.event_create(s_->device.index, false);
    b.event_record(ready, gpu::current_stream(s_->device));
    b.stream_wait_event(s_->stream, ready);
    b.event_destroy(ready);  // a recorded event may be destroyed; the wait stays queued
    if (t.numel() > 0)       // NCCL needs no call for nothing; the done event still orders
      s_->call(launch(static_cast<cudaStream_t>(s_->stream)), what, w->deadline);
    w->done = b.event_create(s_->device.index, false);
    b.event_record(w->done, s_->stream);
    s_->in_flight.push_back(w);
    return w;
  }

  std::shared_ptr<NcclState> s_;
};

int local_rank(const Launch& launch) {
  for (const char* v : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return launch.rank;
}

}  // namespace

ProcessGroupPtr make_nccl_group(const Launch& launch, std::chrono::milliseconds timeout,
                                Device device) {
  EMBER_CHECK_T(DeviceError, !device.is_emu(),
                "the nccl backend is not supported on emu: NCCL drives real GPUs; use "
                "backend='mpi', which carries host copies of emu tensors");
  auto s = std::make_shared<NcclState>();
  s->timeout = timeout;
  const auto deadline = Clock::now() + timeout;
  ncclUniqueId id;
  if (launch.kind == Launch::Kind::env) {
    s->rank = launch.rank;
    s->size = launch.world_size;
    s->store =
        std::make_unique<TcpStore>(launch.master_addr, launch.master_port, s->rank == 0, timeout);
  } else {
    EMBER_CHECK_T(DistError, launch.kind == Launch::Kind::mpi,
                  "the nccl backend needs a launch: ", how_to_launch());
    Bootstrap b = mpi_bootstrap(timeout);
    s->rank = b.rank;
    s->size = b.size;
    s->store = std::move(b.store);
  }
  if (!device.is_cuda()) {
    const int count = gpu::backend(DeviceType::CUDA).device_count();
    EMBER_CHECK_T(DeviceError, count > 0, "the nccl backend needs a cuda device: ",
                  gpu::backend(DeviceType::CUDA).availability().reason);
    device = Device(DeviceType::CUDA, local_rank(launch) % count);
  }
  gpu::require_device(device);
  s->device = device;
  gpu::backend(device).set_device(device.index);
  // Who has joined, so that a rank that never starts is named at the deadline.
  s->store->set("joined/" + std::to_string(s->rank), "1");
  if (s->rank == 0) {
    EMBER_CHECK_T(DistError, ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId failed");
  }
  if (launch.kind == Launch::Kind::env) {
    if (s->rank == 0)
      s->store->set("nccl/id", std::string(reinterpret_cast<char*>(&id), sizeof id));
    std::string got = s->store->get("nccl/id");
    std::memcpy(&id, got.data(), sizeof id);
  } else {
    mpi_bootstrap_broadcast(&id, sizeof id, timeout);
  }
  std::string missing;
  for (int r = 0; r < s->size; ++r)
    if (!s->store->wait(
            {"joined/" + std::to_string(r)},
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())))
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  EMBER_CHECK_T(DistError, missing.empty(), "init_process_group(backend='nccl'): rank ", s->rank,
                " waited ", timeout.count() / 1000.0, " s for ranks ", missing, " to join");
  s->watchdog =
      std::make_unique<Watchdog>(s->store->host(), s->store->port(), s->rank, s->size, timeout);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  s->call(ncclCommInitRankConfig(&s->comm, s->size, id, s->rank, &config), "ncclCommInitRank",
          deadline);
  s->stream = gpu::backend(device).stream_create(device.index);
  s->monitor = std::thread(monitor_loop, s.get());
  return std::make_shared<NcclGroup>(std::move(s));
}

}  // namespace ember::dist
