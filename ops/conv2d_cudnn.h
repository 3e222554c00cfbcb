// What cuDNN would choose for a convolution on a GPU described in JSON, with no GPU and no handle
// (docs/gpu_backend.md, "cuDNN's engines"), as plain data for `ember algos --cudnn-device` and the
// tests. The `cudnn` family that runs those choices is registered with the other algorithms
// (cudnn_conv_family() in ops/conv2d_algo.h; ops/conv2d_cudnn.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/conv2d_algo.h"

namespace ember::ops {

// One engine config in the order the heuristic policy tries them.
struct CudnnEngineRow {
  std::string name;        // "cudnn:eng70{2=2,18=0}"
  std::string list;        // "A" (cuDNN's heuristics, mode A) or "fallback"
  std::string notes;       // numerical and behaviour notes, "" when none
  std::string refusal;     // why the policy drops it for this key; "" when it is tried
  int64_t workspace = -1;  // bytes, from the plan made for the described GPU; -1 without a plan
  std::string plan_error;  // why cuDNN made no plan (tried configs only)
};

struct CudnnRanking {
  std::string device_name;    // "NVIDIA H200"
  std::string device_source;  // where the description's numbers come from ("" when captured)
  int64_t global_count = 0;   // engines cuDNN has for this operation graph
  std::vector<CudnnEngineRow> rows;
};

// cuDNN's ranked engine configs for `key` (its direction) on the GPU that `device_file`
// describes (the JSON of data/cudnn/h200.json). Throws IOError / FormatError for a bad file,
// CudnnError with cuDNN's reason, ConvNotSupported for a key cuDNN cannot describe, and Error in
// a build without cuDNN.
CudnnRanking cudnn_ranking(const ConvKey& key, const std::string& device_file);

}  // namespace ember::ops
