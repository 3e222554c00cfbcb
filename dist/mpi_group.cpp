// The MPI process group (dist/backends.h, make_mpi_group): Open MPI's non-blocking collectives
// on a duplicate of MPI_COMM_WORLD, tested with a deadline (Note [Timeouts and the watchdog] in
// dist/watchdog.h).
//
// Note [Host copies and widened halves]: MPI reads and writes host memory, so a tensor on emu
// (or on cuda, without the nccl backend) travels as a host copy: copied to the host when the
// collective is issued (for emu, that copy waits for the emulated stream's work before it), and
// copied back, host to device, when the collective is seen complete. float16 and bfloat16 have no
// MPI type: a reduction runs on a float32 copy and rounds once at the end (so the result does not
// depend on the order MPI combines the ranks in beyond float32's rounding), and a broadcast or
// gather moves their 16-bit words unchanged.
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "dist/backends.h"
#include "dist/watchdog.h"
#include "ops/elementwise.h"

namespace ember::dist {

std::string mpi_missing_reason() {
  return "";
}

namespace {

using Clock = std::chrono::steady_clock;

// MPI once per process: initialised by the first group, finalised at exit unless a group broke
// (MPI_Finalize would wait for the rank that is missing; leaving without it lets mpirun end the
// job).
std::atomic<bool> g_broken{false};

void finalize_at_exit() {
  destroy_process_group();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !g_broken.load()) MPI_Finalize();
}

void ensure_mpi() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      // The watchdog's thread talks to the store, never to MPI: the main thread's calls suffice.
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        EMBER_THROW(DistError, "MPI_Init_thread failed");
      std::atexit(finalize_at_exit);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  });
}

std::string mpi_error(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, buf, &len);
  return std::string(buf, static_cast<size_t>(len));
}

// Tests `req` until it completes or the deadline passes (false). Yields first, then sleeps a
// growing while (up to 1 ms), so a rank that waits leaves the cores to the ranks that compute.
bool test_until(MPI_Request* req, Clock::time_point deadline, const char* what) {
  for (int i = 0;; ++i) {
    int done = 0;
    int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      g_broken = true;
      EMBER_THROW(DistError, what, ": MPI error: ", mpi_error(rc));
    }
    if (done) return true;
    if (Clock::now() >= deadline) return false;
    if (i < 16)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(
          std::chrono::microseconds(std::min(1000, 5 << std::min(i - 16, 8))));
  }
}

void check_rc(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    g_broken = true;
    EMBER_THROW(DistError, what, ": MPI error: ", mpi_error(rc));
  }
}

// Runs a non-blocking call during set-up and waits for it with the deadline.
void wait_setup(MPI_Request req, Clock::time_point deadline, const char* what,
                std::chrono::milliseconds timeout) {
  if (!test_until(&req, deadline, what)) {
    g_broken = true;
    EMBER_THROW(DistError, "init_process_group: ", what, " did not complete within ",
                timeout.count() / 1000.0,
                " s: some rank did not start, or started another "
                "program (every rank must call init_process_group)");
  }
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::f16:
    case DType::bf16:
      return MPI_UINT16_T;  // moved, never reduced (Note [Host copies ...])
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
    case DType::u8:
      return MPI_UINT8_T;
    case DType::b8:
      return MPI_C_BOOL;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op, DType t) {
  if (t == DType::b8) return op == ReduceOp::sum || op == ReduceOp::max ? MPI_LOR : MPI_LAND;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return MPI_SUM;
    case ReduceOp::product:
      return MPI_PROD;
    case ReduceOp::min:
      return MPI_MIN;
    case ReduceOp::max:
      return MPI_MAX;
  }
  return MPI_SUM;
}

// Copies src into the tensor dst refers to (a handle: the copy lands in dst's storage).
void assign(Tensor dst, const Tensor& src) {
  dst.copy_(src);
}

bool is_half(DType t) {
  return t == DType::f16 || t == DType::bf16;
}

// A host tensor MPI can use for t: t itself on the cpu, else a host copy; widened to float32 for
// reductions of halves.
Tensor stage(const Tensor& t, bool reduce) {
  Tensor h = t.device().is_cpu() ? t : t.to(kCPU);
  if (reduce && is_half(t.dtype())) h = h.to(kFloat32);
  return h;
}

int count_of(const char* what, int64_t n) {
  EMBER_CHECK_VALUE(n <= INT_MAX, what, ": ", n,
                    " elements is more than MPI's int count; split "
                    "the tensor");
  return static_cast<int>(n);
}

// What a group and its works share: the communicator, the watchdog, whether it broke.
struct MpiState {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{};
  std::unique_ptr<TcpStore> store;
  std::unique_ptr<Watchdog> watchdog;
  uint64_t issued = 0;
  std::string broken;  // why, once a collective failed or timed out
  ~MpiState() {
    watchdog.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm != MPI_COMM_NULL && !finalized && broken.empty()) MPI_Comm_free(&comm);
  }
};

class MpiWork final : public Work {
 public:
  MpiWork(std::shared_ptr<MpiState> s, std::string what, std::vector<Tensor> keep,
          std::function<void()> finish)
      : s_(std::move(s)),
        what_(std::move(what)),
        seq_(++s_->issued),
        deadline_(Clock::now() + s_->timeout),
        keep_(std::move(keep)),
        finish_(std::move(finish)) {
    s_->watchdog->issued(seq_);
  }
  MPI_Request* request() { return &req_; }

  bool is_completed() override {
    if (done_) return true;
    int flag = 0;
    check_rc(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE), what_.c_str());
    if (flag)
      complete();
    else if (Clock::now() >= deadline_)
      fail();
    return done_;
  }

  void wait() override {
    if (done_) return;
    if (!test_until(&req_, deadline_, what_.c_str())) fail();
    complete();
  }

 private:
  void complete() {
    done_ = true;
    if (finish_) finish_();
    keep_.clear();
  }
  [[noreturn]] void fail() {
    const double secs = s_->timeout.count() / 1000.0;
    std::string why = s_->watchdog->diagnose(seq_);
    s_->broken = what_ + " #" + std::to_string(seq_) + " timed out after " + detail::str_cat(secs) +
                 " s on rank " + std::to_string(s_->rank) + " of " + std::to_string(s_->size) +
                 ": " + why;
    g_broken = true;
    EMBER_THROW(DistError, s_->broken);
  }

  std::shared_ptr<MpiState> s_;
  std::string what_;
  uint64_t seq_;
  Clock::time_point deadline_;
  std::vector<Tensor> keep_;
  std::function<void()> finish_;
  MPI_Request req_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

class MpiGroup final : public ProcessGroup {
 public:
  explicit MpiGroup(std::shared_ptr<MpiState> s)
      : ProcessGroup(s->rank, s->size, s->timeout), s_(std::move(s)) {}
  std::string backend() const override { return "mpi"; }

  WorkPtr all_reduce(const Tensor& t, ReduceOp op) override {
    check_tensor("all_reduce", t);
    check_op("all_reduce", t, op);
    Tensor h = stage(t, true);
    auto w = start("all_reduce", t, {t, h}, [t, h, op, n = size()] { finish_reduce(t, h, op, n); });
    issue(w, MPI_Iallreduce(MPI_IN_PLACE, h.data_ptr(), count_of("all_reduce", h.numel()),
                            mpi_type(h.dtype()), mpi_op(op, h.dtype()), s_->comm, w->request()));
    return w;
  }

  WorkPtr broadcast(const Tensor& t, int root) override {
    check_tensor("broadcast", t);
    EMBER_CHECK_VALUE(root >= 0 && root < size(), "broadcast: root ", root,
                      " is not a rank of this group of ", size());
    Tensor h = stage(t, false);
    auto w = start("broadcast", t, {t, h}, [t, h] {
      if (!h.is_same(t)) assign(t, h);
    });
    issue(w, MPI_Ibcast(h.data_ptr(), count_of("broadcast", h.numel()), mpi_type(h.dtype()), root,
                        s_->comm, w->request()));
    return w;
  }

  WorkPtr all_gather(const std::vector<Tensor>& outputs, const Tensor& input) override {
    check_tensor("all_gather", input);
    check_list("all_gather", outputs, input, "outputs");
    Tensor h = stage(input, false);
    const int64_t n = input.numel();
    Tensor flat = empty({n * size()}, {input.dtype(), kCPU});
    auto w = start("all_gather", input, {h, flat}, [outputs, flat, n, shape = input.shape()] {
      for (size_t r = 0; r < outputs.size(); ++r)
        assign(outputs[r],
               flat.slice(0, static_cast<int64_t>(r) * n, static_cast<int64_t>(r + 1) * n)
                   .view(shape));
    });
    count_of("all_gather", n * size());
    issue(w, MPI_Iallgather(h.data_ptr(), static_cast<int>(n), mpi_type(h.dtype()), flat.data_ptr(),
                            static_cast<int>(n), mpi_type(h.dtype()), s_->comm, w->request()));
    return w;
  }

  WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                         ReduceOp op) override {
    check_tensor("reduce_scatter", output);
    check_list("reduce_scatter", inputs, output, "inputs");
    check_op("reduce_scatter", output, op);
    const int64_t n = output.numel();
    const DType wide = is_half(output.dtype()) ? kFloat32 : output.dtype();
    Tensor flat = empty({n * size()}, {wide, kCPU});
    for (int r = 0; r < size(); ++r)
      flat.slice(0, r * n, (r + 1) * n).copy_(inputs[r].reshape({n}));
    Tensor out = empty({n}, {wide, kCPU});
    auto w = start("reduce_scatter", output, {flat, out}, [output, out, op, ranks = size()] {
      finish_reduce(output, out.view(output.shape()), op, ranks);
    });
    count_of("reduce_scatter", n * size());
    issue(w, MPI_Ireduce_scatter_block(flat.data_ptr(), out.data_ptr(), static_cast<int>(n),
                                       mpi_type(wide), mpi_op(op, wide), s_->comm, w->request()));
    return w;
  }

  WorkPtr barrier() override {
    auto w = start("barrier", Tensor(), {}, nullptr);
    issue(w, MPI_Ibarrier(s_->comm, w->request()));
    return w;
  }

  void poll() override {
    std::vector<std::weak_ptr<MpiWork>> still;
    for (auto& weak : outstanding_)
      if (auto w = weak.lock())
        if (!w->is_completed()) still.push_back(weak);
    outstanding_.swap(still);
  }

 private:
  // avg divides the sum by the world size in the staged dtype, then the result goes back to t
  // (rounded once for halves, copied to the device for emu and cuda).
  static void finish_reduce(const Tensor& t, const Tensor& h, ReduceOp op, int ranks) {
    if (op == ReduceOp::avg && ranks > 1)
      assign(h, ops::div(h, full({}, ranks, {h.dtype(), kCPU})));
    if (!h.is_same(t)) assign(t, h);
  }

  std::shared_ptr<MpiWork> start(const char* what, const Tensor& t, std::vector<Tensor> keep,
                                 std::function<void()> finish) {
    EMBER_CHECK_T(DistError, s_->broken.empty(), what, ": the process group is broken since ",
                  s_->broken, "; end this job and start again");
    std::string desc = what;
    if (t.defined())
      desc += detail::str_cat(" (", format_bytes(static_cast<size_t>(t.numel()) * t.element_size()),
                              " ", t.dtype(), ")");
    return std::make_shared<MpiWork>(s_, desc, std::move(keep), std::move(finish));
  }

  void issue(const std::shared_ptr<MpiWork>& w, int rc) {
    check_rc(rc, "issuing a collective");
    outstanding_.push_back(w);
  }

  std::shared_ptr<MpiState> s_;
  std::vector<std::weak_ptr<MpiWork>> outstanding_;
};

}  // namespace

Bootstrap mpi_bootstrap(std::chrono::milliseconds timeout) {
  ensure_mpi();
  const auto deadline = Clock::now() + timeout;
  Bootstrap b;
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.size);
  // Host names, to choose the store's address: loopback when every rank is on rank 0's host.
  constexpr int kName = 256;
  std::vector<char> names(static_cast<size_t>(kName) * b.size, 0);
  char mine[kName] = {};
  gethostname(mine, kName - 1);
  MPI_Request req;
  check_rc(
      MPI_Iallgather(mine, kName, MPI_CHAR, names.data(), kName, MPI_CHAR, MPI_COMM_WORLD, &req),
      "init_process_group");
  wait_setup(req, deadline, "exchanging host names", timeout);
  bool one_host = true;
  for (int r = 1; r < b.size; ++r)
    one_host = one_host && std::strncmp(&names[r * kName], &names[0], kName) == 0;
  const char* master = std::getenv("MASTER_ADDR");
  const std::string host = one_host            ? "127.0.0.1"
                           : master && *master ? master
                                               : std::string(&names[0]);
  int port = 0;
  if (b.rank == 0) {
    b.store = std::make_unique<TcpStore>(one_host ? host : "", 0, /*is_server=*/true, timeout);
    port = b.store->port();
  }
  check_rc(MPI_Ibcast(&port, 1, MPI_INT, 0, MPI_COMM_WORLD, &req), "init_process_group");
  wait_setup(req, deadline, "broadcasting the store's port", timeout);
  if (b.rank != 0) b.store = std::make_unique<TcpStore>(host, port, false, timeout);
  return b;
}

void mpi_bootstrap_broadcast(void* data, int bytes, std::chrono::milliseconds timeout) {
  ensure_mpi();
  MPI_Request req;
  check_rc(MPI_Ibcast(data, bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &req), "init_process_group");
  wait_setup(req, Clock::now() + timeout, "broadcasting the NCCL unique id", timeout);
}

ProcessGroupPtr make_mpi_group(const Launch& launch, std::chrono::milliseconds timeout) {
  EMBER_CHECK_T(DistError, launch.kind == Launch::Kind::mpi,
                "the mpi backend needs an MPI launch: ", how_to_launch());
  Bootstrap b = mpi_bootstrap(timeout);
  auto s = std::make_shared<MpiState>();
  s->rank = b.rank;
  s->size = b.size;
  s->timeout = timeout;
  MPI_Request req;
  check_rc(MPI_Comm_idup(MPI_COMM_WORLD, &s->comm, &req), "init_process_group");
  wait_setup(req, Clock::now() + timeout, "MPI_Comm_idup", timeout);
  MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
  s->watchdog =
      std::make_unique<Watchdog>(b.store->host(), b.store->port(), b.rank, b.size, timeout);
  s->store = std::move(b.store);
  return std::make_shared<MpiGroup>(std::move(s));
}

}  // namespace ember::dist
