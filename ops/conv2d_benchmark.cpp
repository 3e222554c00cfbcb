// The benchmark policy's timing: every eligible candidate for a key run on scratch buffers of the
// key's shape on its device, a warm-up and then the median of several timed runs.
#include <algorithm>
#include <memory>
#include <sstream>

#include "ops/conv2d_benchmark.h"
#include "ops/dispatch.h"
#include "ops/timing.h"

namespace ember::ops {

namespace {

// The operands of one direction: in0 and in1 are read, out is written.
//   forward: x, w -> y;  backward_data: dy, w -> dx;  backward_filter: dy, x -> dw.
struct Scratch {
  Tensor in0, in1, out;
};

Scratch make_scratch(const ConvKey& k) {
  const kernels::ConvShape& s = k.shape;
  const Shape xs{s.n, s.c, s.h, s.w}, ws{s.k, s.cg(), s.r, s.s}, ys{s.n, s.k, s.oh, s.ow};
  const TensorOptions o{k.dtype, k.device()};
  Scratch b;
  switch (k.direction) {
    case ConvDirection::forward:
      b = {empty(xs, o), empty(ws, o), empty(ys, o)};
      break;
    case ConvDirection::backward_data:
      b = {empty(ys, o), empty(ws, o), empty(xs, o)};
      break;
    case ConvDirection::backward_filter:
      b = {empty(ys, o), empty(xs, o), empty(ws, o)};
      break;
  }
  // Constant inputs: the times do not depend on the values (no denormals at 0.5), and the user's
  // random stream is left alone.
  b.in0.fill_(0.5);
  b.in1.fill_(0.5);
  return b;
}

void run_once(const ConvAlgo& a, const ConvKey& k, const Scratch& b, ConvWorkspace ws) {
  switch (k.direction) {
    case ConvDirection::forward:
      a.run_forward(k, b.in0.data_ptr(), b.in1.data_ptr(), nullptr, b.out.data_ptr(), ws);
      break;
    case ConvDirection::backward_data:
      a.run_backward_data(k, b.in0.data_ptr(), b.in1.data_ptr(), b.out.data_ptr(), ws);
      break;
    case ConvDirection::backward_filter:
      a.run_backward_filter(k, b.in0.data_ptr(), b.in1.data_ptr(), b.out.data_ptr(), ws);
      break;
  }
}

// The median of `runs` timed runs after one warm-up, in milliseconds.
double time_one(const ConvAlgo& a, const ConvKey& k, const Scratch& b, int runs) {
  const size_t bytes = a.workspace_bytes(k);
  const DataPtr wst =
      workspace(k.device(), bytes);  // may throw OutOfMemory: the candidate is skipped
  const ConvWorkspace ws{wst.get(), bytes};
  return median_run_ms(k.device(), runs, [&] { run_once(a, k, b, ws); });
}

std::string fmt_ms(double ms) {
  std::ostringstream os;
  os.precision(3);
  os << ms << " ms";
  return os.str();
}

}  // namespace

ConvCandidate conv_candidate_of(const ConvAlgo& a, const ConvKey& key, std::string* why) {
  ConvCandidate c;
  c.name = a.name();
  c.backend = a.backend(key.device_type);
  c.deterministic = a.deterministic();
  try {
    c.supported = a.supports(key, why);
  } catch (const DeviceError& e) {  // the key's device is not usable here (no GPU, no driver)
    c.supported = false;
    *why = e.what();
  }
  if (c.supported) {
    c.workspace_bytes = a.workspace_bytes(key);
    c.cost = a.cost(key);
  }
  return c;
}

ConvSelection explain_measured(const std::vector<ConvAlgoPtr>& algos, const ConvKey& key,
                               const ConvBenchEntry& entry, size_t limit, const std::string& source,
                               std::vector<ConvAlgoPtr>* order) {
  ConvSelection sel;
  sel.policy = ConvPolicy::benchmark;
  sel.source = source;
  std::vector<std::pair<double, size_t>> eligible;  // (time, index in sel.candidates)
  std::vector<size_t> order_of;                     // index in algos per candidate
  for (size_t ai = 0; ai < algos.size(); ++ai) {
    const ConvAlgo& a = *algos[ai];
    std::string why;
    ConvCandidate c = conv_candidate_of(a, key, &why);
    const std::string exclusion = conv_benchmark_exclusion(a, key, limit);
    auto timed = std::find_if(entry.timed.begin(), entry.timed.end(),
                              [&](const ConvMeasurement& m) { return m.name == a.name(); });
    auto skipped = std::find_if(entry.skipped.begin(), entry.skipped.end(),
                                [&](const auto& s) { return s.first == a.name(); });
    if (timed != entry.timed.end()) c.time_ms = timed->median_ms;
    if (!exclusion.empty()) {
      c.reason = exclusion;
    } else if (timed != entry.timed.end()) {
      eligible.emplace_back(static_cast<double>(timed - entry.timed.begin()),
                            sel.candidates.size());
    } else if (skipped != entry.skipped.end()) {
      c.reason = skipped->second;
    } else {
      c.reason = "not measured (" + entry.source + ")";
    }
    sel.candidates.push_back(std::move(c));
    order_of.push_back(ai);
  }
  std::stable_sort(eligible.begin(), eligible.end());
  const std::string among = key.deterministic ? " among deterministic algorithms" : "";
  for (size_t r = 0; r < eligible.size(); ++r) {
    ConvCandidate& c = sel.candidates[eligible[r].second];
    c.rank = static_cast<int>(r);
    c.chosen = r == 0;
    c.reason = (r == 0 ? "fastest measured (" : "fallback " + std::to_string(r) + ": measured (") +
               fmt_ms(c.time_ms) + ")" + among;
    if (order) order->push_back(algos[order_of[eligible[r].second]]);
  }
  if (!eligible.empty()) {
    const ConvCandidate& c = sel.candidates[eligible[0].second];
    sel.chosen = c.name;
    sel.reason = "benchmark: " + c.reason + "; " + source;
  } else {
    std::string why = "no measured algorithm can run it";
    for (const ConvCandidate& c : sel.candidates) why += "; " + c.name + ": " + c.reason;
    sel.reason = why;
  }
  return sel;
}

std::string conv_benchmark_exclusion(const ConvAlgo& a, const ConvKey& key, size_t limit) {
  std::string why;
  if (!a.supports(key, &why)) return "not supported: " + why;
  if (key.deterministic && !a.deterministic()) return "not deterministic";
  const size_t bytes = a.workspace_bytes(key);
  if (bytes > limit)
    return "not timed: workspace " + format_bytes(bytes) + " over the benchmark's limit of " +
           format_bytes(limit);
  return {};
}

ConvBenchEntry run_conv_benchmark(const std::vector<ConvAlgoPtr>& algos, const ConvKey& key,
                                  size_t limit, int runs) {
  ConvBenchEntry entry;
  entry.key = key;
  entry.source = "timed in this process";
  std::unique_ptr<Scratch> scratch;
  for (const ConvAlgoPtr& a : algos) {
    const std::string why = conv_benchmark_exclusion(*a, key, limit);
    if (!why.empty()) {
      entry.skipped.emplace_back(a->name(), why);
      continue;
    }
    try {
      if (!scratch) scratch = std::make_unique<Scratch>(make_scratch(key));
      entry.timed.push_back({a->name(), time_one(*a, key, *scratch, runs)});
    } catch (const ConvNotSupported& e) {
      entry.skipped.emplace_back(a->name(), std::string("failed while timed: ") + e.what());
    } catch (const OutOfMemory& e) {
      entry.skipped.emplace_back(a->name(), std::string("failed while timed: ") + e.what());
    }
  }
  std::stable_sort(
      entry.timed.begin(), entry.timed.end(),
      [](const ConvMeasurement& a, const ConvMeasurement& b) { return a.median_ms < b.median_ms; });
  return entry;
}

}  // namespace ember::ops
