// cuDNN's plumbing without a GPU (ops/cudnn/descriptors.h): its output sizes against Ember's on
// random geometries, the 2^31-element refusal, the status check's message, and the handle's error
// where there is no GPU. Built only with cuDNN.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "ember/build_config.h"

#if EMBER_HAVE_CUDNN

#include "ops/conv2d.h"
#include "ops/cudnn/descriptors.h"
#include "ops/op_test_util.h"
#include "runtime/gpu.h"

namespace ember::test {

TEST_CASE("cudnn: output sizes equal Ember's over random strides, paddings, dilations, groups") {
  std::mt19937 g(fresh_seed());
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); };
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    const int groups = pick(1, 4);
    const int64_t n = pick(1, 4), c = groups * pick(1, 4), k = groups * pick(1, 4);
    const int64_t r = pick(1, 7), s = pick(1, 7), h = pick(1, 40), w = pick(1, 40);
    ops::Conv2dParams p;
    p.stride = {pick(1, 4), pick(1, 4)};
    p.padding = {pick(0, 4), pick(0, 4)};
    p.dilation = {pick(1, 3), pick(1, 3)};
    p.groups = groups;
    Shape y;
    try {
      y = ops::conv2d_output_shape({n, c, h, w}, {k, c / groups, r, s}, p);
    } catch (const ShapeError&) {
      continue;  // a filter larger than the padded input: no output to compare
    }
    const ops::ConvKey key = ops::conv2d_key(ops::ConvDirection::forward, {n, c, h, w},
                                             {k, c / groups, r, s}, kFloat32, kCPU, p);
    CAPTURE(ops::conv_key_string(key));
    const auto dims = ops::cudnn::output_dims(key.shape, kFloat32);
    CHECK(Shape{dims[0], dims[1], dims[2], dims[3]} == y);
    ++checked;
  }
  CHECK(checked > 1000);
}

TEST_CASE("cudnn: tensors of 2^31 elements or more are refused with the reason") {
  ops::Conv2dParams p;
  p.padding = {1, 1};
  ops::ConvKey key =
      ops::conv2d_key(ops::ConvDirection::forward, {1, 8, 8, 8}, {8, 8, 3, 3}, kFloat32, kCPU, p);
  CHECK(ops::cudnn::conv_refusal(key.shape) == nullptr);
  key = ops::conv2d_key(ops::ConvDirection::forward, {2048, 64, 128, 128}, {8, 64, 3, 3}, kFloat32,
                        kCPU, p);  // x: 2^31 elements
  const char* why = ops::cudnn::conv_refusal(key.shape);
  REQUIRE(why != nullptr);
  CHECK(std::string(why) == "cuDNN's descriptors take tensors of fewer than 2^31 elements");
  CHECK_THROWS_AS(ops::cudnn::output_dims(key.shape, kFloat32), CudnnError);
  // One element fewer is described.
  CHECK_NOTHROW(ops::cudnn::TensorDescriptor().set_nchw(kFloat32, 1, 1, 2147483647, 1));
}

TEST_CASE("cudnn: a failed call names the call, the status, what it was for and cuDNN's reason") {
  ops::cudnn::TensorDescriptor x;
  try {
    x.set_nchw(kFloat32, 2, 0, 4, 4);  // a zero channel count
    FAIL("expected CudnnError");
  } catch (const CudnnError& e) {
    const std::string m = e.what();
    CAPTURE(m);
    CHECK(m.find("cudnnSetTensor4dDescriptor") != std::string::npos);
    CHECK(m.find("CUDNN_STATUS_BAD_PARAM") != std::string::npos);
    CHECK(m.find("describing a 2x0x4x4 tensor") != std::string::npos);
    CHECK(m.find("descriptors.cpp:") != std::string::npos);
  }
  CHECK_THROWS_AS(ops::cudnn::data_type(kInt32), DTypeError);
}

TEST_CASE("cudnn: without a usable GPU the handle is a DeviceError naming why, never a crash") {
  if (gpu::backend(DeviceType::CUDA).availability().usable) return;  // tested by the gpu check
  try {
    ops::cudnn::handle(0, nullptr);
    FAIL("expected DeviceError");
  } catch (const DeviceError& e) {
    CHECK(std::string(e.what()).rfind("cuDNN runs on cuda devices only: ", 0) == 0);
  }
}

}  // namespace ember::test

#endif  // EMBER_HAVE_CUDNN
