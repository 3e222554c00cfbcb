// The convolution algorithm registry: the policies' settings, the per-key ranking cache (the
// ranking itself in ops/conv2d_ranking.cpp), the benchmark's measurements (timing in
// ops/conv2d_benchmark.cpp, the file in ops/conv2d_cache.cpp) and the run-with-fallback loop (the
// built-in algorithms are in ops/conv2d_algos.cpp).
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <unordered_map>

#include "ops/conv2d_algo.h"
#include "ops/conv2d_benchmark.h"
#include "ops/conv2d_cudnn.h"
#include "ops/conv2d_ranking.h"
#include "ops/dispatch.h"
#include "runtime/tensor.h"
#include "runtime/trace.h"

namespace ember::ops {

using AlgoPtr = ConvAlgoPtr;

const char* conv_backend_name(ConvBackend b) {
  const char* names[] = {"cpu", "ember-cuda", "cudnn", "cudnn-v7"};
  return names[static_cast<int>(b)];
}
const char* conv_policy_name(ConvPolicy p) {
  const char* names[] = {"heuristic", "deterministic", "forced", "benchmark"};
  return names[static_cast<int>(p)];
}

ConvPolicy parse_conv_policy(const std::string& name, const std::string& what) {
  for (ConvPolicy p : {ConvPolicy::heuristic, ConvPolicy::benchmark, ConvPolicy::deterministic})
    if (name == conv_policy_name(p)) return p;
  EMBER_THROW(ValueError, what, ": unknown policy '", name,
              "'; expected heuristic, benchmark or deterministic");
}

bool operator==(const ConvKey& a, const ConvKey& b) {
  return std::memcmp(&a, &b, sizeof(ConvKey)) == 0;
}

size_t ConvKeyHash::operator()(const ConvKey& k) const {
  // FNV-1a's steps over the key's bytes (Note [ConvKey bytes]) eight at a time, then a
  // finaliser mixing the high bits down (one step per byte took 0.15 us, 4% of a small
  // convolution's call).
  static_assert(sizeof(ConvKey) % sizeof(uint64_t) == 0);
  const auto* p = reinterpret_cast<const unsigned char*>(&k);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof(ConvKey); i += sizeof(uint64_t)) {
    uint64_t word;
    std::memcpy(&word, p + i, sizeof word);
    h = (h ^ word) * 1099511628211ull;
  }
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return static_cast<size_t>(h ^ (h >> 32));
}

std::string conv_key_string(const ConvKey& k) {
  const kernels::ConvShape& s = k.shape;
  std::ostringstream os;
  os << conv_direction_name(k.direction) << ' ' << dtype_name(k.dtype) << ' ' << k.device() << " N"
     << s.n << " C" << s.c << " H" << s.h << " W" << s.w << " K" << s.k << " R" << s.r << " S"
     << s.s << " stride " << s.stride_h << 'x' << s.stride_w << " pad " << s.pad_h << 'x' << s.pad_w
     << " dil " << s.dil_h << 'x' << s.dil_w << " groups " << s.groups
     << (k.deterministic ? " deterministic" : "");
  return os.str();
}

namespace {

using Ranking = ConvRanking;  // ops/conv2d_ranking.h

// --- Registry state ----------------------------------------------------------------------------

struct Registry {
  std::mutex mu;
  std::vector<AlgoPtr> algos = builtin_conv_algos();
  std::string forced_api;
  // Set through the API; unset, EMBER_CONV_POLICY and EMBER_CONV_WORKSPACE_LIMIT decide.
  std::optional<bool> deterministic_api, benchmark_api;
  std::optional<size_t> limit_api;
  // Shared, so that a call holds its ranking without copying it, even if the cache is cleared.
  std::unordered_map<ConvKey, std::shared_ptr<const Ranking>, ConvKeyHash> cache;
  uint64_t version = 0;       // moved by every change to `cache` (ConvChoice, ops/conv2d_algo.h)
  std::vector<ConvKey> seen;  // the keys of `cache`, in the order first seen
  std::unordered_map<ConvKey, ConvBenchEntry, ConvKeyHash> bench;
  ConvBenchmarkStats stats;
  // EMBER_CONV_CACHE: the file loaded (once per path, until the cache is cleared), whether it may
  // be written, and the files already complained about on stderr.
  bool env_cache_loaded = false;
  std::string env_cache_path;
  bool env_cache_writable = false;
  std::set<std::string> warned;
};

Registry& registry() {
  static Registry r;
  return r;
}

// Every ranking dropped: the next run of each key ranks it again, and the ConvChoices held by
// prepared convolutions are no longer current.
void clear_rankings_locked(Registry& r) {
  r.cache.clear();
  ++r.version;
}

std::vector<std::string> names_of(const std::vector<AlgoPtr>& algos) {
  std::vector<std::string> names;
  for (const AlgoPtr& a : algos) names.push_back(a->name());
  return names;
}

std::string env_string(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string forced_locked(Registry& r) {
  return r.forced_api.empty() ? env_string("EMBER_CONV_ALGO") : r.forced_api;
}

// The forced name for `key`: forcing the half fallback forces half keys only, so that its own
// float32 runs are ranked as usual (Note [Half convolutions] in ops/conv2d_half.cpp).
std::string forced_for_locked(Registry& r, const ConvKey& key) {
  std::string forced = forced_locked(r);
  if (forced == kHalfFallbackAlgo && !is_half(key.dtype)) forced.clear();
  return forced;
}

// EMBER_CONV_POLICY, read on every use as EMBER_CONV_ALGO is.
std::optional<ConvPolicy> env_policy() {
  const std::string v = env_string("EMBER_CONV_POLICY");
  if (v.empty()) return std::nullopt;
  return parse_conv_policy(v, "EMBER_CONV_POLICY");
}

bool benchmark_locked(Registry& r) {
  if (r.benchmark_api) return *r.benchmark_api;
  return env_policy() == ConvPolicy::benchmark;
}

// The benchmark policy for `key`: on, or the convolution's backend preference is `benchmark` and
// the key is on cuda (ops/conv2d_cudnn.h).
bool benchmark_for_locked(Registry& r, const ConvKey& key) {
  return benchmark_locked(r) ||
         (key.device().is_cuda() && conv_backend_preference() == BackendPreference::benchmark);
}

bool deterministic_locked(Registry& r) {
  if (r.deterministic_api) return *r.deterministic_api;
  return env_policy() == ConvPolicy::deterministic;
}

// EMBER_CONV_WORKSPACE_LIMIT: a byte count with an optional K, M or G suffix (binary units).
size_t limit_locked(Registry& r) {
  if (r.limit_api) return *r.limit_api;
  const std::string v = env_string("EMBER_CONV_WORKSPACE_LIMIT");
  if (v.empty()) return kConvDefaultWorkspaceLimit;
  uint64_t n = 0;
  const char* end = v.data() + v.size();
  auto [ptr, ec] = std::from_chars(v.data(), end, n);
  const std::string suffix(ptr, end);
  int shift = -1;
  if (suffix.empty() || suffix == "B") shift = 0;
  if (suffix == "K" || suffix == "KiB") shift = 10;
  if (suffix == "M" || suffix == "MiB") shift = 20;
  if (suffix == "G" || suffix == "GiB") shift = 30;
  EMBER_CHECK_VALUE(ec == std::errc() && ptr != v.data() && shift >= 0 && (n >> (63 - shift)) == 0,
                    "EMBER_CONV_WORKSPACE_LIMIT: invalid value '", v,
                    "': expected a byte count such as 268435456, 256M or 1G");
  return static_cast<size_t>(n << shift);
}

std::string fmt_ms(double ms) {
  std::ostringstream os;
  os.precision(3);
  os << ms << " ms";
  return os.str();
}

// --- The benchmark's measurements and EMBER_CONV_CACHE ------------------------------------------

// Adds parsed entries to the cache, dropping from each the algorithms that no longer support its
// key (an entry left with none is ignored). Returns the number taken.
size_t take_entries_locked(Registry& r, std::vector<ConvBenchEntry>& entries, size_t* ignored) {
  size_t taken = 0;
  for (ConvBenchEntry& e : entries) {
    std::vector<ConvMeasurement> still;
    for (const ConvMeasurement& m : e.timed)
      for (const AlgoPtr& a : conv_algos_for_key(r.algos, e.key)) {
        std::string why;
        if (a->name() == m.name && a->supports(e.key, &why)) still.push_back(m);
      }
    if (still.empty()) {
      ++*ignored;
      continue;
    }
    e.timed = std::move(still);
    r.bench[e.key] = std::move(e);
    ++taken;
  }
  r.stats.entries_loaded += static_cast<int64_t>(taken);
  clear_rankings_locked(r);  // rankings made before now may be superseded
  return taken;
}

void warn_once_locked(Registry& r, const std::string& path, const std::string& message) {
  if (!r.warned.insert(path).second) return;
  std::cerr << "ember: " << message << "\n";
}

// Loads EMBER_CONV_CACHE the first time the benchmark needs the cache (and again after
// clear_conv_algo_cache, or when the variable names another file). A missing file is an empty
// cache; a bad one is reported once on stderr and the run goes on with an empty cache.
void load_env_cache_locked(Registry& r) {
  const std::string path = env_string("EMBER_CONV_CACHE");
  if (path.empty() || (r.env_cache_loaded && r.env_cache_path == path)) return;
  r.env_cache_loaded = true;
  r.env_cache_path = path;
  r.env_cache_writable = true;
  if (!std::ifstream(path).good()) {
    if (log_select()) std::cerr << "ember select: EMBER_CONV_CACHE " << path << ": no file yet\n";
    return;
  }
  ConvCacheParse parsed;
  try {
    parse_conv_cache(read_conv_cache_file(path), path, names_of(r.algos), &parsed);
  } catch (const Error& e) {
    // A stale or foreign Ember cache is replaced by the next save; anything else is left alone.
    r.env_cache_writable = parsed.recognised;
    warn_once_locked(r, path,
                     std::string("EMBER_CONV_CACHE: ") + e.what() +
                         "; going on with an empty convolution cache (" +
                         (parsed.recognised ? "the file will be replaced when new measurements "
                                              "are written)"
                                            : "the file is left as it is and not written)"));
    return;
  }
  size_t ignored = parsed.ignored;
  const size_t taken = take_entries_locked(r, parsed.entries, &ignored);
  if (log_select())
    std::cerr << "ember select: EMBER_CONV_CACHE " << path << ": loaded " << taken
              << " measurement(s), ignored " << ignored << "\n";
}

std::vector<ConvBenchEntry> entries_locked(Registry& r) {
  std::vector<ConvBenchEntry> out;
  for (const auto& kv : r.bench) out.push_back(kv.second);
  // A stable file for the same measurements: entries in the order of their keys' text.
  std::sort(out.begin(), out.end(), [](const ConvBenchEntry& a, const ConvBenchEntry& b) {
    return conv_key_string(a.key) < conv_key_string(b.key);
  });
  return out;
}

// After new measurements: rewrites EMBER_CONV_CACHE when it is set and may be written.
void save_env_cache_locked(Registry& r) {
  if (!r.env_cache_loaded || !r.env_cache_writable || r.env_cache_path.empty()) return;
  try {
    write_conv_cache_file(r.env_cache_path, conv_cache_text(entries_locked(r), names_of(r.algos)));
  } catch (const Error& e) {
    r.env_cache_writable = false;
    warn_once_locked(r, r.env_cache_path,
                     std::string("EMBER_CONV_CACHE: ") + e.what() + "; not writing it again");
  }
}

void log_measurement(const ConvKey& key, const ConvBenchEntry& e, int runs) {
  std::ostringstream os;
  os << "ember select: conv2d " << conv_key_string(key) << ": benchmark, median of " << runs
     << " runs:";
  for (const ConvMeasurement& m : e.timed) os << ' ' << m.name << ' ' << fmt_ms(m.median_ms) << ',';
  for (const auto& s : e.skipped) os << ' ' << s.first << " skipped (" << s.second << "),";
  std::string line = os.str();
  if (line.back() == ',') line.pop_back();
  std::cerr << line << "\n";
}

// Times `key` with the registry unlocked (other threads keep selecting), then stores and logs the
// measurement and rewrites EMBER_CONV_CACHE. requires: `lock` holds r.mu; holds it again after.
const ConvBenchEntry& measure_locked(Registry& r, std::unique_lock<std::mutex>& lock,
                                     const ConvKey& key, int runs) {
  const std::vector<AlgoPtr> algos = conv_algos_for_key(r.algos, key);
  const size_t limit = limit_locked(r);
  lock.unlock();
  ConvBenchEntry entry = run_conv_benchmark(algos, key, limit, runs);
  lock.lock();
  ++r.stats.keys_timed;
  r.stats.candidates_timed += static_cast<int64_t>(entry.timed.size());
  for (const auto& s : entry.skipped)
    if (s.second.rfind("failed while timed", 0) == 0) ++r.stats.candidates_timed;
  if (log_select()) log_measurement(key, entry, runs);
  ConvBenchEntry& stored = r.bench[key] = std::move(entry);
  save_env_cache_locked(r);
  return stored;
}

}  // namespace

std::vector<std::string> conv_algo_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return names_of(r.algos);
}

ConvAlgoPtr find_conv_algo(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const AlgoPtr& a : r.algos)
    if (a->name() == name) return a;
  return nullptr;
}

namespace {
// The algorithm set changed: rankings and measurements were made for another one.
void algos_changed_locked(Registry& r) {
  clear_rankings_locked(r);
  r.seen.clear();
  r.bench.clear();
  r.env_cache_loaded = false;
}
}  // namespace

void register_conv_algo(ConvAlgoPtr algo) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  EMBER_CHECK_VALUE(algo && !algo->name().empty(),
                    "register_conv_algo: expected an algorithm with a name");
  for (const AlgoPtr& a : r.algos)
    EMBER_CHECK_VALUE(a->name() != algo->name(), "register_conv_algo: '", algo->name(),
                      "' is already registered");
  r.algos.push_back(std::move(algo));
  algos_changed_locked(r);
}

bool unregister_conv_algo(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = std::find_if(r.algos.begin(), r.algos.end(),
                         [&](const AlgoPtr& a) { return a->name() == name; });
  if (it == r.algos.end()) return false;
  r.algos.erase(it);
  algos_changed_locked(r);
  return true;
}

void set_conv_algo(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  EMBER_CHECK_VALUE(name.empty() || conv_algo_known(r.algos, name),
                    "set_conv_algo: unknown convolution algorithm '", name,
                    "'; valid names: ", conv_algo_names_list(r.algos),
                    ", and cudnn:eng<N> or cudnn:eng<N>{knobs} for one of cuDNN's engine configs, "
                    "cudnn_v7:<algorithm> for one of its classic algorithms");
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
  r.deterministic_api = on;
}

bool conv_deterministic() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return deterministic_locked(r);
}

void set_conv_benchmark(bool on) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.benchmark_api = on;
}

bool conv_benchmark() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return benchmark_locked(r);
}

void set_conv_policy(ConvPolicy policy) {
  EMBER_CHECK_VALUE(policy != ConvPolicy::forced,
                    "set_conv_policy: force an algorithm with set_conv_algo(name) instead");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.benchmark_api = policy == ConvPolicy::benchmark;
  r.deterministic_api = policy == ConvPolicy::deterministic;
}

ConvPolicy conv_policy() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!forced_locked(r).empty()) return ConvPolicy::forced;
  if (benchmark_locked(r)) return ConvPolicy::benchmark;
  return deterministic_locked(r) ? ConvPolicy::deterministic : ConvPolicy::heuristic;
}

void reset_conv_settings() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.benchmark_api.reset();
  r.deterministic_api.reset();
  r.limit_api.reset();
  clear_rankings_locked(r);
}

void set_conv_workspace_limit(size_t bytes) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.limit_api = bytes;
  clear_rankings_locked(r);
}

size_t conv_workspace_limit() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return limit_locked(r);
}

void clear_conv_algo_cache() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  clear_rankings_locked(r);
  r.seen.clear();
  r.bench.clear();
  r.env_cache_loaded = false;
}

ConvBenchmarkStats conv_benchmark_stats() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.stats;
}

std::vector<ConvKey> conv_keys_seen() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.seen;
}

size_t save_conv_cache(const std::string& path) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const std::vector<ConvBenchEntry> entries = entries_locked(r);
  write_conv_cache_file(path, conv_cache_text(entries, names_of(r.algos)));
  return entries.size();
}

size_t load_conv_cache(const std::string& path) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  ConvCacheParse parsed;
  parse_conv_cache(read_conv_cache_file(path), path, names_of(r.algos), &parsed);
  size_t ignored = parsed.ignored;
  const size_t taken = take_entries_locked(r, parsed.entries, &ignored);
  if (log_select())
    std::cerr << "ember select: conv cache " << path << ": loaded " << taken
              << " measurement(s), ignored " << ignored << "\n";
  return taken;
}

ConvSelection explain_conv_algos(const ConvKey& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const std::string forced = forced_for_locked(r, key);
  const bool benchmark = benchmark_for_locked(r, key);
  if (forced.empty() && benchmark) {
    load_env_cache_locked(r);
    auto it = r.bench.find(key);
    if (it != r.bench.end()) {
      ConvSelection sel =
          explain_measured(conv_algos_for_key(r.algos, key), key, it->second, limit_locked(r),
                           "cached (" + it->second.source + ")", nullptr);
      if (!sel.chosen.empty()) return sel;
    }
  }
  return rank_conv_algos(r.algos, forced, benchmark, limit_locked(r), key, nullptr);
}

ConvSelection benchmark_conv_algos(const ConvKey& key, int runs) {
  EMBER_CHECK_VALUE(runs >= kConvBenchmarkRuns, "benchmark_conv_algos: expected at least ",
                    kConvBenchmarkRuns, " timed runs, got ", runs);
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mu);
  load_env_cache_locked(r);  // so that rewriting EMBER_CONV_CACHE keeps what it held
  const ConvBenchEntry& entry = measure_locked(r, lock, key, runs);
  r.cache.erase(key);  // the next run ranks from this measurement
  ++r.version;
  return explain_measured(conv_algos_for_key(r.algos, key), key, entry, limit_locked(r),
                          "timed now", nullptr);
}

namespace {

// The ranking for `key`, from the cache or made now (and logged under EMBER_LOG=select). Under
// the benchmark policy a key without a usable measurement is timed first. `version`, where given,
// receives the registry's version with the ranking in the cache.
std::shared_ptr<const Ranking> ranking_for(const ConvKey& key, uint64_t* version = nullptr) {
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mu);
  const std::string forced = forced_for_locked(r, key);
  const bool benchmark = benchmark_for_locked(r, key) && forced.empty();
  auto it = r.cache.find(key);
  if (it != r.cache.end() && it->second->forced == forced && it->second->benchmark == benchmark) {
    if (version != nullptr) *version = r.version;
    return it->second;
  }
  if (std::find(r.seen.begin(), r.seen.end(), key) == r.seen.end()) r.seen.push_back(key);
  Ranking ranking;
  ConvSelection sel;
  if (!benchmark) {
    sel = rank_conv_algos(r.algos, forced, false, limit_locked(r), key, &ranking);
  } else {
    load_env_cache_locked(r);
    auto b = r.bench.find(key);
    if (b != r.bench.end())
      sel = explain_measured(conv_algos_for_key(r.algos, key), key, b->second, limit_locked(r),
                             "cached (" + b->second.source + ")", &ranking.order);
    if (!sel.chosen.empty()) {
      ++r.stats.cache_hits;
    } else {
      const ConvBenchEntry& entry = measure_locked(r, lock, key, kConvBenchmarkRuns);
      ranking = Ranking{};
      sel = explain_measured(conv_algos_for_key(r.algos, key), key, entry, limit_locked(r),
                             "timed now", &ranking.order);
    }
    ranking.benchmark = true;
    ranking.error = sel.chosen.empty() ? sel.reason : "";
  }
  if (log_select()) {
    const std::string plan = ranking.order.empty() ? "" : ranking.order.front()->plan(key);
    std::cerr << "ember select: conv2d " << conv_key_string(key) << " -> "
              << (sel.chosen.empty() ? "none" : sel.chosen) << " (" << sel.reason << ")"
              << (plan.empty() ? "" : ": " + plan) << "\n";
  }
  auto shared = std::make_shared<const Ranking>(std::move(ranking));
  r.cache[key] = shared;
  ++r.version;
  if (version != nullptr) *version = r.version;
  return shared;
}

// Runs `run(algo, workspace)` with each algorithm of `ranking` in turn until one succeeds.
template <typename Run>
std::string run_in_order(const ConvKey& key, const Ranking& ranking, Run&& run) {
  if (ranking.order.empty()) {
    if (ranking.forced_error)
      EMBER_THROW(ValueError, "conv2d: ", conv_key_string(key), ": ", ranking.error);
    EMBER_THROW(ops::ConvNotSupported, "conv2d: ", conv_key_string(key), ": ", ranking.error);
  }
  std::string failures;
  for (const AlgoPtr& a : ranking.order) {
    std::string failure;
    try {
      const size_t bytes = a->workspace_bytes(key);
      const DataPtr ws = workspace(key.device(), bytes);
      {
        // The algorithm as one event around its kernels' (Note [Op trace]).
        const bool tracing = trace::enabled();
        trace::Scope traced("conv2d", tracing ? "conv2d " + a->name() : std::string(),
                            key.device(), tracing ? conv_key_string(key) : std::string());
        run(*a, ConvWorkspace{ws.get(), bytes});
      }
      return a->name();
    } catch (const ConvNotSupported& e) {
      failure = e.what();
    } catch (const OutOfMemory& e) {
      failure = e.what();
    }
    failures += "; " + a->name() + ": " + failure;
    if (log_select())
      std::cerr << "ember select: conv2d " << conv_key_string(key) << ": " << a->name()
                << " failed (" << failure << "), trying the next algorithm\n";
  }
  EMBER_THROW(ops::ConvNotSupported, "conv2d: every algorithm failed for ", conv_key_string(key),
              failures);
}

void check_direction(const ConvKey& key, ConvDirection direction) {
  EMBER_CHECK_VALUE(key.direction == direction, "conv2d: a ", conv_direction_name(key.direction),
                    " key given to the ", conv_direction_name(direction), " run");
}

template <typename Run>
std::string run_ranked(const ConvKey& key, ConvDirection direction, Run&& run) {
  check_direction(key, direction);
  return run_in_order(key, *ranking_for(key), run);
}

// The forward run: clamped by the algorithm where it can, else added and clamped after it.
auto forward_run(const ConvKey& key, const void* x, const void* w, const void* bias, void* y,
                 const ConvClamp* clamp) {
  return [=, &key](const ConvAlgo& a, ConvWorkspace ws) {
    if (clamp != nullptr && a.run_forward_clamped(key, x, w, bias, y, ws, *clamp)) return;
    a.run_forward(key, x, w, bias, y, ws);
    if (clamp == nullptr) return;
    const Device dev = key.device();
    const int64_t n = key.shape.y_numel();
    if (clamp->residual != nullptr)
      kernels_for(dev).binary_contiguous(kernels::BinaryOp::add, key.dtype, n, y, y,
                                         clamp->residual, stream_of(dev));
    if (!clamp->bounded()) return;
    const kernels::UnaryParams p{clamp->lo, clamp->hi};
    kernels_for(dev).unary_contiguous(kernels::UnaryOp::clamp, key.dtype, p, n, y, y,
                                      stream_of(dev));
  };
}

}  // namespace

std::string run_conv_forward(const ConvKey& key, const void* x, const void* w, const void* bias,
                             void* y, const ConvClamp* clamp) {
  return run_ranked(key, ConvDirection::forward, forward_run(key, x, w, bias, y, clamp));
}

ConvChoice conv_forward_choice(const ConvKey& key) {
  check_direction(key, ConvDirection::forward);
  ConvChoice c;
  c.ranking = ranking_for(key, &c.version);
  return c;
}

bool conv_choice_current(const ConvChoice& c, const ConvKey& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (c.version != r.version || deterministic_locked(r) != (key.deterministic != 0)) return false;
  const std::string forced = forced_for_locked(r, key);
  return c.ranking->forced == forced &&
         c.ranking->benchmark == (benchmark_for_locked(r, key) && forced.empty());
}

std::string run_conv_forward_chosen(const ConvChoice& c, const ConvKey& key, const void* x,
                                    const void* w, const void* bias, void* y,
                                    const ConvClamp* clamp) {
  return run_in_order(key, *c.ranking, forward_run(key, x, w, bias, y, clamp));
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
