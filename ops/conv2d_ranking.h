// How a policy ranks the convolution algorithms for one key (heuristic, deterministic, forced,
// and the benchmark's stand-in before a key is timed): the part of the registry
// (ops/conv2d_registry.cpp) that holds no state. For the registry's files only.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ops/conv2d_algo.h"

namespace ember::ops {

// The order a run tries the algorithms in for one key, and what it was ranked under.
struct ConvRanking {
  std::string forced;              // the forced name this ranking was made under
  bool benchmark = false;          // whether it was made under the benchmark policy
  std::vector<ConvAlgoPtr> order;  // what a run tries, in turn
  std::string error;               // why nothing can run (order empty)
  bool forced_error = false;       // the error is about the forced name
};

// The algorithms that stand for `algos` on `key`: each family replaced by its members where it has
// some (Note [Algorithm families]).
std::vector<ConvAlgoPtr> conv_algos_for_key(const std::vector<ConvAlgoPtr>& algos,
                                            const ConvKey& key);
// Whether `name` may be forced: a registered algorithm or a name of a registered family's form.
bool conv_algo_known(const std::vector<ConvAlgoPtr>& algos, const std::string& name);
// The names, comma-separated.
std::string conv_algo_names_list(const std::vector<ConvAlgoPtr>& algos);
// The verdict for `key` over `registered` under the heuristic, deterministic or forced policy (or
// the benchmark's stand-in before a key is timed), and the ranking a run follows (where given).
ConvSelection rank_conv_algos(const std::vector<ConvAlgoPtr>& registered, const std::string& forced,
                              bool benchmark, size_t limit, const ConvKey& key,
                              ConvRanking* ranking);

}  // namespace ember::ops
