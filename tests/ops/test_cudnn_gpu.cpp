// cuDNN's handles and version verdict on a real GPU (ops/cudnn/descriptors.h,
// runtime/cudnn_versions.h): one handle per device and thread, bound to the caller's stream,
// pooled when a thread ends. Runs in the `gpu` executable, only where a GPU is usable.
#include <doctest/doctest.h>

#include <thread>

#include "ember/build_config.h"

#if EMBER_HAVE_CUDNN

#include <cuda_runtime_api.h>

#include "ops/cudnn/descriptors.h"
#include "runtime/env.h"
#include "runtime/error.h"

using namespace ember;

TEST_CASE("cudnn on cuda:0: one handle per thread, bound to the caller's stream, then pooled") {
  cudaStream_t s1 = nullptr, s2 = nullptr;
  REQUIRE(cudaStreamCreate(&s1) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&s2) == cudaSuccess);
  const cudnnHandle_t h = ops::cudnn::handle(0, s1);
  REQUIRE(h != nullptr);
  cudaStream_t bound = nullptr;
  REQUIRE(cudnnGetStream(h, &bound) == CUDNN_STATUS_SUCCESS);
  CHECK(bound == s1);
  CHECK(ops::cudnn::handle(0, s2) == h);  // the same thread's handle, now on s2
  REQUIRE(cudnnGetStream(h, &bound) == CUDNN_STATUS_SUCCESS);
  CHECK(bound == s2);
  cudnnHandle_t other = nullptr;
  std::thread([&] { other = ops::cudnn::handle(0, s1); }).join();
  CHECK(other != nullptr);
  CHECK(other != h);
  // That thread has ended: its handle serves the next thread.
  cudnnHandle_t reused = nullptr;
  std::thread([&] { reused = ops::cudnn::handle(0, s1); }).join();
  CHECK(reused == other);
  CHECK_THROWS_AS(ops::cudnn::handle(64, s1), DeviceError);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

TEST_CASE("cudnn on cuda:0: the doctor's verdict is usable, or says why") {
  const EnvReport r = collect_env_report();
  CAPTURE(r.cudnn_reason);
  CHECK(r.cudnn_usable);
  CHECK(r.cudnn_reason.empty());
}

#endif  // EMBER_HAVE_CUDNN
