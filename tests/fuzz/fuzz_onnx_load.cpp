// libFuzzer target: ONNX model bytes, as hostile as the fuzzer makes them, through the loader
// (protobuf parsing, the tensor data checks, graph checks, the support listing) and, for small
// models whose operators cannot be asked to allocate by their attributes alone, one run on
// zero inputs. Every failure must be an ember::Error; anything else (a crash, a sanitizer report,
// an uncaught exception, a leak, an allocation over -malloc_limit_mb) is a bug.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "onnx/model.h"
#include "runtime/error.h"

namespace {

// Operators whose output size comes from values in the model (a shape, repeats, scales, pads):
// a fuzzed model could ask them for any amount of memory, which is the model's right, not a bug.
const std::set<std::string> kSizedByValues = {"ConstantOfShape", "Expand", "Tile", "Resize",
                                              "Pad", "Reshape", "ConvTranspose", "Split"};

bool small_enough_to_run(const ember::onnx::Model& m) {
  for (const auto& in : m.inputs()) {
    if (!in.has_shape) return false;
    int64_t n = 1;
    for (int64_t d : in.shape) {
      if (d < 0 || d > 64) return false;
      n *= d;
    }
    if (n > 4096) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ember::onnx::LoadOptions opts;
    opts.optimize = false;  // folding runs operators: the run below does that, bounded
    const auto model = ember::onnx::load_from_memory(data, size, opts);
    (void)model.num_nodes();
    if (!small_enough_to_run(model)) return 0;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    for (const auto& op : kSizedByValues)
      if (bytes.find(op) != std::string::npos) return 0;
    std::vector<ember::Tensor> inputs;
    for (const auto& in : model.inputs())
      inputs.push_back(ember::zeros(in.shape, in.dtype.value_or(ember::kFloat32)));
    model.run(inputs);
  } catch (const ember::Error&) {
    // A typed error is the answer to a bad model.
  }
  return 0;
}
