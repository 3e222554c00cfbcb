// Training checkpoints: model, optimiser, random-number state and epoch in one safetensors file,
// so training resumes exactly where it stopped.
//
// Tensor names: "model.<state_dict key>", "optim.<optimizer state key>", "rng.default"
// (int64 [seed, offset] of the default generator), and for mixed-precision training
// "scaler.<GradScaler state key>" (nn/amp.h). Metadata: "format" = "ember-checkpoint",
// "model", "optimizer", "epoch" (epochs completed), plus any caller entries.
#pragma once

#include <map>
#include <string>

#include "nn/amp.h"
#include "nn/module.h"
#include "nn/optim.h"

namespace ember::nn {

struct CheckpointInfo {
  int64_t epoch = 0;
  std::map<std::string, std::string> metadata;
};

// Writes atomically (a failed save leaves an existing file untouched).
// `scaler`: the loss scaler's state too (nothing for a disabled one).
void save_checkpoint(const std::string& path, const std::string& model_name, Module& model,
                     Optimizer& optimizer, int64_t epoch,
                     const std::map<std::string, std::string>& extra = {},
                     const GradScaler* scaler = nullptr);

// requires: a checkpoint of the same model and optimiser type; a mismatch is a ValueError
// naming both (e.g. "a checkpoint of resnet20, but the model is lenet"), a bad file a
// FormatError, a missing one an IOError. Nothing is changed unless everything loads.
// `scaler` (enabled) requires the checkpoint's scaler state (ValueError without it); a scaler
// state that the caller does not ask for is left unread (resuming without mixed precision).
CheckpointInfo load_checkpoint(const std::string& path, const std::string& model_name,
                               Module& model, Optimizer& optimizer, GradScaler* scaler = nullptr);

}  // namespace ember::nn
