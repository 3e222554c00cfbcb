// Training end to end on the CPU: bit-for-bit determinism from a seed, exact resume from a
// checkpoint, and the checkpoint's errors.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/loss.h"
#include "nn/checkpoint.h"
#include "nn/datasets.h"
#include "nn/layers.h"
#include "nn/models.h"
#include "nn/optim.h"
#include "runtime/rng.h"

using namespace ember;
using namespace ember::nn;

namespace {

struct Run {
  ModulePtr model;
  std::unique_ptr<Optimizer> opt;
};

// LeNet for 8x8 plus a dropout layer, so the generator's state matters too.
Run make_run(uint64_t seed) {
  manual_seed(seed);
  auto seq = std::make_shared<Sequential>(std::vector<ModulePtr>{
      lenet({1, 8, 10}), std::make_shared<Dropout>(0.2)});
  Run r{seq, std::make_unique<SGD>(seq->parameters(), SGDOptions{0.05, 0.9})};
  return r;
}

// Trains `steps` steps starting at global step `first`, returning the losses.
std::vector<float> train_steps(Run& r, const TensorDataset& data, int first, int steps) {
  std::vector<float> losses;
  DataLoader loader(data, 64, /*shuffle=*/true, false, /*seed=*/7);
  const int per_epoch = static_cast<int>(loader.num_batches());
  int step = 0;
  for (int epoch = 0; step < first + steps; ++epoch) {
    loader.set_epoch(static_cast<uint64_t>(epoch));
    for (const Batch& b : loader) {
      if (step >= first + steps) break;
      if (step++ < first) continue;
      Tensor loss = cross_entropy((*r.model)(b.inputs), b.labels);
      r.opt->zero_grad();
      backward(loss);
      r.opt->step();
      losses.push_back(loss.item<float>());
    }
    (void)per_epoch;
  }
  return losses;
}

std::vector<std::vector<float>> params_of(Module& m) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : m.parameters()) out.push_back(p.to_vector<float>());
  return out;
}

std::string temp_path(const char* name) {
  return std::string("/tmp/ember_test_") + std::to_string(::getpid()) + "_" + name;
}

}  // namespace

TEST_CASE("the same seed gives the same loss sequence bit for bit") {
  TensorDataset data = load_digits(default_data_dir(), Split::train);
  // Each run seeds the default generator (initial weights and dropout masks) itself.
  Run a = make_run(11);
  std::vector<float> la = train_steps(a, data, 0, 30);
  Run b = make_run(11);
  std::vector<float> lb = train_steps(b, data, 0, 30);
  CHECK(la == lb);
  CHECK(params_of(*a.model) == params_of(*b.model));
  Run c = make_run(12);
  CHECK(train_steps(c, data, 0, 30) != la);
  CHECK(la.back() < la.front());  // it learns
}

TEST_CASE("N steps straight equal N/2, save, load into fresh objects, N/2 — bit for bit") {
  TensorDataset data = load_digits(default_data_dir(), Split::train);
  const int n = 40;  // crosses an epoch boundary (23 batches of 64 per epoch)
  Run straight = make_run(3);
  std::vector<float> all = train_steps(straight, data, 0, n);

  Run first = make_run(3);
  std::vector<float> l1 = train_steps(first, data, 0, n / 2);
  const std::string path = temp_path("resume.safetensors");
  save_checkpoint(path, "lenet+dropout", *first.model, *first.opt, 0);
  manual_seed(999);  // disturb the generator: the checkpoint must restore it
  Run second = make_run(4);  // different initial weights, overwritten by the load
  load_checkpoint(path, "lenet+dropout", *second.model, *second.opt);
  std::vector<float> l2 = train_steps(second, data, n / 2, n / 2);
  l1.insert(l1.end(), l2.begin(), l2.end());
  CHECK(l1 == all);
  CHECK(params_of(*second.model) == params_of(*straight.model));
  std::remove(path.c_str());
}

TEST_CASE("checkpoint errors name the problem and change nothing") {
  Run r = make_run(1);
  const std::string path = temp_path("ckpt.safetensors");
  save_checkpoint(path, "lenet+dropout", *r.model, *r.opt, 3);
  Run other = make_run(2);
  auto before = params_of(*other.model);
  try {
    load_checkpoint(path, "resnet20", *other.model, *other.opt);
    FAIL("expected ValueError");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("a checkpoint of lenet+dropout, but the model is resnet20") !=
          std::string::npos);
  }
  Adam adam(other.model->parameters(), AdamOptions{});
  CHECK_THROWS_AS(load_checkpoint(path, "lenet+dropout", *other.model, adam), ValueError);
  CHECK(params_of(*other.model) == before);
  CheckpointInfo info = load_checkpoint(path, "lenet+dropout", *other.model, *other.opt);
  CHECK(info.epoch == 3);
  // A truncated file is a FormatError; a missing one an IOError.
  {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  CHECK_THROWS_AS(load_checkpoint(path, "lenet+dropout", *other.model, *other.opt), FormatError);
  std::remove(path.c_str());
  CHECK_THROWS_AS(load_checkpoint(path, "lenet+dropout", *other.model, *other.opt), IOError);
}
