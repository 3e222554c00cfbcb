// `ember algos --cudnn-device FILE`: cuDNN's ranked engine configs for each convolution, on the
// GPU the file describes, with no GPU needed (ops/conv2d_cudnn.h).
#pragma once

#include <string>
#include <vector>

#include "ops/conv2d_algo.h"

namespace ember::cli {

struct CudnnRankingTotals {
  int rows = 0;                      // (layer, direction) pairs ranked
  std::vector<std::string> without;  // those with no config to try
};

// Prints the ranking of each direction of `fwd_key` (whose device is ignored: the description
// decides), the refused configs too when `show_dropped`.
void print_cudnn_ranking(const ops::ConvKey& fwd_key, const std::string& device_file,
                         bool show_dropped, const std::string& layer, CudnnRankingTotals* totals);

}  // namespace ember::cli
