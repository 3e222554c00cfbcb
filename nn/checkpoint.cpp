#include "nn/checkpoint.h"

#include "nn/serialize.h"
#include "runtime/rng.h"

namespace ember::nn {

namespace {
const char* kFormat = "ember-checkpoint";

NamedTensors with_prefix(const NamedTensors& in, const std::string& prefix) {
  NamedTensors out;
  for (const auto& [n, t] : in) out.emplace_back(prefix + n, t.to(kCPU));
  return out;
}
}  // namespace

void save_checkpoint(const std::string& path, const std::string& model_name, Module& model,
                     Optimizer& optimizer, int64_t epoch,
                     const std::map<std::string, std::string>& extra, const GradScaler* scaler) {
  NamedTensors all = with_prefix(model.state_dict(), "model.");
  NamedTensors opt = with_prefix(optimizer.state_dict(), "optim.");
  all.insert(all.end(), opt.begin(), opt.end());
  if (scaler != nullptr) {
    NamedTensors sc = with_prefix(scaler->state_dict(), "scaler.");
    all.insert(all.end(), sc.begin(), sc.end());
  }
  Generator& g = default_generator();
  all.emplace_back("rng.default",
                   from_vector<int64_t>({static_cast<int64_t>(g.seed()), static_cast<int64_t>(g.offset())}));
  Metadata meta(extra.begin(), extra.end());
  meta["format"] = kFormat;
  meta["model"] = model_name;
  meta["optimizer"] = optimizer.name();
  meta["epoch"] = std::to_string(epoch);
  save_safetensors(path, all, meta);
}

CheckpointInfo load_checkpoint(const std::string& path, const std::string& model_name,
                               Module& model, Optimizer& optimizer, GradScaler* scaler) {
  SafetensorsFile f = load_safetensors(path);
  auto meta = [&](const char* key) {
    auto it = f.metadata.find(key);
    if (it == f.metadata.end())
      EMBER_THROW(FormatError, path, ": not an Ember checkpoint (no '", key, "' in its metadata)");
    return it->second;
  };
  EMBER_CHECK_T(FormatError, meta("format") == kFormat, path, ": not an Ember checkpoint (format '",
                meta("format"), "')");
  EMBER_CHECK_VALUE(meta("model") == model_name, path, ": a checkpoint of ", meta("model"),
                    ", but the model is ", model_name);
  EMBER_CHECK_VALUE(meta("optimizer") == optimizer.name(), path, ": saved with optimizer ",
                    meta("optimizer"), ", but training uses ", optimizer.name());
  CheckpointInfo info;
  const std::string& e = meta("epoch");
  EMBER_CHECK_T(FormatError, !e.empty() && e.find_first_not_of("0123456789") == std::string::npos &&
                                 e.size() < 10,
                path, ": bad epoch '", e, "' in the metadata");
  info.epoch = std::stoll(e);
  info.metadata = f.metadata;

  NamedTensors model_state, opt_state, scaler_state;
  Tensor rng;
  for (const auto& [n, t] : f.tensors) {
    if (n.rfind("model.", 0) == 0)
      model_state.emplace_back(n.substr(6), t);
    else if (n.rfind("optim.", 0) == 0)
      opt_state.emplace_back(n.substr(6), t);
    else if (n.rfind("scaler.", 0) == 0)
      scaler_state.emplace_back(n.substr(7), t);
    else if (n == "rng.default")
      rng = t;
    else
      EMBER_THROW(FormatError, path, ": unexpected tensor '", n, "' in a checkpoint");
  }
  EMBER_CHECK_T(FormatError, rng.defined() && rng.dtype() == kInt64 && rng.numel() == 2, path,
                ": missing or malformed 'rng.default'");
  const bool want_scaler = scaler != nullptr && scaler->is_enabled();
  EMBER_CHECK_VALUE(!want_scaler || !scaler_state.empty(), path,
                    ": no loss-scaler state in this checkpoint (saved without mixed precision), "
                    "but training uses a GradScaler");
  if (want_scaler) GradScaler().load_state_dict(scaler_state);  // checked before anything changes
  // Each load validates before it copies; if the optimiser's state is refused after the model
  // loaded, the model's previous values are put back, so a failed resume changes nothing.
  NamedTensors backup;
  for (const auto& [n, t] : model.state_dict()) backup.emplace_back(n, t.clone());
  model.load_state_dict(model_state, /*strict=*/true);
  try {
    optimizer.load_state_dict(opt_state);
  } catch (...) {
    model.load_state_dict(backup);
    throw;
  }
  if (want_scaler) scaler->load_state_dict(scaler_state);
  std::vector<int64_t> r = rng.to_vector<int64_t>();
  default_generator().set_state(static_cast<uint64_t>(r[0]), static_cast<uint64_t>(r[1]));
  return info;
}

}  // namespace ember::nn
