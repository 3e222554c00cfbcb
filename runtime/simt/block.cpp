// The block scheduler of the SIMT emulator.
//
// Note [Scheduling a block]: the worker keeps one record per CUDA thread and an order (forward,
// reverse, or a seeded permutation redrawn after every block barrier). It sweeps the order,
// resuming each runnable thread until the thread waits (block barrier or warp collective) or
// returns. A warp collective completes when the last lane its mask names arrives; its lanes then
// become runnable again in the same or the next sweep. When a sweep finds nothing runnable the
// block has stalled, and either a barrier releases (all live threads at one __syncthreads site,
// none exited) or the stall is a bug the report names: a deadlock, divergent barriers, or a warp
// collective some lanes can never reach.
//
// Note [Races under TSan]: switches into a fiber are happens-before edges from the scheduler,
// switches back are not, so the scheduler never carries one CUDA thread's history into another.
// Barriers and warp collectives add the edges a GPU guarantees (release on arrival, acquire on
// departure). The scheduler's work, and a thread's bookkeeping inside the emulator, run in TSan
// ignore regions, so only the kernel's own accesses are checked; fields a thread writes for the
// scheduler also use relaxed atomics.
#include "runtime/simt/block.h"

#include <algorithm>
#include <cstring>

#include "runtime/error.h"

thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local uint3 blockDim;
thread_local uint3 gridDim;

namespace ember::simt {

namespace detail {
namespace {

thread_local Worker* tls_active = nullptr;

template <typename T>
void put(T& field, T v) {
  __atomic_store(&field, &v, __ATOMIC_RELAXED);
}
template <typename T>
T get(const T& field) {
  T v;
  __atomic_load(&field, &v, __ATOMIC_RELAXED);
  return v;
}

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::Sync:
      return "__syncwarp";
    case WarpOp::ShflIdx:
      return "__shfl_sync";
    case WarpOp::ShflUp:
      return "__shfl_up_sync";
    case WarpOp::ShflDown:
      return "__shfl_down_sync";
    case WarpOp::ShflXor:
      return "__shfl_xor_sync";
    case WarpOp::Ballot:
      return "__ballot_sync";
    case WarpOp::Any:
      return "__any_sync";
    case WarpOp::All:
      return "__all_sync";
    case WarpOp::Mma:
      return "mma.sync";
    case WarpOp::Ldmatrix:
      return "ldmatrix";
  }
  return "?";
}

bool is_gather(WarpOp op) {
  return op == WarpOp::Mma || op == WarpOp::Ldmatrix;
}

bool same_site(const char* fa, int la, const char* fb, int lb) {
  return la == lb && (fa == fb || std::strcmp(fa, fb) == 0);
}

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class ActiveGuard {
 public:
  explicit ActiveGuard(Worker* w) { tls_active = w; }
  ~ActiveGuard() { tls_active = nullptr; }
};

}  // namespace

Worker& Worker::current() {
  thread_local Worker w;
  return w;
}

Worker* Worker::active() {
  return tls_active;
}

void Worker::run_block(const LaunchSpec& spec, uint3 block, const Options& opts) {
  TsanIgnore ignore;
  spec_ = &spec;
  opts_ = opts;
  block_ = block;
  const unsigned bx = spec.block.x, by = spec.block.y;
  n_ = static_cast<int>(bx * by * spec.block.z);
  stacks_.reserve(static_cast<size_t>(n_), opts.stack_bytes);
  threads_.assign(static_cast<size_t>(n_), Thread{});
  for (int i = 0; i < n_; ++i) {
    const unsigned u = static_cast<unsigned>(i);
    threads_[i].tid = uint3{u % bx, (u / bx) % by, u / (bx * by)};
    if (dirty_stacks_) recycle_stack(stacks_[i]);
    threads_[i].ctx = make_context(stacks_[i].top(), stacks_[i].size, &Worker::fiber_main);
  }
  dirty_stacks_ = false;
  const size_t chunks = (spec.shared_bytes + sizeof(SharedChunk) - 1) / sizeof(SharedChunk);
  if (shared_.size() < chunks) shared_.resize(chunks);
  if (chunks) std::memset(shared_.data(), 0xff, chunks * sizeof(SharedChunk));  // NaN poison
  async_.reset(n_);

  blockIdx = block;
  blockDim = spec.block;
  gridDim = spec.grid;
  exited_ = 0;
  first_exited_ = -1;
  phase_ = 0;
  thrown_ = nullptr;
  notes_.main_tsan_fiber = current_tsan_fiber();
  make_order();

  ActiveGuard guard(this);
  try {
    schedule();
  } catch (...) {
    dirty_stacks_ = true;  // the fibers still on these stacks are abandoned, never resumed
    hb_acquire(&hb_done_);
    throw;
  }
  hb_acquire(&hb_done_);  // what the block's threads did happens before what follows the launch
}

void Worker::schedule() {
  for (;;) {
    bool ran = false;
    for (size_t k = 0; k < order_.size(); ++k) {
      const int i = order_[k];
      if (get(threads_[i].state) != State::Runnable) continue;
      ran = true;
      resume(i);
      const State s = get(threads_[i].state);
      if (s == State::Exited) {
        if (first_exited_ < 0) first_exited_ = i;
        ++exited_;
        if (thrown_) {
          std::string what = "an exception";
          try {
            std::rethrow_exception(thrown_);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          fail(thread_name(i) + " threw: " + what);
        }
      } else if (s == State::AtWarp) {
        on_warp_arrival(i);
      }
    }
    if (ran) continue;
    if (exited_ == n_) return;
    resolve_stall();
  }
}

void Worker::fiber_main(Transfer t) {
  Worker* w = static_cast<Worker*>(t.data);
  after_switch(nullptr, &w->notes_);
  tsan_ignore_begin();
  w->sched_ = t.fctx;
  const int me = w->cur_;
  tsan_ignore_end();
  try {
    w->spec_->body(w->spec_->closure);
  } catch (...) {
    TsanIgnore ignore;
    w->thrown_ = std::current_exception();
  }
  hb_release(&w->hb_done_);
  tsan_ignore_begin();
  put(w->threads_[me].state, State::Exited);
  const SwitchNotes notes = w->notes_;
  const Context sched = w->sched_;
  tsan_ignore_end();  // this TSan fiber is reused by the next block's thread on this stack
  before_switch(nullptr, notes.main_bottom, notes.main_size, notes.main_tsan_fiber,
                /*dying=*/true, /*sync=*/false);
  jump_context(sched, nullptr);
  __builtin_unreachable();  // an exited fiber is never resumed
}

void Worker::resume(int i) {
  Thread& t = threads_[i];
  cur_ = i;
  threadIdx = t.tid;
  Stack& s = stacks_[i];
  void* fake = nullptr;
  before_switch(&fake, s.base, s.size, s.tsan_fiber, /*dying=*/false, /*sync=*/true);
  Transfer r = jump_context(t.ctx, this);
  after_switch(fake, nullptr);
  t.ctx = r.fctx;
}

void Worker::yield() {
  tsan_ignore_begin();
  const SwitchNotes notes = notes_;
  const Context sched = sched_;
  tsan_ignore_end();
  void* fake = nullptr;
  before_switch(&fake, notes.main_bottom, notes.main_size, notes.main_tsan_fiber,
                /*dying=*/false, /*sync=*/false);
  Transfer r = jump_context(sched, nullptr);
  TsanIgnore ignore;
  after_switch(fake, &notes_);
  sched_ = r.fctx;
}

void Worker::make_order() {
  order_.resize(static_cast<size_t>(n_));
  for (int i = 0; i < n_; ++i) order_[i] = opts_.order == Order::Reverse ? n_ - 1 - i : i;
  if (opts_.order != Order::Random) return;
  // A permutation determined by (seed, block, phase): reruns reproduce it exactly.
  uint64_t s = opts_.seed ^ (uint64_t(block_.x) << 1) ^ (uint64_t(block_.y) << 22) ^
               (uint64_t(block_.z) << 43) ^ (phase_ * 0x2545f4914f6cdd1dull);
  for (int i = n_ - 1; i > 0; --i) {
    const int j = static_cast<int>(splitmix64(s) % static_cast<uint64_t>(i + 1));
    std::swap(order_[i], order_[j]);
  }
}

// Bookkeeping runs in TSan ignore regions that end before the switch: a fiber abandoned while
// suspended must not leave its (reused) TSan fiber ignoring the next block's accesses.
int Worker::barrier(BarrierKind kind, int pred, const char* file, int line) {
  {
    TsanIgnore ignore;
    Thread& t = threads_[cur_];
    put(t.file, file);
    put(t.line, line);
    put(t.kind, kind);
    put(t.pred, pred);
    hb_release(&hb_barrier_);
    hb_release(&hb_done_);
    put(t.state, State::AtBarrier);
  }
  yield();
  TsanIgnore ignore;
  hb_acquire(&hb_barrier_);
  return barrier_result_;
}

uint64_t Worker::warp(WarpOp op, uint32_t mask, uint64_t value, int param, int width,
                      const char* file, int line) {
  char* hb = nullptr;
  {
    TsanIgnore ignore;
    Thread& t = threads_[cur_];
    put(t.op, op);
    put(t.mask, mask);
    put(t.value, value);
    put(t.param, param);
    put(t.width, width);
    put(t.file, file);
    put(t.line, line);
    hb = &hb_warp_[cur_ / kWarpSize];
    hb_release(hb);
    hb_release(&hb_done_);
    put(t.state, State::AtWarp);
  }
  yield();
  TsanIgnore ignore;
  hb_acquire(hb);
  return threads_[cur_].result;
}

uint32_t Worker::all_gather(WarpOp op, const void* mine, int bytes, const unsigned char** table,
                            const char* file, int line) {
  const uint64_t lanes =
      warp(op, 0xffffffffu, reinterpret_cast<uint64_t>(mine), bytes, kWarpSize, file, line);
  TsanIgnore ignore;
  *table = gathered_.data() + size_t(cur_ / kWarpSize) * kWarpSize * kMaxGatherBytes;
  return static_cast<uint32_t>(lanes);
}

// Copies every lane's record while all of them are suspended at the all-gather; the lanes read
// the copies when they resume. The buffer of a warp is rewritten only when its next all-gather
// completes, which needs every lane, so no lane can still be reading the previous records.
void Worker::gather_records(int lo, int hi, int bytes) {
  for (int l = lo; l < hi; ++l)
    if (get(threads_[l].param) != bytes)
      fail(ember::detail::str_cat(thread_name(l), " deposits ", get(threads_[l].param),
                                  " bytes at ", op_name(get(threads_[l].op)), " at ", wait_site(l),
                                  " but ", thread_name(lo), " deposits ", bytes));
  const size_t warps = size_t(n_ + kWarpSize - 1) / kWarpSize;
  if (gathered_.size() < warps * kWarpSize * kMaxGatherBytes)
    gathered_.resize(warps * kWarpSize * kMaxGatherBytes);
  unsigned char* out = gathered_.data() + size_t(lo / kWarpSize) * kWarpSize * kMaxGatherBytes;
  for (int l = lo; l < hi; ++l)
    std::memcpy(out + (l - lo) * bytes, reinterpret_cast<const void*>(get(threads_[l].value)),
                static_cast<size_t>(bytes));
}

uint32_t Worker::active_mask() const {
  TsanIgnore ignore;
  const int lo = cur_ / kWarpSize * kWarpSize, hi = std::min(n_, lo + kWarpSize);
  uint32_t m = 0;
  for (int l = lo; l < hi; ++l)
    if (get(threads_[l].state) != State::Exited) m |= 1u << (l - lo);
  return m;
}

void Worker::on_warp_arrival(int i) {
  const Thread& t = threads_[i];
  const int lo = i / kWarpSize * kWarpSize, hi = std::min(n_, lo + kWarpSize);
  const uint32_t mask = get(t.mask);
  const WarpOp op = get(t.op);
  if (!((mask >> (i - lo)) & 1u))
    fail(ember::detail::str_cat(thread_name(i), " calls ", op_name(op), " at ", wait_site(i),
                                " with mask 0x", std::hex, mask, std::dec,
                                " that does not name its own lane ", i - lo));
  const int width = get(t.width);
  if (op != WarpOp::Sync && (width <= 0 || width > kWarpSize || (width & (width - 1))))
    fail(ember::detail::str_cat(thread_name(i), " calls ", op_name(op), " at ", wait_site(i),
                                " with width ", width, "; it must be a power of two up to 32"));
  for (int l = lo; l < hi; ++l) {
    if (!((mask >> (l - lo)) & 1u)) continue;
    const State s = get(threads_[l].state);
    if (s == State::Exited) report_warp_stall(i);
    if (s != State::AtWarp) return;  // not there yet
  }
  // Every lane the mask names has arrived: they must be at the same collective.
  for (int l = lo; l < hi; ++l) {
    if (!((mask >> (l - lo)) & 1u)) continue;
    const Thread& o = threads_[l];
    const bool same =
        get(o.op) == op && get(o.mask) == mask &&
        (op == WarpOp::Sync || same_site(get(o.file), get(o.line), get(t.file), get(t.line)));
    if (!same)
      fail(ember::detail::str_cat("warp collective in divergent code: in warp ", i / kWarpSize,
                                  ", ", thread_name(i), " is at ", op_name(op), "(mask 0x",
                                  std::hex, mask, std::dec, ") at ", wait_site(i), " while ",
                                  thread_name(l), " is at ", op_name(get(o.op)), "(mask 0x",
                                  std::hex, get(o.mask), std::dec, ") at ", wait_site(l),
                                  "; all lanes named in a mask must reach the same collective"));
  }
  uint32_t ballot = 0, present = 0;
  for (int l = lo; l < hi; ++l) {
    if (!((mask >> (l - lo)) & 1u)) continue;
    present |= 1u << (l - lo);
    if (get(threads_[l].value) != 0) ballot |= 1u << (l - lo);
  }
  if (is_gather(op)) gather_records(lo, hi, get(t.param));
  for (int l = lo; l < hi; ++l) {
    if (!((present >> (l - lo)) & 1u)) continue;
    Thread& d = threads_[l];
    const int lane = l - lo, seg = lane & ~(width - 1), param = get(d.param);
    int src = lane;
    switch (op) {
      case WarpOp::ShflIdx:
        src = seg + (param & (width - 1));
        break;
      case WarpOp::ShflUp:
        src = (lane - seg) >= param ? lane - param : lane;
        break;
      case WarpOp::ShflDown:
        src = (lane - seg) + param < width ? lane + param : lane;
        break;
      case WarpOp::ShflXor:
        src = (lane ^ param) < seg + width ? (lane ^ param) : lane;
        break;
      default:
        break;
    }
    // A source lane the mask leaves out has no defined value on a GPU; keep the lane's own.
    if (src < 0 || src >= kWarpSize || !((present >> src) & 1u)) src = lane;
    switch (op) {
      case WarpOp::Ballot:
        d.result = ballot;
        break;
      case WarpOp::Any:
        d.result = ballot != 0;
        break;
      case WarpOp::All:
        d.result = ballot == present;
        break;
      case WarpOp::Sync:
        d.result = 0;
        break;
      case WarpOp::Mma:
      case WarpOp::Ldmatrix:
        d.result = present;
        break;
      default:
        d.result = get(threads_[lo + src].value);
        break;
    }
  }
  for (int l = lo; l < hi; ++l)
    if ((present >> (l - lo)) & 1u) put(threads_[l].state, State::Runnable);
}

void Worker::resolve_stall() {
  for (int i = 0; i < n_; ++i)
    if (get(threads_[i].state) == State::AtWarp) report_warp_stall(i);
  // Every live thread waits at a block barrier.
  int first = -1, other = -1, waiting = 0;
  for (int i = 0; i < n_; ++i) {
    if (get(threads_[i].state) != State::AtBarrier) continue;
    ++waiting;
    if (first < 0)
      first = i;
    else if (other < 0 && !same_site(get(threads_[i].file), get(threads_[i].line),
                                     get(threads_[first].file), get(threads_[first].line)))
      other = i;
  }
  if (other >= 0) {
    int at_first = 0;
    for (int i = 0; i < n_; ++i)
      if (get(threads_[i].state) == State::AtBarrier &&
          same_site(get(threads_[i].file), get(threads_[i].line), get(threads_[first].file),
                    get(threads_[first].line)))
        ++at_first;
    fail(ember::detail::str_cat("divergent barriers: ", at_first, " threads (first ",
                                thread_name(first), ") wait at __syncthreads at ", wait_site(first),
                                " and ", waiting - at_first, " (first ", thread_name(other),
                                ") at ", wait_site(other),
                                exited_ ? ember::detail::str_cat("; ", exited_, " exited") : "",
                                "; every thread of a block must reach the same barrier"));
  }
  if (exited_ > 0)
    fail(ember::detail::str_cat("deadlock: ", waiting, " threads (first ", thread_name(first),
                                ") wait at __syncthreads at ", wait_site(first), " but ", exited_,
                                " threads of the block (first ", thread_name(first_exited_),
                                ") returned without reaching it; a GPU hangs or misbehaves here"));
  int count = 0;
  for (int i = 0; i < n_; ++i) count += get(threads_[i].pred) != 0;
  switch (get(threads_[first].kind)) {
    case BarrierKind::Plain:
      barrier_result_ = 0;
      break;
    case BarrierKind::Count:
      barrier_result_ = count;
      break;
    case BarrierKind::And:
      barrier_result_ = count == n_;
      break;
    case BarrierKind::Or:
      barrier_result_ = count > 0;
      break;
  }
  ++phase_;
  if (opts_.order == Order::Random) make_order();
  for (int i = 0; i < n_; ++i) put(threads_[i].state, State::Runnable);
}

void Worker::report_warp_stall(int i) const {
  const int lo = i / kWarpSize * kWarpSize, hi = std::min(n_, lo + kWarpSize);
  const uint32_t mask = get(threads_[i].mask);
  std::string why;
  for (int l = lo; l < hi && why.empty(); ++l) {
    if (!((mask >> (l - lo)) & 1u)) continue;
    const State s = get(threads_[l].state);
    if (s == State::Exited)
      why = ember::detail::str_cat(thread_name(l), " (lane ", l - lo, ") has returned");
    else if (s == State::AtBarrier)
      why = ember::detail::str_cat(thread_name(l), " (lane ", l - lo,
                                   ") waits at __syncthreads at ", wait_site(l));
  }
  fail(ember::detail::str_cat("warp collective in divergent code: ", thread_name(i), " waits at ",
                              op_name(get(threads_[i].op)), "(mask 0x", std::hex, mask, std::dec,
                              ") at ", wait_site(i), " but ", why,
                              "; all lanes named in a mask must reach the same collective"));
}

void Worker::fail(const std::string& what) const {
  const LaunchSpec& s = *spec_;
  EMBER_THROW(CudaError, "SIMT emulator: kernel ", s.kernel, " (launched at ", s.file, ":", s.line,
              "), block (", block_.x, ",", block_.y, ",", block_.z, "): ", what);
}

std::string Worker::thread_name(int i) const {
  const uint3 t = threads_[i].tid;
  return ember::detail::str_cat("thread (", t.x, ",", t.y, ",", t.z, ")");
}

std::string Worker::wait_site(int i) const {
  const char* f = get(threads_[i].file);
  return ember::detail::str_cat(f ? f : "?", ":", get(threads_[i].line));
}

}  // namespace detail

namespace {
detail::Worker& running(const char* what) {
  detail::Worker* w = detail::Worker::active();
  if (!w) EMBER_THROW(CudaError, "SIMT emulator: ", what, " called outside a kernel");
  return *w;
}
}  // namespace

int block_barrier(BarrierKind kind, int pred, const char* file, int line) {
  return running("__syncthreads").barrier(kind, pred, file, line);
}

uint64_t warp_collective(WarpOp op, uint32_t mask, uint64_t value, int param, int width,
                         const char* file, int line) {
  return running("a warp collective").warp(op, mask, value, param, width, file, line);
}

uint32_t active_mask() {
  return running("__activemask").active_mask();
}

unsigned char* dynamic_shared_memory() {
  return running("dynamic shared memory").dynamic_shared();
}

}  // namespace ember::simt
