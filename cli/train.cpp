// `ember train`: trains a model on a data set with a progress bar per epoch, reports test
// accuracy after each epoch, and saves/resumes checkpoints (model, optimiser, RNG, epoch, loss
// scaler). --amp fp16|bf16 trains in mixed precision: the forward pass and the loss under
// autocast, float32 weights, and for float16 the dynamic loss scaler. --distributed trains
// data-parallel over the processes of mpirun or an env:// launcher (cli/train_distributed.h).
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

#include "autograd/autocast.h"
#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/loss.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/train_distributed.h"
#include "cli/validate.h"
#include "nn/amp.h"
#include "nn/checkpoint.h"
#include "nn/datasets.h"
#include "nn/lr_scheduler.h"
#include "nn/models.h"
#include "nn/optim.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "runtime/rng.h"

namespace ember::cli {
namespace {

struct TrainArgs {
  std::string model = "lenet", data = "digits", optimizer = "sgd", device = "auto";
  std::string schedule = "cosine", amp = "none", dtype = "float32";
  std::string save, resume, data_dir;
  int64_t epochs = 15, batch_size = 32, threads = 0;  // threads 0: all
  int64_t max_steps = 0;                              // 0: no limit
  bool log_steps = false;
  double lr = 0.0, momentum = 0.9, weight_decay = 0.0;  // lr 0: the optimiser's default
  double loss_scale = 65536.0;                          // --amp fp16's initial loss scale
  bool weight_decay_given = false;  // else AdamW's default; an explicit 0 means none
  uint64_t seed = 0;
  bool distributed = false;
  DistributedOptions dist;
};

struct Data {
  TensorDataset train, test;
  nn::ModelSpec spec;
};

// "digits", "mnist:DIR", "fashion-mnist:DIR", "cifar10:DIR".
Data load_data(const TrainArgs& a) {
  std::string kind = a.data, dir;
  auto colon = a.data.find(':');
  if (colon != std::string::npos) {
    kind = a.data.substr(0, colon);
    dir = a.data.substr(colon + 1);
  }
  if (kind == "digits") {
    std::string root = a.data_dir.empty() ? default_data_dir() : a.data_dir;
    return {load_digits(root, Split::train), load_digits(root, Split::test), {1, 8, 10}};
  }
  EMBER_CHECK_VALUE(!dir.empty(), "--data ", kind, " needs a directory: --data ", kind, ":DIR");
  if (kind == "mnist" || kind == "fashion-mnist") {
    TensorDataset tr = load_mnist(dir, Split::train), te = load_mnist(dir, Split::test);
    return {tr, te, {1, tr.inputs().size(2), 10}};
  }
  if (kind == "cifar10")
    return {load_cifar10(dir, Split::train), load_cifar10(dir, Split::test), {3, 32, 10}};
  EMBER_THROW(ValueError, "unknown data set '", a.data,
              "': expected digits, mnist:DIR, fashion-mnist:DIR or cifar10:DIR");
}

std::unique_ptr<nn::Optimizer> make_optimizer(const TrainArgs& a, std::vector<Tensor> params) {
  if (a.optimizer == "sgd")
    return std::make_unique<nn::SGD>(
        std::move(params), nn::SGDOptions{a.lr > 0 ? a.lr : 0.05, a.momentum, 0.0, a.weight_decay});
  nn::AdamOptions o;
  o.lr = a.lr > 0 ? a.lr : 2e-3;
  if (a.optimizer == "adam") {
    o.weight_decay = a.weight_decay;
    return std::make_unique<nn::Adam>(std::move(params), o);
  }
  if (a.optimizer == "adamw") {
    o.weight_decay = a.weight_decay_given ? a.weight_decay : 1e-2;
    return std::make_unique<nn::AdamW>(std::move(params), o);
  }
  EMBER_THROW(ValueError, "unknown optimizer '", a.optimizer, "': expected sgd, adam or adamw");
}

// --amp: autocast's dtype, or none.
std::optional<DType> amp_dtype(const std::string& amp) {
  if (amp == "fp16") return kFloat16;
  if (amp == "bf16") return kBFloat16;
  EMBER_CHECK_VALUE(amp == "none", "unknown --amp '", amp, "': expected none, fp16 or bf16");
  return std::nullopt;
}

// While alive: an autocast region for the device, when --amp asks for one.
struct AmpRegion {
  std::optional<AutocastGuard> guard;
  AmpRegion(std::optional<DType> amp, Device dev) {
    if (amp) guard.emplace(autocast_device_of(dev), *amp);
  }
};

int64_t correct_count(const Tensor& logits, const Tensor& labels) {
  return ops::sum(ops::eq(ops::argmax(logits, 1), labels)).item<int64_t>();
}

double evaluate(nn::Module& model, const TensorDataset& test, Device dev, DType dtype,
                int64_t batch, std::optional<DType> amp) {
  NoGradGuard ng;
  const AmpRegion autocast(amp, dev);
  model.eval();
  DataLoader loader(test, batch);
  int64_t correct = 0;
  for (const Batch& b : loader)
    correct += correct_count(model(b.inputs.to(dev, dtype)).to(kCPU), b.labels);
  model.train();
  return 100.0 * static_cast<double>(correct) / static_cast<double>(test.size());
}

// "loss 0.1234 acc 95.1%"
std::string stats(double loss, double acc) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "loss %.4f acc %.1f%%", loss, acc);
  return buf;
}

int run_train(const TrainArgs& a) {
  if (a.threads > 0) omp_set_num_threads(static_cast<int>(a.threads));
  const Device dev = Device::parse(a.device);
  const std::optional<DType> amp = amp_dtype(a.amp);
  // --dtype float64: weights and inputs in double, for checks where float32's rounding is too
  // coarse (docs/distributed.md: a distributed run against one process over many steps).
  EMBER_CHECK_VALUE(a.dtype == "float32" || a.dtype == "float64", "unknown --dtype '", a.dtype,
                    "': expected float32 or float64");
  const DType dtype = a.dtype == "float64" ? kFloat64 : kFloat32;
  EMBER_CHECK_VALUE(!amp || dtype == kFloat32, "--amp ", a.amp, " needs --dtype float32 (float32 "
                    "master weights)");
  manual_seed(a.seed);
  Data data = load_data(a);
  nn::ModulePtr model = nn::make_model(a.model, data.spec);
  model->to(dev);
  if (dtype != kFloat32) model->to(dtype);
  std::unique_ptr<nn::Optimizer> opt = make_optimizer(a, model->parameters());
  std::unique_ptr<nn::LRScheduler> sched;
  if (a.schedule == "cosine")
    sched = std::make_unique<nn::CosineAnnealingLR>(*opt, a.epochs);
  else if (a.schedule == "step")
    sched = std::make_unique<nn::StepLR>(*opt, std::max<int64_t>(1, a.epochs / 3), 0.1);
  else
    EMBER_CHECK_VALUE(a.schedule == "none", "unknown schedule '", a.schedule,
                      "': expected cosine, step or none");
  // float16 gradients underflow without loss scaling; bfloat16 has float32's range.
  nn::GradScalerOptions scaling;
  scaling.enabled = amp == kFloat16;
  scaling.init_scale = a.loss_scale;
  nn::GradScaler scaler(scaling);
  int64_t start_epoch = 0;
  if (!a.resume.empty()) {
    nn::CheckpointInfo info =
        nn::load_checkpoint(a.resume, a.model, *model, *opt, scaling.enabled ? &scaler : nullptr);
    start_epoch = info.epoch;
    if (sched) sched->set_epoch(start_epoch);  // the lr follows from the epoch
    std::cout << "resumed from " << a.resume << " after epoch " << start_epoch << "\n";
  }
  // After the resume: DistributedDataParallel starts every rank from rank 0's weights.
  std::unique_ptr<DistributedTraining> dist;
  if (a.distributed) dist = std::make_unique<DistributedTraining>(a.dist, model, dev);
  nn::Module& net = dist ? dist->ddp() : *model;
  const bool main_rank = !dist || dist->rank() == 0;
  int64_t params = 0;
  for (const Tensor& p : model->parameters()) params += p.numel();
  std::cout << "training " << a.model << " (" << params << " parameters) on " << a.data << " ("
            << data.train.size() << " train / " << data.test.size() << " test) with " << opt->name()
            << " lr " << opt->lr() << " (" << a.schedule << "), batch " << a.batch_size << ", on "
            << dev << (dtype == kFloat32 ? "" : ", float64") << ", " << omp_get_max_threads()
            << " threads, seed " << a.seed
            << (amp ? std::string(", mixed precision ") + dtype_name(*amp) +
                          (scaling.enabled ? " with loss scaling" : "")
                    : std::string())
            << "\n";
  if (dist) std::cout << dist->describe() << "\n";

  double scale = scaler.get_scale();  // the loss scale before the next step (--amp fp16)
  DataLoader loader(data.train, a.batch_size, /*shuffle=*/true, /*drop_last=*/false, a.seed,
                    /*prefetch=*/true);
  double acc = 0.0;
  int64_t total_steps = 0;
  bool stopped = false, saved = false;
  for (int64_t epoch = start_epoch; epoch < a.epochs && !stopped; ++epoch) {
    loader.set_epoch(static_cast<uint64_t>(epoch));
    Progress bar(loader.num_batches(),
                 "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(a.epochs));
    double loss_sum = 0;
    int64_t seen = 0, correct = 0, step = 0;
    // One optimiser step on this rank's batch `b`, part of a global batch of `global_n`
    // samples; true when --max-steps is reached.
    auto train_on = [&](const Batch& b, int64_t global_n) -> bool {
      Tensor x = b.inputs.to(dev, dtype), y = b.labels.to(dev);
      Tensor logits, loss;
      {
        const AmpRegion autocast(amp, dev);
        logits = net(x);
        loss = cross_entropy(logits, y);
      }
      const int64_t n = b.labels.numel();
      // Distributed: this rank's weight in the global mean (Note [Splitting the global batch]).
      const Tensor objective = dist ? loss * dist->loss_weight(n, global_n) : loss;
      opt->zero_grad();
      if (scaling.enabled) {
        backward(scaler.scale(objective));
        scaler.step(*opt);
        scaler.update();
        const double after = scaler.get_scale();  // one read a step (loss.item() waits anyway)
        if (after < scale)                        // the step was skipped
          std::printf("\nstep %lld: inf or NaN gradients, step skipped; loss scale %g -> %g\n",
                      static_cast<long long>(total_steps + 1), scale, after);
        scale = after;
      } else {
        backward(objective);
        opt->step();
      }
      double step_loss = loss.item();
      int64_t step_correct = correct_count(detach(logits).to(kCPU), b.labels);
      if (dist) {  // the global batch's mean loss and correct count
        const std::vector<double> s =
            dist->sum({step_loss * static_cast<double>(n), static_cast<double>(step_correct)});
        step_loss = s[0] / static_cast<double>(global_n);
        step_correct = static_cast<int64_t>(s[1]);
      }
      loss_sum += step_loss * static_cast<double>(global_n);
      correct += step_correct;
      seen += global_n;
      ++total_steps;
      if (a.log_steps)
        std::printf("step %lld loss %.9g\n", static_cast<long long>(total_steps), step_loss);
      bar.update(++step, seen, stats(loss_sum / seen, 100.0 * correct / seen));
      if (a.max_steps > 0 && total_steps == a.max_steps) {
        stopped = step < loader.num_batches();
        return true;
      }
      return false;
    };
    if (!dist) {
      for (const Batch& b : loader)
        if (train_on(b, b.labels.numel())) break;
    } else {
      // The global batches of a single process, each split over the ranks.
      const std::vector<int64_t> order = loader.epoch_order(static_cast<uint64_t>(epoch));
      for (int64_t s = 0; s < loader.num_batches(); ++s) {
        const auto first = order.begin() + s * a.batch_size;
        const std::vector<int64_t> global(
            first, first + std::min<int64_t>(a.batch_size, static_cast<int64_t>(order.size()) - s * a.batch_size));
        const std::vector<int64_t> mine = dist->share(global);
        if (mine.empty()) {
          std::printf("\nstep skipped: the last batch has %zu samples, fewer than the %d ranks\n",
                      global.size(), dist->world_size());
          continue;
        }
        if (train_on(data.train.get_batch(mine), static_cast<int64_t>(global.size()))) break;
      }
    }
    // Every rank holds the same weights: rank 0 alone evaluates and prints.
    if (main_rank) acc = evaluate(*model, data.test, dev, dtype, 256, amp);
    char test[48];
    std::snprintf(test, sizeof test, " | test acc %.2f%%", acc);
    bar.finish(seen, stats(loss_sum / seen, 100.0 * correct / seen) + test);
    if (sched) sched->step();
    if (stopped) {
      // A checkpoint records whole epochs only, so a run cut short mid-epoch writes none.
      std::printf("stopped after %lld steps (--max-steps), in epoch %lld%s\n",
                  static_cast<long long>(total_steps), static_cast<long long>(epoch + 1),
                  a.save.empty() ? "" : "; no checkpoint written for a partial epoch");
      break;
    }
    if (!a.save.empty() && main_rank) {  // the model itself, not its wrapper: any world size loads it
      nn::save_checkpoint(a.save, a.model, *model, *opt, epoch + 1, {{"data", a.data}},
                          scaling.enabled ? &scaler : nullptr);
      saved = true;
    }
    if (a.max_steps > 0 && total_steps == a.max_steps) break;
  }
  std::printf("final test accuracy: %.2f%%\n", acc);
  if (saved) std::cout << "checkpoint: " << a.save << "\n";
  return 0;
}

}  // namespace

Runner add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a model, reporting test accuracy each epoch");
  auto a = std::make_shared<TrainArgs>();
  cmd->add_option("--model", a->model, "mlp, lenet, resnet20, vgg_small, resnet50 or vgg16")
      ->capture_default_str();
  cmd->add_option("--data", a->data, "digits, mnist:DIR, fashion-mnist:DIR or cifar10:DIR")
      ->capture_default_str();
  cmd->add_option("--data-dir", a->data_dir, "where the bundled data lives (default: searched)");
  cmd->add_option("--epochs", a->epochs)->capture_default_str()->transform(integer_in(1, 100000));
  cmd->add_option("--batch-size", a->batch_size)
      ->capture_default_str()
      ->transform(integer_in(1, int64_t{1} << 20));
  cmd->add_option("--lr", a->lr, "learning rate (default: 0.05 for sgd, 0.002 for adam/adamw)")
      ->transform(real_in(exclusive(0), unbounded_above()));
  cmd->add_option("--optimizer", a->optimizer, "sgd, adam or adamw")->capture_default_str();
  cmd->add_option("--momentum", a->momentum, "SGD momentum")
      ->capture_default_str()
      ->transform(real_in(inclusive(0), exclusive(1)));
  cmd->add_option("--schedule", a->schedule,
                  "learning-rate schedule over the epochs: cosine, step or none")
      ->capture_default_str();
  auto* weight_decay =
      cmd->add_option("--weight-decay", a->weight_decay, "weight decay (AdamW default 0.01)")
          ->transform(real_in(inclusive(0), unbounded_above()));
  cmd->add_option("--device", a->device, "auto, cpu, cuda[:N] or emu[:N]")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "weights and inputs: float32 or float64")
      ->capture_default_str()
      ->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_option("--seed", a->seed, "seed for initialisation, shuffling and dropout")
      ->capture_default_str()
      ->transform(unsigned_in(0, std::numeric_limits<uint64_t>::max()));
  // omp_set_num_threads takes an int; past a few thousand threads only oversubscribe.
  cmd->add_option("--threads", a->threads, "CPU threads (default 0: all)")
      ->transform(integer_in(0, 4096));
  cmd->add_option("--max-steps", a->max_steps,
                  "stop after this many optimiser steps (default: no limit)")
      ->transform(integer_in(1, int64_t{1} << 40));
  cmd->add_flag("--log-steps", a->log_steps,
                "print every step's loss (full precision) on its own line");
  cmd->add_option("--amp", a->amp,
                  "mixed precision: none, fp16 (autocast and loss scaling) or bf16 (autocast)")
      ->capture_default_str();
  cmd->add_option("--loss-scale", a->loss_scale,
                  "--amp fp16's initial loss scale (then halved after an overflow, doubled "
                  "after 2000 clean steps)")
      ->capture_default_str()
      ->transform(real_in(exclusive(0), unbounded_above()));
  cmd->add_option("--save", a->save, "write a checkpoint here after every epoch");
  cmd->add_option("--resume", a->resume, "continue from this checkpoint");
  auto* distributed = cmd->add_flag(
      "--distributed", a->distributed,
      "train data-parallel over the processes started by mpirun or an env:// launcher "
      "(--batch-size is the global batch; docs/distributed.md)");
  cmd->add_option("--dist-backend", a->dist.backend,
                  "auto (nccl for cuda devices when built in, else mpi), mpi or nccl")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}))
      ->needs(distributed);
  cmd->add_option("--dist-timeout", a->dist.timeout_s,
                  "seconds a collective may wait before the job stops with an error naming the "
                  "ranks that stopped answering")
      ->capture_default_str()
      ->transform(real_in(exclusive(0), inclusive(604800)))
      ->needs(distributed);
  cmd->add_option("--bucket-mb", a->dist.bucket_mb,
                  "size of the gradient buckets all-reduced during the backward pass, in MB")
      ->capture_default_str()
      ->transform(real_in(exclusive(0), inclusive(65536)))
      ->needs(distributed);
  cmd->add_flag("--sync-bn", a->dist.sync_bn,
                "batch-norm statistics over the global batch (SyncBatchNorm) instead of each "
                "rank's share")
      ->needs(distributed);
  return [cmd, a, weight_decay]() -> int {
    if (!cmd->parsed()) return -1;
    a->weight_decay_given = weight_decay->count() > 0;
    return run_train(*a);
  };
}

}  // namespace ember::cli
