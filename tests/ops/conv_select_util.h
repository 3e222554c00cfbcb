// What the selection tests share (tests/ops/test_conv2d_select.cpp, test_conv2d_cache.cpp): test
// algorithms that refuse to run in a chosen way, a scope that registers one, the emulator device,
// and stderr captured while a scope runs.
#pragma once

#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "ops/conv2d_algo.h"
#include "runtime/error.h"

namespace ember::test {

inline const Device kEmu0(DeviceType::EMU, 0);

// A registered algorithm that supports every float key on every device and never computes
// anything: each run counts itself, then throws the chosen error. `cost` -1 makes the heuristic
// rank it first, so a test sees that the benchmark and the fallback skip it.
class RefusingAlgo final : public ops::ConvAlgo {
 public:
  enum class Throws { not_supported, out_of_memory };
  RefusingAlgo(std::string name, Throws t, bool deterministic, size_t workspace, int* runs)
      : ConvAlgo(std::move(name), deterministic), throws_(t), workspace_(workspace), runs_(runs) {}

  ops::ConvBackend backend(DeviceType) const override { return ops::ConvBackend::cpu; }
  bool supports(const ops::ConvKey& k, std::string* why) const override {
    if (k.dtype != DType::f32 && k.dtype != DType::f64) return *why = "floats only", false;
    return true;
  }
  size_t workspace_bytes(const ops::ConvKey&) const override { return workspace_; }
  double cost(const ops::ConvKey&) const override { return -1.0; }
  void run_forward(const ops::ConvKey&, const void*, const void*, const void*, void*,
                   ops::ConvWorkspace) const override {
    refuse();
  }
  void run_backward_data(const ops::ConvKey&, const void*, const void*, void*,
                         ops::ConvWorkspace) const override {
    refuse();
  }
  void run_backward_filter(const ops::ConvKey&, const void*, const void*, void*,
                           ops::ConvWorkspace) const override {
    refuse();
  }

 private:
  void refuse() const {
    ++*runs_;
    if (throws_ == Throws::out_of_memory) throw OutOfMemory("test", 1 << 20, 0, 0, 0);
    throw ops::ConvNotSupported(name() + ": refuses to run");
  }
  Throws throws_;
  size_t workspace_;
  int* runs_;
};

// Registers `algo` for the scope.
struct ScopedAlgo {
  std::string name;
  explicit ScopedAlgo(std::shared_ptr<const ops::ConvAlgo> algo) : name(algo->name()) {
    ops::register_conv_algo(std::move(algo));
  }
  ~ScopedAlgo() { ops::unregister_conv_algo(name); }
};

// std::cerr into a string for the scope.
struct CaptureStderr {
  std::ostringstream text;
  std::streambuf* saved = std::cerr.rdbuf(text.rdbuf());
  ~CaptureStderr() { std::cerr.rdbuf(saved); }
  std::string str() const { return text.str(); }
};

}  // namespace ember::test
