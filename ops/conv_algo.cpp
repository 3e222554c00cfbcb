// The convolution algorithm registry: the built-in CPU and GPU algorithms, the policies, the
// per-key ranking cache and the run-with-fallback loop.
#include "ops/conv_algo.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kernels/cpu/conv2d_im2col.h"
#include "kernels/cpu/conv2d_implicit_gemm.h"
#include "ops/dispatch.h"
#include "runtime/tensor.h"

namespace ember::ops {

namespace kc = kernels::cpu;
using AlgoPtr = std::shared_ptr<const ConvAlgo>;

const char* conv_backend_name(ConvBackend b) {
  const char* names[] = {"cpu", "ember-cuda", "cudnn"};
  return names[static_cast<int>(b)];
}
const char* conv_policy_name(ConvPolicy p) {
  const char* names[] = {"heuristic", "deterministic", "forced"};
  return names[static_cast<int>(p)];
}

bool operator==(const ConvKey& a, const ConvKey& b) {
  return std::memcmp(&a, &b, sizeof(ConvKey)) == 0;
}

size_t ConvKeyHash::operator()(const ConvKey& k) const {
  // FNV-1a over the key's bytes (Note [ConvKey bytes]).
  const auto* p = reinterpret_cast<const unsigned char*>(&k);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof(ConvKey); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return static_cast<size_t>(h);
}

kernels::ConvShape conv_shape_of(const ConvKey& k) {
  kernels::ConvShape s;
  s.n = k.n, s.c = k.c, s.h = k.h, s.w = k.w, s.k = k.k, s.r = k.r, s.s = k.s;
  s.stride_h = k.stride_h, s.stride_w = k.stride_w, s.pad_h = k.pad_h, s.pad_w = k.pad_w;
  s.dil_h = k.dil_h, s.dil_w = k.dil_w, s.groups = k.groups;
  s.oh = (k.h + 2 * k.pad_h - k.dil_h * (k.r - 1) - 1) / k.stride_h + 1;
  s.ow = (k.w + 2 * k.pad_w - k.dil_w * (k.s - 1) - 1) / k.stride_w + 1;
  return s;
}

std::string conv_key_string(const ConvKey& k) {
  std::ostringstream os;
  os << conv_direction_name(k.direction) << ' ' << dtype_name(k.dtype) << ' '
     << Device(k.device_type, k.device_index) << " N" << k.n << " C" << k.c << " H" << k.h << " W"
     << k.w << " K" << k.k << " R" << k.r << " S" << k.s << " stride " << k.stride_h << 'x'
     << k.stride_w << " pad " << k.pad_h << 'x' << k.pad_w << " dil " << k.dil_h << 'x' << k.dil_w
     << " groups " << k.groups << (k.deterministic ? " deterministic" : "");
  return os.str();
}

namespace {

// --- Built-in CPU algorithms ------------------------------------------------------------------

bool cpu_supports(const ConvKey& k, std::string* why) {
  if (k.device_type != DeviceType::CPU) return *why = "runs on the cpu only", false;
  if (k.dtype != DType::f32 && k.dtype != DType::f64)
    return *why = "float32 and float64 only", false;
  if (k.layout != ConvLayout::nchw) return *why = "NCHW layout only", false;
  return true;
}

double threads() {
  return static_cast<double>(std::max(1, omp_get_max_threads()));
}

// Rough throughputs of this machine's CPU: scalar loops vs Eigen's packed GEMM, in
// multiply-adds per nanosecond per thread, and the cost of unrolling the columns.
double direct_cost(const ConvKey& k) {
  const kernels::ConvShape s = conv_shape_of(k);
  const double slow = k.direction == ConvDirection::backward_data ? 0.5 : 1.0;  // modulo tests
  return static_cast<double>(s.macs()) / (0.5 * slow * threads());
}

double im2col_cost(const ConvKey& k) {
  const kernels::ConvShape s = conv_shape_of(k);
  const double rate = k.dtype == DType::f64 ? 4.0 : 8.0;
  const double cols = s.is_pointwise() ? 0.0 : double(s.n) * s.c * s.r * s.s * s.oh * s.ow;
  return 2000.0 + static_cast<double>(s.macs()) / (rate * threads()) + cols / threads();
}

// The micro-kernels run about twice Eigen's rate here (16 multiply-adds per vector instruction,
// against im2col_cost's 8 per unit), on filter counts rounded up to their tiles; the kernel
// estimates its own work (kernels/cpu/conv2d_implicit_gemm.h). Few filters in a tile, as in the
// first layer's backward data (3 input channels), leave im2col_gemm cheaper.
double implicit_gemm_cpu_cost(const ConvKey& k) {
  return 1000.0 + kc::conv2d_implicit_gemm_work(conv_shape_of(k), k.direction) / threads();
}

bool implicit_gemm_cpu_supports(const ConvKey& k, std::string* why) {
  if (!cpu_supports(k, why)) return false;
  const char* reason = "";
  if (kernels_for(kCPU).conv2d_implicit_gemm_supports(k.dtype, conv_shape_of(k), k.direction,
                                                      &reason))
    return true;
  return *why = reason, false;
}

// --- Built-in GPU algorithms (cuda and emu: kernels/cuda/conv2d_*.cu) -------------------------

bool gpu_supports(const ConvKey& k, std::string* why) {
  if (k.device_type != DeviceType::CUDA && k.device_type != DeviceType::EMU)
    return *why = "runs on cuda and emu devices only", false;
  if (k.dtype != DType::f32 && k.dtype != DType::f64)
    return *why = "float32 and float64 only", false;
  if (k.layout != ConvLayout::nchw) return *why = "NCHW layout only", false;
  return true;
}

// Rough GPU costs in multiply-adds per unit: the direct loops read every operand from global
// memory per multiply-add; the implicit GEMM runs ~8x faster on a full tile but pays for the
// unused columns of its tile (columns per group round up to 16, 32 or a multiple of 64) and a
// fixed cost per launch, so depthwise-like shapes (one column per group) go to the direct
// kernels.
double gpu_direct_cost(const ConvKey& k) {
  return 10.0 + static_cast<double>(conv_shape_of(k).macs()) / 50.0;
}

double implicit_gemm_cost(const ConvKey& k) {
  const kernels::ConvShape s = conv_shape_of(k);
  const int64_t cols = k.direction == ConvDirection::backward_data ? s.cg() : s.kg();
  const int64_t tile = cols <= 16 ? 16 : cols <= 32 ? 32 : (cols + 63) / 64 * 64;
  const double waste = static_cast<double>(tile) / static_cast<double>(cols);
  return 20.0 + static_cast<double>(s.macs()) * waste / 400.0;
}

ConvAlgo gpu_direct_algo() {
  ConvAlgo a;
  a.name = "gpu_direct";
  a.backend = ConvBackend::ember_cuda;
  a.deterministic = true;  // one thread per output element, fixed summation order
  a.supports = gpu_supports;
  a.workspace_bytes = [](const ConvKey&) { return size_t{0}; };
  a.cost = gpu_direct_cost;
  a.run = [](const ConvKey& k, const ConvBuffers& b, void*, size_t) {
    const Device dev(k.device_type, k.device_index);
    const kernels::KernelTable& g = kernels_for(dev);
    const kernels::ConvShape s = conv_shape_of(k);
    const DType t = k.dtype;
    const gpu::Stream st = stream_of(dev);
    switch (k.direction) {
      case ConvDirection::forward:
        return g.conv2d_fwd_direct(t, s, b.x, b.w, b.bias, b.y, st);
      case ConvDirection::backward_data:
        return g.conv2d_bwd_data_direct(t, s, b.dy, b.w, b.dx, st);
      case ConvDirection::backward_filter:
        return g.conv2d_bwd_filter_direct(t, s, b.dy, b.x, b.dw, st);
    }
  };
  return a;
}

ConvAlgo implicit_gemm_algo() {
  ConvAlgo a;
  a.name = "implicit_gemm";
  a.backend = ConvBackend::ember_cuda;
  a.deterministic = true;  // split-K partial sums are added in a fixed order, no atomics
  a.supports = gpu_supports;
  a.workspace_bytes = [](const ConvKey& k) {
    return kernels_for(Device(k.device_type, k.device_index))
        .conv2d_implicit_gemm_workspace_bytes(k.dtype, conv_shape_of(k), k.direction);
  };
  a.cost = implicit_gemm_cost;
  a.run = [](const ConvKey& k, const ConvBuffers& b, void* ws, size_t ws_bytes) {
    const Device dev(k.device_type, k.device_index);
    const kernels::KernelTable& g = kernels_for(dev);
    const kernels::ConvShape s = conv_shape_of(k);
    const DType t = k.dtype;
    const gpu::Stream st = stream_of(dev);
    switch (k.direction) {
      case ConvDirection::forward:
        return g.conv2d_fwd_implicit_gemm(t, s, b.x, b.w, b.bias, b.y, ws, ws_bytes, st);
      case ConvDirection::backward_data:
        return g.conv2d_bwd_data_implicit_gemm(t, s, b.dy, b.w, b.dx, ws, ws_bytes, st);
      case ConvDirection::backward_filter:
        return g.conv2d_bwd_filter_implicit_gemm(t, s, b.dy, b.x, b.dw, ws, ws_bytes, st);
    }
  };
  return a;
}

std::vector<AlgoPtr> builtin_algos() {
  ConvAlgo im2col;
  im2col.name = "im2col_gemm";
  im2col.deterministic = true;  // fixed partition of the batch, fixed summation order
  im2col.supports = cpu_supports;
  im2col.workspace_bytes = [](const ConvKey& k) {
    return kc::conv2d_im2col_workspace_bytes(k.dtype, conv_shape_of(k), k.direction);
  };
  im2col.cost = im2col_cost;
  im2col.run = [](const ConvKey& k, const ConvBuffers& b, void* ws, size_t ws_bytes) {
    const kernels::ConvShape s = conv_shape_of(k);
    switch (k.direction) {
      case ConvDirection::forward:
        return kc::conv2d_fwd_im2col(k.dtype, s, b.x, b.w, b.bias, b.y, ws, ws_bytes);
      case ConvDirection::backward_data:
        return kc::conv2d_bwd_data_im2col(k.dtype, s, b.dy, b.w, b.dx, ws, ws_bytes);
      case ConvDirection::backward_filter:
        return kc::conv2d_bwd_filter_im2col(k.dtype, s, b.dy, b.x, b.dw, ws, ws_bytes);
    }
  };

  ConvAlgo direct;
  direct.name = "direct";
  direct.deterministic = true;
  direct.supports = cpu_supports;
  direct.workspace_bytes = [](const ConvKey&) { return size_t{0}; };
  direct.cost = direct_cost;
  direct.run = [](const ConvKey& k, const ConvBuffers& b, void*, size_t) {
    const kernels::KernelTable& c = kernels_for(kCPU);
    const kernels::ConvShape s = conv_shape_of(k);
    switch (k.direction) {
      case ConvDirection::forward:
        return c.conv2d_fwd_direct(k.dtype, s, b.x, b.w, b.bias, b.y, nullptr);
      case ConvDirection::backward_data:
        return c.conv2d_bwd_data_direct(k.dtype, s, b.dy, b.w, b.dx, nullptr);
      case ConvDirection::backward_filter:
        return c.conv2d_bwd_filter_direct(k.dtype, s, b.dy, b.x, b.dw, nullptr);
    }
  };
  ConvAlgo implicit;
  implicit.name = "implicit_gemm_cpu";
  implicit.deterministic = true;  // fixed partition of the panels, fixed summation order
  implicit.supports = implicit_gemm_cpu_supports;
  implicit.workspace_bytes = [](const ConvKey& k) {
    return kernels_for(kCPU).conv2d_implicit_gemm_workspace_bytes(k.dtype, conv_shape_of(k),
                                                                 k.direction);
  };
  implicit.cost = implicit_gemm_cpu_cost;
  implicit.run = [](const ConvKey& k, const ConvBuffers& b, void* ws, size_t ws_bytes) {
    const kernels::KernelTable& c = kernels_for(kCPU);
    const kernels::ConvShape s = conv_shape_of(k);
    switch (k.direction) {
      case ConvDirection::forward:
        return c.conv2d_fwd_implicit_gemm(k.dtype, s, b.x, b.w, b.bias, b.y, ws, ws_bytes, nullptr);
      case ConvDirection::backward_data:
        return c.conv2d_bwd_data_implicit_gemm(k.dtype, s, b.dy, b.w, b.dx, ws, ws_bytes, nullptr);
      case ConvDirection::backward_filter:
        return c.conv2d_bwd_filter_implicit_gemm(k.dtype, s, b.dy, b.x, b.dw, ws, ws_bytes,
                                                 nullptr);
    }
  };
  return {std::make_shared<const ConvAlgo>(std::move(im2col)),
          std::make_shared<const ConvAlgo>(std::move(direct)),
          std::make_shared<const ConvAlgo>(std::move(implicit)),
          std::make_shared<const ConvAlgo>(gpu_direct_algo()),
          std::make_shared<const ConvAlgo>(implicit_gemm_algo())};
}

// --- Registry state ----------------------------------------------------------------------------

struct Ranking {
  std::string forced;          // the forced name this ranking was made under
  std::vector<AlgoPtr> order;  // what run_conv tries, in turn
  std::string error;           // why nothing can run (order empty)
  bool forced_error = false;   // the error is about the forced name
};

struct Registry {
  std::mutex mu;
  std::vector<AlgoPtr> algos = builtin_algos();
  std::string forced_api;
  bool deterministic = false;
  std::unordered_map<ConvKey, Ranking, ConvKeyHash> cache;
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string names_list(const std::vector<AlgoPtr>& algos) {
  std::string s;
  for (const AlgoPtr& a : algos) s += (s.empty() ? "" : ", ") + a->name;
  return s;
}

bool log_select() {
  const char* v = std::getenv("EMBER_LOG");
  return v && std::strstr(v, "select") != nullptr;
}

std::string env_forced() {
  const char* v = std::getenv("EMBER_CONV_ALGO");
  return v ? std::string(v) : std::string();
}

std::string forced_locked(Registry& r) {
  return r.forced_api.empty() ? env_forced() : r.forced_api;
}

std::string fmt_cost(double c) {
  std::ostringstream os;
  os.precision(3);
  os << c;
  return os.str();
}

// The full verdict for `key` over `algos`, and the ranking run_conv follows.
ConvSelection explain(const std::vector<AlgoPtr>& algos, const std::string& forced,
                      const ConvKey& key, Ranking* ranking) {
  ConvSelection sel;
  sel.policy = !forced.empty()     ? ConvPolicy::forced
               : key.deterministic ? ConvPolicy::deterministic
                                   : ConvPolicy::heuristic;
  std::vector<size_t> eligible;
  for (const AlgoPtr& a : algos) {
    ConvCandidate c;
    c.name = a->name;
    c.backend = a->backend;
    c.deterministic = a->deterministic;
    std::string why;
    c.supported = a->supports(key, &why);
    if (c.supported) {
      c.workspace_bytes = a->workspace_bytes(key);
      c.cost = a->cost ? a->cost(key) : 0.0;
    }
    const size_t i = sel.candidates.size();
    if (!c.supported) {
      c.reason = "not supported: " + why;
    } else if (sel.policy == ConvPolicy::forced) {
      if (a->name != forced) {
        c.reason = "not tried: '" + forced + "' is forced";
      } else if (key.deterministic && !a->deterministic) {
        c.reason = "forced, but not deterministic and the deterministic policy is on";
      } else {
        c.reason = "forced";
        eligible.push_back(i);
      }
    } else if (sel.policy == ConvPolicy::deterministic && !a->deterministic) {
      c.reason = "not deterministic";
    } else {
      eligible.push_back(i);
    }
    if (!c.supported && a->name == forced) c.reason = "forced, but " + c.reason;
    sel.candidates.push_back(std::move(c));
  }
  std::stable_sort(eligible.begin(), eligible.end(), [&](size_t a, size_t b) {
    return sel.candidates[a].cost < sel.candidates[b].cost;
  });
  for (size_t r = 0; r < eligible.size(); ++r) {
    ConvCandidate& c = sel.candidates[eligible[r]];
    c.rank = static_cast<int>(r);
    c.chosen = r == 0;
    if (sel.policy != ConvPolicy::forced)
      c.reason = (r == 0 ? "lowest estimated cost ("
                         : "fallback " + std::to_string(r) + ": estimated cost (") +
                 fmt_cost(c.cost) + ")" +
                 (sel.policy == ConvPolicy::deterministic ? " among deterministic algorithms" : "");
    if (ranking) ranking->order.push_back(algos[eligible[r]]);
  }
  const bool known =
      std::any_of(algos.begin(), algos.end(), [&](const AlgoPtr& a) { return a->name == forced; });
  if (!eligible.empty()) {
    const ConvCandidate& c = sel.candidates[eligible[0]];
    sel.chosen = c.name;
    sel.reason = conv_policy_name(sel.policy) + std::string(": ") + c.reason;
  } else if (sel.policy == ConvPolicy::forced && !known) {
    sel.reason = "unknown algorithm '" + forced + "' forced (valid: " + names_list(algos) + ")";
  } else {
    std::string why = sel.policy == ConvPolicy::forced
                          ? "forced algorithm '" + forced + "' cannot run it"
                          : "no registered algorithm supports it";
    for (const ConvCandidate& c : sel.candidates) why += "; " + c.name + ": " + c.reason;
    sel.reason = why;
  }
  if (ranking) {
    ranking->forced = forced;
    ranking->error = sel.chosen.empty() ? sel.reason : "";
    ranking->forced_error = sel.policy == ConvPolicy::forced;
  }
  return sel;
}

}  // namespace

std::vector<std::string> conv_algo_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const AlgoPtr& a : r.algos) names.push_back(a->name);
  return names;
}

void register_conv_algo(ConvAlgo algo) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  EMBER_CHECK_VALUE(!algo.name.empty() && algo.supports && algo.workspace_bytes && algo.run,
                    "register_conv_algo: an algorithm needs a name, supports, workspace_bytes "
                    "and run");
  for (const AlgoPtr& a : r.algos)
    EMBER_CHECK_VALUE(a->name != algo.name, "register_conv_algo: '", algo.name,
                      "' is already registered");
  r.algos.push_back(std::make_shared<const ConvAlgo>(std::move(algo)));
  r.cache.clear();
}

bool unregister_conv_algo(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = std::find_if(r.algos.begin(), r.algos.end(),
                         [&](const AlgoPtr& a) { return a->name == name; });
  if (it == r.algos.end()) return false;
  r.algos.erase(it);
  r.cache.clear();
  return true;
}

void set_conv_algo(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const bool known = std::any_of(r.algos.begin(), r.algos.end(),
                                 [&](const AlgoPtr& a) { return a->name == name; });
  EMBER_CHECK_VALUE(name.empty() || known, "set_conv_algo: unknown convolution algorithm '", name,
                    "'; valid names: ", names_list(r.algos));
  r.forced_api = name;
}

std::string forced_conv_algo() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return forced_locked(r);
}

void set_conv_deterministic(bool on) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.deterministic = on;
}

bool conv_deterministic() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.deterministic;
}

void clear_conv_algo_cache() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.cache.clear();
}

ConvSelection explain_conv_algos(const ConvKey& key) {
  Registry& r = registry();
  std::vector<AlgoPtr> algos;
  std::string forced;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    algos = r.algos;
    forced = forced_locked(r);
  }
  return explain(algos, forced, key, nullptr);
}

std::string run_conv(const ConvKey& key, const ConvBuffers& buffers) {
  Registry& r = registry();
  Ranking ranking;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    const std::string forced = forced_locked(r);
    auto it = r.cache.find(key);
    if (it != r.cache.end() && it->second.forced == forced) {
      ranking = it->second;
    } else {
      const ConvSelection sel = explain(r.algos, forced, key, &ranking);
      if (log_select())
        std::cerr << "ember select: conv2d " << conv_key_string(key) << " -> "
                  << (sel.chosen.empty() ? "none" : sel.chosen) << " (" << sel.reason << ")\n";
      r.cache[key] = ranking;
    }
  }
  if (ranking.order.empty()) {
    if (ranking.forced_error) EMBER_THROW(ValueError, "conv2d: ", ranking.error);
    EMBER_THROW(ops::ConvNotSupported, "conv2d: ", conv_key_string(key), ": ", ranking.error);
  }
  std::string failures;
  for (const AlgoPtr& a : ranking.order) {
    try {
      const size_t bytes = a->workspace_bytes(key);
      Tensor ws;
      if (bytes > 0)
        ws = empty({static_cast<int64_t>(bytes)},
                   {kUInt8, Device(key.device_type, key.device_index)});
      a->run(key, buffers, bytes > 0 ? ws.data_ptr() : nullptr, bytes);
      return a->name;
    } catch (const ConvNotSupported& e) {
      failures += "; " + a->name + ": " + e.what();
    } catch (const OutOfMemory& e) {
      failures += "; " + a->name + ": " + e.what();
    }
    if (log_select())
      std::cerr << "ember select: conv2d " << conv_key_string(key) << ": " << a->name
                << " failed, trying the next algorithm\n";
  }
  EMBER_THROW(ops::ConvNotSupported, "conv2d: every algorithm failed for ", conv_key_string(key),
              failures);
}

}  // namespace ember::ops
