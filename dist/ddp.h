// DistributedDataParallel: data-parallel training with PyTorch's semantics. Each rank runs the
// whole model on its share of the batch; parameters start equal (broadcast from rank 0), and the
// gradients are averaged over the ranks during the backward pass, so every rank takes the same
// optimiser step.
//
// Note [Gradient buckets]: the parameters are grouped into buckets in reverse registration order
// (the order the backward pass produces their gradients), the first holding up to 1 MiB and the
// others up to bucket_cap_mb (25 MB by default), as PyTorch does; parameters of another dtype or
// device go to buckets of their own. A post-accumulate-grad hook on each parameter
// (autograd/engine.h) copies its gradient into its bucket's flat buffer; when the last gradient
// of a bucket has arrived, the bucket's all-reduce (average) is launched at once, asynchronously,
// while the backward pass goes on to the earlier layers. Buckets launch in index order on every
// rank (a bucket that is ready early waits for the ones before it), since collectives must be
// issued in the same order everywhere. Each hook also lets the outstanding collectives progress
// (ProcessGroup::poll). When the last bucket is launched, the hook waits for all of them and
// copies the averaged gradients back into each parameter's grad: the backward pass ends with
// the gradients reduced, and the optimiser step needs nothing more.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "dist/process_group.h"
#include "nn/module.h"

namespace ember::dist {

// The gradient bucketing and reduction of DistributedDataParallel, usable on its own (the
// Python wrapper drives it).
class Reducer {
 public:
  // requires: params are leaves that require grad, in registration order; names (optional) have
  // the same length; bucket_cap_bytes > 0. Registers one hook per parameter.
  Reducer(std::vector<Tensor> params, ProcessGroupPtr group, size_t bucket_cap_bytes,
          std::vector<std::string> names = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // false: backward passes only accumulate locally (no_sync); the next synchronised one reduces
  // the accumulated gradients.
  void set_sync(bool sync) { sync_ = sync; }
  bool sync() const { return sync_; }
  // Before a forward pass: raises ValueError naming the parameters that got no gradient if the
  // last synchronised backward left a reduction unfinished (unused parameters).
  void prepare_forward();

  // Parameter indices (registration order) per bucket, in launch order.
  std::vector<std::vector<size_t>> bucket_indices() const;
  std::vector<size_t> bucket_bytes() const;

  // What happened in the last synchronised backward pass, for tests and profiles: a gradient
  // ready (index = parameter), a bucket's all-reduce launched or seen done (index = bucket),
  // with milliseconds since the reducer was made.
  struct Event {
    enum class Kind { grad_ready, bucket_launched, bucket_done } kind;
    size_t index;
    double ms;
  };
  const std::vector<Event>& timeline() const { return timeline_; }
  // The clock of the timeline: milliseconds since the reducer was made.
  double now_ms() const;

 private:
  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;  // element offset of each parameter in `flat`
    Tensor flat;
    size_t pending = 0;
    WorkPtr work;
  };
  void on_grad(size_t index);
  void finish();

  std::vector<Tensor> params_;
  std::vector<std::string> names_;
  ProcessGroupPtr group_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_, slot_of_;
  std::vector<bool> ready_;
  std::vector<HookHandle> hooks_;
  size_t next_launch_ = 0;
  bool sync_ = true, in_pass_ = false;
  std::vector<Event> timeline_;
  std::chrono::steady_clock::time_point t0_;
};

struct DdpOptions {
  double bucket_cap_mb = 25.0;    // PyTorch's default
  bool broadcast_buffers = true;  // rank 0's buffers (batch-norm statistics) before each forward
};

// Wraps `module` (registered as child "module", so the state dict's keys start "module.", as
// PyTorch's). The constructor checks that every rank has the same parameters (a checksum of
// names, shapes and dtypes; ValueError naming the ranks that differ) and broadcasts rank 0's
// parameters and buffers.
class DistributedDataParallel : public nn::Module {
 public:
  explicit DistributedDataParallel(nn::ModulePtr module, ProcessGroupPtr group = nullptr,
                                   DdpOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "DistributedDataParallel"; }
  nn::Module& module() { return *module_; }
  Reducer& reducer() { return *reducer_; }
  ProcessGroup& group() { return *group_; }

  // While alive, backward passes accumulate gradients without communication (no_sync()).
  class NoSync {
   public:
    explicit NoSync(Reducer& r) : r_(r), previous_(r.sync()) { r_.set_sync(false); }
    ~NoSync() { r_.set_sync(previous_); }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    Reducer& r_;
    bool previous_;
  };

 private:
  nn::ModulePtr module_;
  ProcessGroupPtr group_;
  DdpOptions options_;
  std::unique_ptr<Reducer> reducer_;
};

// Raises ValueError unless every rank of `group` has the same parameters (names, shapes, dtypes).
void check_same_parameters(const NamedTensors& params, ProcessGroup& group);
// Copies rank 0's values of `tensors` to every rank (in place).
void broadcast_from_rank0(const std::vector<Tensor>& tensors, ProcessGroup& group);

}  // namespace ember::dist
