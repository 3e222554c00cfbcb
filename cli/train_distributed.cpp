// `ember train --distributed` (cli/train_distributed.h).
#include "cli/train_distributed.h"

#include <cstdio>

#include "dist/backends.h"
#include "dist/sync_batch_norm.h"

namespace ember::cli {

DistributedTraining::DistributedTraining(const DistributedOptions& o, const nn::ModulePtr& model,
                                         Device device)
    : options_(o), device_(device) {
  dist::InitOptions init;
  init.backend = o.backend;
  if (o.backend == "auto")
    init.backend = device.is_cuda() && dist::nccl_missing_reason().empty() ? "nccl" : "mpi";
  EMBER_CHECK_VALUE(init.backend != "nccl" || device.is_cuda(),
                    "--dist-backend nccl needs --device cuda (NCCL is not supported on ", device,
                    "); the mpi backend carries host copies of cpu and emu tensors");
  init.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000.0));
  init.device = device;
  const dist::Launch launch = dist::detect_launch();
  EMBER_CHECK_T(DistError, launch.kind != dist::Launch::Kind::none,
                "--distributed: this process was not started for distributed training: ",
                dist::how_to_launch());
  group_ = dist::init_process_group(init);
  // Only rank 0 prints progress; the other ranks' standard output goes nowhere, their errors
  // still reach standard error.
  if (group_->rank() != 0) std::freopen("/dev/null", "w", stdout);
  if (o.sync_bn) converted_bn_ = dist::convert_sync_batchnorm(*model, group_);
  dist::DdpOptions d;
  d.bucket_cap_mb = o.bucket_mb;
  ddp_ = std::make_shared<dist::DistributedDataParallel>(model, group_, d);
}

DistributedTraining::~DistributedTraining() {
  ddp_.reset();
  group_.reset();
  dist::destroy_process_group();
}

std::string DistributedTraining::describe() const {
  const auto buckets = ddp_->reducer().bucket_bytes();
  size_t total = 0;
  for (size_t b : buckets) total += b;
  return detail::str_cat("distributed: ", group_->size(), " ranks on ", group_->backend(), ", ",
                         buckets.size(), " gradient bucket(s) of ", format_bytes(total),
                         " in all (cap ", options_.bucket_mb, " MB), batch norm ",
                         options_.sync_bn ? "synchronised (SyncBatchNorm, " +
                                                std::to_string(converted_bn_) + " layers)"
                                          : "per rank",
                         ", timeout ", options_.timeout_s, " s");
}

std::vector<int64_t> DistributedTraining::share(const std::vector<int64_t>& global) const {
  const auto b = static_cast<int64_t>(global.size());
  const int64_t w = world_size(), r = rank();
  if (b < w) return {};
  const int64_t base = b / w, extra = b % w;
  const int64_t start = r * base + std::min(r, extra), len = base + (r < extra ? 1 : 0);
  return {global.begin() + start, global.begin() + start + len};
}

double DistributedTraining::loss_weight(int64_t share, int64_t global) const {
  return static_cast<double>(world_size()) * static_cast<double>(share) /
         static_cast<double>(global);
}

std::vector<double> DistributedTraining::sum(const std::vector<double>& values) {
  Tensor t = from_vector<double>(values).to(device_);
  group_->all_reduce(t, dist::ReduceOp::sum)->wait();
  return t.to(kCPU).to_vector<double>();
}

}  // namespace ember::cli
