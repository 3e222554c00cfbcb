// cuBLAS loaded on first use (runtime/cublas_api.h).
#include "runtime/cublas_api.h"

#include <dlfcn.h>

#include <type_traits>
#include <vector>

#include "runtime/error.h"

namespace ember {
namespace {

// The entry point names as cublas_v2.h spells them (cublasCreate is the macro for
// cublasCreate_v2): the macro expanded, then made a string.
#define EMBER_CUBLAS_NAME_(f) #f
#define EMBER_CUBLAS_NAME(f) EMBER_CUBLAS_NAME_(f)

struct Loaded {
  CublasApi api{};
  std::string error;  // empty when loaded
};

Loaded load() {
  Loaded l;
  std::vector<std::string> names = {"libcublas.so." + std::to_string(CUBLAS_VER_MAJOR)};
#ifdef EMBER_CUBLAS_CONFIGURED_PATH
  names.emplace_back(EMBER_CUBLAS_CONFIGURED_PATH);
#endif
  void* h = nullptr;
  std::string tried;
  for (const std::string& name : names) {
    h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      l.api.path = name;
      break;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + name + ": " + (why ? why : "not found");
  }
  if (h == nullptr) {
    l.error = "cuBLAS could not be loaded (" + tried + ")";
    return l;
  }
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (fn == nullptr && l.error.empty())
      l.error = l.api.path + " has no entry point " + name + " (a cuBLAS older than the headers "
                "Ember was built with, " + std::to_string(CUBLAS_VERSION) + "?)";
  };
  bind(l.api.create, EMBER_CUBLAS_NAME(cublasCreate));
  bind(l.api.set_stream, EMBER_CUBLAS_NAME(cublasSetStream));
  bind(l.api.set_math_mode, EMBER_CUBLAS_NAME(cublasSetMathMode));
  bind(l.api.sgemm_strided_batched, EMBER_CUBLAS_NAME(cublasSgemmStridedBatched));
  bind(l.api.dgemm_strided_batched, EMBER_CUBLAS_NAME(cublasDgemmStridedBatched));
  bind(l.api.gemm_strided_batched_ex, EMBER_CUBLAS_NAME(cublasGemmStridedBatchedEx));
  bind(l.api.get_property, EMBER_CUBLAS_NAME(cublasGetProperty));
  return l;
}

}  // namespace

const CublasApi& cublas_api() {
  static const Loaded* loaded = new Loaded(load());  // never unloaded: handles outlive statics
  EMBER_CHECK_T(CublasError, loaded->error.empty(), loaded->error);
  return loaded->api;
}

}  // namespace ember
