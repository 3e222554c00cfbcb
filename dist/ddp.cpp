// DistributedDataParallel and its reducer (dist/ddp.h; Note [Gradient buckets]).
#include "dist/ddp.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "autograd/grad_mode.h"
#include "autograd/leaf.h"

namespace ember::dist {

namespace {

constexpr size_t kFirstBucketBytes = size_t{1} << 20;  // PyTorch's first bucket

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

Reducer::Reducer(std::vector<Tensor> params, ProcessGroupPtr group, size_t cap,
                 std::vector<std::string> names)
    : params_(std::move(params)),
      names_(std::move(names)),
      group_(std::move(group)),
      t0_(std::chrono::steady_clock::now()) {
  EMBER_CHECK_VALUE(group_ != nullptr, "DistributedDataParallel: no process group");
  EMBER_CHECK_VALUE(cap > 0, "DistributedDataParallel: bucket_cap_mb must be positive");
  EMBER_CHECK_VALUE(names_.empty() || names_.size() == params_.size(),
                    "DistributedDataParallel: ", names_.size(), " names for ", params_.size(),
                    " parameters");
  if (names_.empty())
    for (size_t i = 0; i < params_.size(); ++i) names_.push_back("parameter " + std::to_string(i));
  // Reverse registration order; one open bucket per (dtype, device) at a time.
  std::map<std::pair<int, std::string>, size_t> open;
  bucket_of_.assign(params_.size(), 0);
  slot_of_.assign(params_.size(), 0);
  std::vector<size_t> bytes;
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& p = params_[k];
    EMBER_CHECK_VALUE(p.requires_grad() && is_leaf(p), "DistributedDataParallel: ", names_[k],
                      " is not a leaf that requires grad");
    const auto key = std::make_pair(static_cast<int>(p.dtype()), p.device().str());
    auto it = open.find(key);
    if (it == open.end()) {
      it = open.emplace(key, buckets_.size()).first;
      buckets_.emplace_back();
      bytes.push_back(0);
    }
    Bucket& b = buckets_[it->second];
    bucket_of_[k] = it->second;
    slot_of_[k] = b.params.size();
    b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + params_[b.params.back()].numel());
    b.params.push_back(k);
    bytes[it->second] += static_cast<size_t>(p.numel()) * p.element_size();
    const size_t limit = it->second == 0 ? std::min(cap, kFirstBucketBytes) : cap;
    if (bytes[it->second] >= limit) open.erase(it);
  }
  for (Bucket& b : buckets_) {
    const Tensor& first = params_[b.params.front()];
    const int64_t n = b.offsets.back() + params_[b.params.back()].numel();
    b.flat = zeros({n}, {first.dtype(), first.device()});
  }
  ready_.assign(params_.size(), false);
  for (size_t k = 0; k < params_.size(); ++k)
    hooks_.push_back(
        register_post_accumulate_grad_hook(params_[k], [this, k](const Tensor&) { on_grad(k); }));
}

Reducer::~Reducer() {
  for (HookHandle& h : hooks_) h.remove();
}

double Reducer::now_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
}

void Reducer::on_grad(size_t k) {
  if (!sync_) return;
  if (!in_pass_) {
    in_pass_ = true;
    next_launch_ = 0;
    timeline_.clear();
    std::fill(ready_.begin(), ready_.end(), false);
    for (Bucket& b : buckets_) b.pending = b.params.size();
  }
  EMBER_CHECK_VALUE(!ready_[k], "DistributedDataParallel: ", names_[k],
                    " received a gradient twice in one backward pass (a reentrant backward?)");
  ready_[k] = true;
  timeline_.push_back({Event::Kind::grad_ready, k, now_ms()});
  Bucket& b = buckets_[bucket_of_[k]];
  const int64_t n = params_[k].numel();
  const int64_t off = b.offsets[slot_of_[k]];
  b.flat.slice(0, off, off + n).copy_(grad(params_[k]).reshape({n}));
  --b.pending;
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& nb = buckets_[next_launch_];
    nb.work =
        group_->all_reduce(nb.flat, is_floating(nb.flat.dtype()) ? ReduceOp::avg : ReduceOp::sum);
    timeline_.push_back({Event::Kind::bucket_launched, next_launch_, now_ms()});
    ++next_launch_;
  }
  group_->poll();
  if (next_launch_ == buckets_.size()) finish();
}

void Reducer::finish() {
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    b.work->wait();
    b.work.reset();
    timeline_.push_back({Event::Kind::bucket_done, i, now_ms()});
    for (size_t s = 0; s < b.params.size(); ++s) {
      const Tensor& p = params_[b.params[s]];
      const int64_t n = p.numel();
      grad(p).copy_(b.flat.slice(0, b.offsets[s], b.offsets[s] + n).view(p.shape()));
    }
  }
  in_pass_ = false;
}

void Reducer::prepare_forward() {
  if (!in_pass_) return;
  std::ostringstream missing;
  int count = 0;
  for (size_t k = 0; k < params_.size(); ++k)
    if (!ready_[k]) missing << (count++ ? ", " : "") << names_[k];
  in_pass_ = false;  // the next backward starts afresh
  EMBER_THROW(ValueError, "DistributedDataParallel: the last backward pass gave no gradient to ",
              count, " parameter(s): ", missing.str(),
              "; every parameter must take part in the loss on every rank (unused parameters "
              "are not supported: remove them from the model, or freeze them before wrapping it)");
}

std::vector<std::vector<size_t>> Reducer::bucket_indices() const {
  std::vector<std::vector<size_t>> out;
  for (const Bucket& b : buckets_) out.push_back(b.params);
  return out;
}

std::vector<size_t> Reducer::bucket_bytes() const {
  std::vector<size_t> out;
  for (const Bucket& b : buckets_)
    out.push_back(static_cast<size_t>(b.flat.numel()) * b.flat.element_size());
  return out;
}

void check_same_parameters(const NamedTensors& params, ProcessGroup& group) {
  std::string signature;
  int64_t elements = 0;
  for (const auto& [name, t] : params) {
    signature += detail::str_cat(name, ":", t.shape(), ":", t.dtype(), ";");
    elements += t.numel();
  }
  const uint64_t h = fnv1a(signature);
  // On the parameters' device: the nccl group takes cuda tensors only.
  const Device dev = params.empty() ? Device() : params.front().second.device();
  Tensor mine = from_vector<int64_t>(
      {static_cast<int64_t>(params.size()), elements, static_cast<int64_t>(h)}).to(dev);
  std::vector<Tensor> all;
  for (int r = 0; r < group.size(); ++r) all.push_back(empty({3}, {kInt64, dev}));
  group.all_gather(all, mine)->wait();
  const std::vector<int64_t> ref = all[0].to_vector<int64_t>();
  std::ostringstream diff;
  int count = 0;
  for (int r = 1; r < group.size(); ++r) {
    const std::vector<int64_t> v = all[r].to_vector<int64_t>();
    if (v != ref)
      diff << (count++ ? "; " : "") << "rank " << r << ": " << v[0] << " parameters, " << v[1]
           << " elements, checksum " << std::hex << static_cast<uint64_t>(v[2]) << std::dec;
  }
  EMBER_CHECK_VALUE(count == 0,
                    "DistributedDataParallel: the model's parameters (names, shapes, "
                    "dtypes) differ across ranks: rank 0: ",
                    ref[0], " parameters, ", ref[1], " elements, checksum ", std::hex,
                    static_cast<uint64_t>(ref[2]), std::dec, "; ", diff.str(),
                    ". Every rank must build the same model");
}

void broadcast_from_rank0(const std::vector<Tensor>& tensors, ProcessGroup& group) {
  NoGradGuard ng;
  std::vector<WorkPtr> works;
  for (const Tensor& t : tensors) works.push_back(group.broadcast(t, 0));
  for (const WorkPtr& w : works) w->wait();
}

DistributedDataParallel::DistributedDataParallel(nn::ModulePtr module, ProcessGroupPtr group,
                                                 DdpOptions options)
    : module_(std::move(module)),
      group_(group ? std::move(group) : default_group_ptr()),
      options_(options) {
  EMBER_CHECK_VALUE(module_ != nullptr, "DistributedDataParallel: no module");
  EMBER_CHECK_VALUE(options_.bucket_cap_mb > 0,
                    "DistributedDataParallel: bucket_cap_mb must be "
                    "positive, got ",
                    options_.bucket_cap_mb);
  register_module("module", module_);
  const NamedTensors named = module_->named_parameters();
  check_same_parameters(named, *group_);
  std::vector<Tensor> state;
  for (const auto& [n, t] : module_->state_dict()) state.push_back(t);
  broadcast_from_rank0(state, *group_);
  std::vector<Tensor> params;
  std::vector<std::string> names;
  for (const auto& [n, t] : named)
    if (t.requires_grad()) {
      params.push_back(t);
      names.push_back(n);
    }
  const auto cap = static_cast<size_t>(options_.bucket_cap_mb * 1024.0 * 1024.0);
  reducer_ = std::make_unique<Reducer>(params, group_, std::max<size_t>(cap, 1), names);
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  reducer_->prepare_forward();
  if (options_.broadcast_buffers && group_->size() > 1) {
    std::vector<Tensor> buffers;
    for (const auto& [n, t] : module_->named_buffers()) buffers.push_back(t);
    if (!buffers.empty()) broadcast_from_rank0(buffers, *group_);
  }
  return module_->forward(x);
}

}  // namespace ember::dist
