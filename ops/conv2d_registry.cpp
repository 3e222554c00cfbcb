// The convolution algorithm registry: the policies, the per-key ranking cache and the
// run-with-fallback loop (the built-in algorithms are in ops/conv2d_algos.cpp).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "ops/conv2d_algo.h"
#include "ops/dispatch.h"
#include "runtime/tensor.h"

namespace ember::ops {

using AlgoPtr = ConvAlgoPtr;

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

std::string conv_key_string(const ConvKey& k) {
  const kernels::ConvShape& s = k.shape;
  std::ostringstream os;
  os << conv_direction_name(k.direction) << ' ' << dtype_name(k.dtype) << ' '
     << k.device() << " N" << s.n << " C" << s.c << " H" << s.h << " W" << s.w << " K" << s.k
     << " R" << s.r << " S" << s.s << " stride " << s.stride_h << 'x' << s.stride_w << " pad "
     << s.pad_h << 'x' << s.pad_w << " dil " << s.dil_h << 'x' << s.dil_w << " groups "
     << s.groups << (k.deterministic ? " deterministic" : "");
  return os.str();
}

namespace {

// --- Registry state ----------------------------------------------------------------------------

struct Ranking {
  std::string forced;          // the forced name this ranking was made under
  std::vector<AlgoPtr> order;  // what run_conv tries, in turn
  std::string error;           // why nothing can run (order empty)
  bool forced_error = false;   // the error is about the forced name
};

struct Registry {
  std::mutex mu;
  std::vector<AlgoPtr> algos = builtin_conv_algos();
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
  for (const AlgoPtr& a : algos) s += (s.empty() ? "" : ", ") + a->name();
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
    c.name = a->name();
    c.backend = a->backend(key.device_type);
    c.deterministic = a->deterministic();
    std::string why;
    c.supported = a->supports(key, &why);
    if (c.supported) {
      c.workspace_bytes = a->workspace_bytes(key);
      c.cost = a->cost(key);
    }
    const size_t i = sel.candidates.size();
    if (!c.supported) {
      c.reason = "not supported: " + why;
    } else if (sel.policy == ConvPolicy::forced) {
      if (a->name() != forced) {
        c.reason = "not tried: '" + forced + "' is forced";
      } else if (key.deterministic && !a->deterministic()) {
        c.reason = "forced, but not deterministic and the deterministic policy is on";
      } else {
        c.reason = "forced";
        eligible.push_back(i);
      }
    } else if (sel.policy == ConvPolicy::deterministic && !a->deterministic()) {
      c.reason = "not deterministic";
    } else {
      eligible.push_back(i);
    }
    if (!c.supported && a->name() == forced) c.reason = "forced, but " + c.reason;
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
      std::any_of(algos.begin(), algos.end(), [&](const AlgoPtr& a) { return a->name() == forced; });
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
  for (const AlgoPtr& a : r.algos) names.push_back(a->name());
  return names;
}

void register_conv_algo(ConvAlgoPtr algo) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  EMBER_CHECK_VALUE(algo && !algo->name().empty(),
                    "register_conv_algo: expected an algorithm with a name");
  for (const AlgoPtr& a : r.algos)
    EMBER_CHECK_VALUE(a->name() != algo->name(), "register_conv_algo: '", algo->name(),
                      "' is already registered");
  r.algos.push_back(std::move(algo));
  r.cache.clear();
}

bool unregister_conv_algo(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = std::find_if(r.algos.begin(), r.algos.end(),
                         [&](const AlgoPtr& a) { return a->name() == name; });
  if (it == r.algos.end()) return false;
  r.algos.erase(it);
  r.cache.clear();
  return true;
}

void set_conv_algo(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const bool known = std::any_of(r.algos.begin(), r.algos.end(),
                                 [&](const AlgoPtr& a) { return a->name() == name; });
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

namespace {

// The ranking for `key`, from the cache or made now (and logged under EMBER_LOG=select).
Ranking ranking_for(const ConvKey& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const std::string forced = forced_locked(r);
  auto it = r.cache.find(key);
  if (it != r.cache.end() && it->second.forced == forced) return it->second;
  Ranking ranking;
  const ConvSelection sel = explain(r.algos, forced, key, &ranking);
  if (log_select()) {
    const std::string plan = ranking.order.empty() ? "" : ranking.order.front()->plan(key);
    std::cerr << "ember select: conv2d " << conv_key_string(key) << " -> "
              << (sel.chosen.empty() ? "none" : sel.chosen) << " (" << sel.reason << ")"
              << (plan.empty() ? "" : ": " + plan) << "\n";
  }
  r.cache[key] = ranking;
  return ranking;
}

// Runs `run(algo, workspace)` with each ranked algorithm in turn until one succeeds.
template <typename Run>
std::string run_ranked(const ConvKey& key, ConvDirection direction, Run&& run) {
  EMBER_CHECK_VALUE(key.direction == direction, "conv2d: a ", conv_direction_name(key.direction),
                    " key given to the ", conv_direction_name(direction), " run");
  const Ranking ranking = ranking_for(key);
  if (ranking.order.empty()) {
    if (ranking.forced_error) EMBER_THROW(ValueError, "conv2d: ", ranking.error);
    EMBER_THROW(ops::ConvNotSupported, "conv2d: ", conv_key_string(key), ": ", ranking.error);
  }
  std::string failures;
  for (const AlgoPtr& a : ranking.order) {
    try {
      const size_t bytes = a->workspace_bytes(key);
      const Tensor ws = workspace(key.device(), bytes);
      run(*a, ConvWorkspace{bytes > 0 ? ws.data_ptr() : nullptr, bytes});
      return a->name();
    } catch (const ConvNotSupported& e) {
      failures += "; " + a->name() + ": " + e.what();
    } catch (const OutOfMemory& e) {
      failures += "; " + a->name() + ": " + e.what();
    }
    if (log_select())
      std::cerr << "ember select: conv2d " << conv_key_string(key) << ": " << a->name()
                << " failed, trying the next algorithm\n";
  }
  EMBER_THROW(ops::ConvNotSupported, "conv2d: every algorithm failed for ", conv_key_string(key),
              failures);
}

}  // namespace

std::string run_conv_forward(const ConvKey& key, const void* x, const void* w, const void* bias,
                             void* y) {
  return run_ranked(key, ConvDirection::forward, [&](const ConvAlgo& a, ConvWorkspace ws) {
    a.run_forward(key, x, w, bias, y, ws);
  });
}

std::string run_conv_backward_data(const ConvKey& key, const void* dy, const void* w, void* dx) {
  return run_ranked(key, ConvDirection::backward_data, [&](const ConvAlgo& a, ConvWorkspace ws) {
    a.run_backward_data(key, dy, w, dx, ws);
  });
}

std::string run_conv_backward_filter(const ConvKey& key, const void* dy, const void* x, void* dw) {
  return run_ranked(key, ConvDirection::backward_filter, [&](const ConvAlgo& a, ConvWorkspace ws) {
    a.run_backward_filter(key, dy, x, dw, ws);
  });
}

}  // namespace ember::ops
