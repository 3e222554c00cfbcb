// How a policy ranks the convolution algorithms for one key (ops/conv2d_ranking.h).
#include "ops/conv2d_ranking.h"

#include <algorithm>
#include <sstream>

#include "ops/conv2d_benchmark.h"
#include "ops/conv2d_cudnn.h"
#include "ops/dispatch.h"
#include "runtime/error.h"

namespace ember::ops {
namespace {

// Whether forcing `forced` forces `name`: the same name, or a member of the forced family
// ("cudnn" forces "cudnn:eng38{...}"), or a config of the forced engine ("cudnn:eng38" forces
// "cudnn:eng38{...}").
bool forced_matches(const std::string& name, const std::string& forced) {
  return name == forced || name.rfind(forced + ":", 0) == 0 || name.rfind(forced + "{", 0) == 0;
}

std::string fmt_cost(double c) {
  std::ostringstream os;
  os.precision(3);
  os << c;
  return os.str();
}

// Note [Winograd before cuDNN]: measured on an H200 (`ember algos` on ResNet-50's and VGG-16's
// layers, batch 8, cuDNN 9.19 in FMA math; docs/gpu_backend.md), Ember's Winograd beat cuDNN's
// fastest engine by 1.1-2.2x on every float32 3x3 stride-1 layer with 64 channels or more in and
// out, forward and backward-data; F(4x4) on output planes of 14 x 14 and more, F(2x2) on smaller
// ones (F(4x4) was 1.4-2.3x slower on 8 x 8 and 4 x 4 planes). Ranking that one first put the
// heuristic within 1.10x of the fastest on 54 of 69 ResNet-50 (layer, direction) pairs instead
// of 47, and on 26 of 27 VGG-16 ones instead of 10. With 3 input channels cuDNN stays first.
// The Winograd algorithm that goes before cuDNN's engines for `key`, or null.
const char* winograd_before_cudnn(const ConvKey& key) {
  const kernels::ConvShape& s = key.shape;
  if (key.device_type != DeviceType::CUDA || key.dtype != DType::f32 ||
      key.math != ConvMathMode::fp32 || key.direction == ConvDirection::backward_filter)
    return nullptr;
  if (s.r != 3 || s.s != 3 || s.stride_h != 1 || s.stride_w != 1 || s.dil_h != 1 || s.dil_w != 1 ||
      s.groups != 1 || s.c < 64 || s.k < 64)
    return nullptr;
  return s.oh * s.ow >= 14 * 14 ? "winograd_f4x4_3x3" : "winograd_f2x2_3x3";
}

}  // namespace

std::vector<ConvAlgoPtr> conv_algos_for_key(const std::vector<ConvAlgoPtr>& algos,
                                            const ConvKey& key) {
  std::vector<ConvAlgoPtr> out;
  for (const ConvAlgoPtr& a : algos) {
    std::string why;
    std::vector<ConvAlgoPtr> m =
        a->is_family() ? a->members(key, &why) : std::vector<ConvAlgoPtr>{};
    if (m.empty())
      out.push_back(a);
    else
      out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

bool conv_algo_known(const std::vector<ConvAlgoPtr>& algos, const std::string& name) {
  return std::any_of(algos.begin(), algos.end(), [&](const ConvAlgoPtr& a) {
    return a->name() == name || (a->is_family() && a->owns(name));
  });
}

std::string conv_algo_names_list(const std::vector<ConvAlgoPtr>& algos) {
  std::string s;
  for (const ConvAlgoPtr& a : algos) s += (s.empty() ? "" : ", ") + a->name();
  return s;
}

ConvSelection rank_conv_algos(const std::vector<ConvAlgoPtr>& registered, const std::string& forced,
                              bool benchmark, size_t limit, const ConvKey& key,
                              ConvRanking* ranking) {
  const std::vector<ConvAlgoPtr> algos = conv_algos_for_key(registered, key);
  ConvSelection sel;
  sel.policy = !forced.empty()     ? ConvPolicy::forced
               : benchmark         ? ConvPolicy::benchmark
               : key.deterministic ? ConvPolicy::deterministic
                                   : ConvPolicy::heuristic;
  std::vector<size_t> eligible;
  for (const ConvAlgoPtr& a : algos) {
    std::string why;
    ConvCandidate c = conv_candidate_of(*a, key, &why);
    const size_t i = sel.candidates.size();
    if (!c.supported) {
      c.reason = "not supported: " + why;
    } else if (sel.policy == ConvPolicy::forced) {
      if (!forced_matches(a->name(), forced)) {
        c.reason = "not tried: '" + forced + "' is forced";
      } else if (key.deterministic && !a->deterministic()) {
        c.reason = "forced, but not deterministic and the deterministic policy is on";
      } else {
        c.reason = "forced";
        eligible.push_back(i);
      }
    } else if (key.deterministic && !a->deterministic()) {
      c.reason = "not deterministic";
    } else if (c.workspace_bytes > limit) {
      c.reason = "its workspace (" + format_bytes(c.workspace_bytes) + ") is over the limit (" +
                 format_bytes(limit) + ", EMBER_CONV_WORKSPACE_LIMIT)";
    } else {
      eligible.push_back(i);
    }
    if (!c.supported && (forced_matches(a->name(), forced) || (a->is_family() && a->owns(forced))))
      c.reason = "forced, but " + c.reason;
    sel.candidates.push_back(std::move(c));
  }
  // A forced algorithm with no path for a half key runs on widened copies (Note [Half
  // convolutions] in ops/conv2d_half.cpp).
  if (sel.policy == ConvPolicy::forced && eligible.empty() && is_half(key.dtype) &&
      conv_algo_known(registered, forced))
    for (size_t i = 0; i < sel.candidates.size(); ++i)
      if (sel.candidates[i].name == kHalfFallbackAlgo && sel.candidates[i].supported) {
        sel.candidates[i].reason =
            "forced '" + forced + "' cannot run this half key: it runs on float32 copies";
        eligible.push_back(i);
      }
  // A library's algorithms first, in its own order (Note [Algorithm families]), then Ember's by
  // estimated cost; the other way round under prefer-ember (set_conv_backend_preference).
  // cuDNN's classic algorithms come last, for comparison. Where Ember's Winograd was measured
  // faster than every cuDNN engine, it goes before them (Note [Winograd before cuDNN]).
  const bool cudnn_first = conv_backend_preference() != BackendPreference::prefer_ember;
  const char* winograd = cudnn_first ? winograd_before_cudnn(key) : nullptr;
  auto tier = [&](size_t i) {
    const ConvBackend b = sel.candidates[i].backend;
    if (winograd != nullptr && sel.candidates[i].name == winograd) return 0;
    if (b == ConvBackend::cudnn_legacy) return 3;
    return (b == ConvBackend::cudnn) == cudnn_first ? 1 : 2;
  };
  std::stable_sort(eligible.begin(), eligible.end(), [&](size_t a, size_t b) {
    if (tier(a) != tier(b)) return tier(a) < tier(b);
    return sel.candidates[a].cost < sel.candidates[b].cost;
  });
  for (size_t r = 0; r < eligible.size(); ++r) {
    ConvCandidate& c = sel.candidates[eligible[r]];
    c.rank = static_cast<int>(r);
    c.chosen = r == 0;
    const std::string note = algos[eligible[r]]->rank_note(key);
    if (sel.policy != ConvPolicy::forced)
      c.reason = (r == 0 ? std::string(note.empty() ? "lowest " : "first: ")
                         : "fallback " + std::to_string(r) + ": ") +
                 (note.empty() ? "estimated cost (" + fmt_cost(c.cost) + ")" : note) +
                 (key.deterministic ? " among deterministic algorithms" : "");
    if (ranking) ranking->order.push_back(algos[eligible[r]]);
  }
  const bool known = conv_algo_known(registered, forced);
  if (!eligible.empty()) {
    const ConvCandidate& c = sel.candidates[eligible[0]];
    sel.chosen = c.name;
    sel.reason = (benchmark && forced.empty()
                      ? std::string("benchmark: not timed yet (the first run of this key times "
                                    "the candidates); until then the heuristic's ")
                      : conv_policy_name(sel.policy) + std::string(": ")) +
                 c.reason;
  } else if (sel.policy == ConvPolicy::forced && !known) {
    sel.reason = "unknown algorithm '" + forced +
                 "' forced (valid: " + conv_algo_names_list(registered) + ")";
  } else {
    std::string why = sel.policy == ConvPolicy::forced
                          ? "forced algorithm '" + forced + "' cannot run it"
                          : "no registered algorithm supports it";
    for (const ConvCandidate& c : sel.candidates) why += "; " + c.name + ": " + c.reason;
    sel.reason = why;
  }
  if (ranking) {
    ranking->forced = forced;
    ranking->benchmark = benchmark;
    ranking->error = sel.chosen.empty() ? sel.reason : "";
    ranking->forced_error = sel.policy == ConvPolicy::forced;
  }
  return sel;
}

}  // namespace ember::ops
