// The cuDNN version rules (runtime/cudnn_versions.h) on made-up version sets, and what this
// machine's build and library say.
#include <doctest/doctest.h>

#include <string>

#include "ember/build_config.h"
#include "runtime/cudnn_versions.h"
#include "runtime/env.h"

namespace ember {
namespace {

// A cuDNN 9.19.0 build that loaded 9.19.0 built for CUDA 13.0, knowing GPUs up to compute 12.1.
CudnnLibs good() {
  CudnnLibs l;
  l.compiled = 91900, l.loaded = 91900, l.path = "/opt/cudnn/lib/libcudnn.so.9";
  l.cudart = 13000, l.max_device = 1210;
  l.sublibs = {{"graph", ""}, {"ops", ""}, {"cnn", ""}, {"adv", ""}};
  l.nvrtc = true;
  return l;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("cudnn versions: a matching library, driver and GPU are usable, with no warning") {
  const CudnnVerdict v = cudnn_verdict(good(), 13000, {{9, 0}, {8, 0}});
  CHECK(v.usable);
  CHECK(v.reason.empty());
  CHECK(v.warnings.empty());
  // A newer minor (or patch) of the same major serves an older build.
  CudnnLibs newer = good();
  newer.loaded = 92101;
  CHECK(cudnn_verdict(newer, 13000, {{9, 0}}).usable);
}

TEST_CASE("cudnn versions: another major, or an older minor, is named with both versions") {
  CudnnLibs old = good();
  old.loaded = 90300;
  CudnnVerdict v = cudnn_verdict(old, 13000, {{9, 0}});
  CHECK(!v.usable);
  CHECK(v.reason ==
        "found cuDNN 9.3.0 at /opt/cudnn/lib/libcudnn.so.9 but Ember was built with 9.19.0; put "
        "cuDNN 9.19 or a newer 9.x first on LD_LIBRARY_PATH");
  // One minor older is refused too; an older patch of the same minor is fine.
  old.loaded = 91800;
  CHECK(!cudnn_verdict(old, 13000, {{9, 0}}).usable);
  CudnnLibs patch = good();
  patch.compiled = 91902;
  CHECK(cudnn_verdict(patch, 13000, {{9, 0}}).usable);
  CudnnLibs next = good();
  next.loaded = 100000;
  v = cudnn_verdict(next, 13000, {{9, 0}});
  CHECK(!v.usable);
  CHECK(contains(v.reason, "found cuDNN 10.0.0"));
  CudnnLibs eight = good();
  eight.loaded = 80907, eight.path = "";
  v = cudnn_verdict(eight, 13000, {{9, 0}});
  CHECK(contains(v.reason, "found cuDNN 8.9.7 but Ember was built with 9.19.0"));
}

TEST_CASE("cudnn versions: a sub-library that fails its check, the driver, the GPU, NVRTC") {
  CudnnLibs l = good();
  l.sublibs[2].second = "CUDNN_STATUS_VERSION_MISMATCH";
  CudnnVerdict v = cudnn_verdict(l, 13000, {{9, 0}});
  CHECK(!v.usable);
  CHECK(contains(v.reason,
                 "cuDNN's cnn library failed its version check "
                 "(CUDNN_STATUS_VERSION_MISMATCH)"));
  // The driver must support the runtime cuDNN was built for.
  v = cudnn_verdict(good(), 12040, {{9, 0}});
  CHECK(!v.usable);
  CHECK(contains(v.reason, "built for CUDA 13.0 but the NVIDIA driver supports CUDA 12.4"));
  // A newer minor release of the same major one runs (minor-version compatibility), with a
  // warning: cuDNN 9.19 built for 13.1 on a driver for 13.0.
  l = good();
  l.cudart = 13010;
  v = cudnn_verdict(l, 13000, {{9, 0}});
  CHECK(v.usable);
  REQUIRE(v.warnings.size() == 1);
  CHECK(contains(v.warnings[0], "built for CUDA 13.1 but the NVIDIA driver supports CUDA 13.0"));
  CHECK(contains(v.warnings[0], "minor-version compatibility"));
  v = cudnn_verdict(good(), 0, {});
  CHECK(!v.usable);
  CHECK(v.reason == "no NVIDIA driver: cuDNN runs on cuda devices only");
  // A GPU newer than the library knows.
  v = cudnn_verdict(good(), 13000, {{9, 0}, {12, 5}});
  CHECK(!v.usable);
  CHECK(contains(v.reason,
                 "cuda:1 (compute 12.5) is newer than cuDNN 9.19.0 supports (compute "
                 "12.1 at most)"));
  // Without NVRTC: usable, with a warning.
  l = good();
  l.nvrtc = false;
  v = cudnn_verdict(l, 13000, {{9, 0}});
  CHECK(v.usable);
  REQUIRE(v.warnings.size() == 1);
  CHECK(contains(v.warnings[0], "libnvrtc not found"));
}

TEST_CASE("cudnn versions: a build without cuDNN, or with none loaded") {
  CHECK(cudnn_verdict(CudnnLibs{}, 13000, {}).reason ==
        "this build has no cuDNN (configured without it)");
  CudnnLibs l = good();
  l.loaded = 0;
  CHECK(cudnn_verdict(l, 13000, {}).reason == "cuDNN 9.19.0 was not loaded");
}

TEST_CASE("cudnn versions: this build's library, and the doctor's verdict") {
  const CudnnLibs l = loaded_cudnn_libs();
  const EnvReport r = collect_env_report();
  if (!EMBER_HAVE_CUDNN) {
    CHECK(l.compiled == 0);
    CHECK(!r.cudnn_usable);
    return;
  }
  CHECK(l.compiled == r.cudnn_header_version);
  CHECK(l.loaded == r.cudnn_loaded_version);
  CHECK(l.loaded / 10000 == l.compiled / 10000);
  CHECK(contains(l.path, "libcudnn"));
  CHECK(l.cudart >= 12000);
  CHECK(l.max_device >= 900);
  REQUIRE(l.sublibs.size() == 4);
  for (const auto& [name, status] : l.sublibs) {
    CAPTURE(name);
    CHECK(status.empty());
  }
  if (r.cuda_driver_version == 0) {
    CHECK(!r.cudnn_usable);
    CHECK(r.cudnn_reason == "no NVIDIA driver: cuDNN runs on cuda devices only");
  }
  CHECK(contains(env_report_text(r), "cuDNN usable"));
  CHECK(contains(env_report_json(r), "\"usable\""));
}

}  // namespace ember

namespace ember {
namespace {

TEST_CASE("cuBLAS: loaded on first use; the report names the version loaded") {
  // Asking for the report loads it (Note [cuBLAS loaded on first use] in runtime/cublas_api.h).
  const EnvReport r = collect_env_report();
  if (!EMBER_HAVE_CUBLAS) {
    CHECK(r.cublas_loaded_version == 0);
    return;
  }
  CAPTURE(r.cublas_error);
  CHECK(r.cublas_error.empty());
  CHECK(r.cublas_header_version > 0);
  CHECK(r.cublas_loaded_version / 10000 == r.cublas_header_version / 10000);
  CHECK(contains(env_report_text(r), "cuBLAS"));
  CHECK(contains(env_report_json(r), "\"error\": \"\""));
}

}  // namespace
}  // namespace ember
