// `ember algos --cudnn-device FILE` (cli/algos_cudnn.h).
#include "cli/algos_cudnn.h"

#include <cstdio>
#include <map>

#include "ops/conv2d_cudnn.h"
#include "runtime/cudnn_versions.h"
#include "runtime/error.h"

namespace ember::cli {

void print_cudnn_ranking(const ops::ConvKey& fwd_key, const std::string& device_file,
                         bool show_dropped, const std::string& layer, CudnnRankingTotals* totals) {
  for (ops::ConvDirection dir : {ops::ConvDirection::forward, ops::ConvDirection::backward_data,
                                 ops::ConvDirection::backward_filter}) {
    ops::ConvKey key = fwd_key;
    key.device_type = DeviceType::CUDA;
    key.device_index = 0;
    key.direction = dir;
    const ops::CudnnRanking r = ops::cudnn_ranking(key, device_file);
    if (totals->rows == 0)
      std::printf("cuDNN %s's heuristics for %s (%s)\n",
                  library_version_string(loaded_cudnn_libs().loaded).c_str(), r.device_name.c_str(),
                  r.device_source.empty() ? "captured on the GPU" : r.device_source.c_str());
    int tried = 0, a = 0, fallback = 0;
    std::map<std::string, int> dropped;
    for (const ops::CudnnEngineRow& row : r.rows) {
      (row.list == "A" ? a : fallback)++;
      if (!row.refusal.empty())
        ++dropped[row.refusal];
      else if (row.workspace >= 0)
        ++tried;
    }
    std::printf("\n%s: %lld engines; mode A ranks %d configs, FALLBACK %d more; %d to try\n",
                ops::conv_direction_name(dir), static_cast<long long>(r.global_count), a, fallback,
                tried);
    for (const auto& [why, n] : dropped) std::printf("  dropped %d: %s\n", n, why.c_str());
    std::printf("  %-4s %-52s %-8s %10s  %s\n", "rank", "config", "list", "workspace", "notes");
    int rank = 0;
    for (const ops::CudnnEngineRow& row : r.rows) {
      const bool tries = row.refusal.empty() && row.workspace >= 0;
      if (!tries && !show_dropped && row.plan_error.empty()) continue;
      std::string note = row.notes;
      if (!row.refusal.empty()) note = "dropped" + (note.empty() ? "" : " (" + note + ")");
      if (!row.plan_error.empty()) note = "no plan: " + row.plan_error;
      std::printf(
          "  %-4s %-52s %-8s %10s  %s\n", tries ? std::to_string(++rank).c_str() : "-",
          row.name.c_str(), row.list.c_str(),
          row.workspace >= 0 ? format_bytes(static_cast<size_t>(row.workspace)).c_str() : "-",
          note.c_str());
    }
    ++totals->rows;
    if (tried == 0) totals->without.push_back(layer + " " + ops::conv_direction_name(dir));
  }
}

}  // namespace ember::cli
