// The cpu's entries for the FFT convolution: it runs on the GPU backends only (kernels/cuda/
// conv2d_fft.cu), so the cpu table says so and its run entries throw if called anyway.
#include "kernels/kernel_table.h"
#include "runtime/error.h"

namespace ember::kernels::cpu {

namespace {
constexpr const char* kGpuOnly = "unsupported: runs on the GPU backends (cuda, emu)";
}  // namespace

bool conv2d_fft_supports(DType, const ConvShape&, ConvDirection, const char** why) {
  if (why) *why = kGpuOnly;
  return false;
}

ConvFftPlan conv2d_fft_plan(DType, const ConvShape&, ConvDirection) {
  return {};
}

size_t conv2d_fft_workspace_bytes(DType, const ConvShape&, ConvDirection) {
  return 0;
}

void conv2d_fwd_fft(DType, const ConvShape&, const void*, const void*, const void*, void*, void*,
                    size_t, Stream) {
  EMBER_THROW(ValueError, "conv2d_fwd_fft: ", kGpuOnly);
}

void conv2d_bwd_data_fft(DType, const ConvShape&, const void*, const void*, void*, void*, size_t,
                         Stream) {
  EMBER_THROW(ValueError, "conv2d_bwd_data_fft: ", kGpuOnly);
}

void conv2d_fft_tiles(DType, int, int64_t, bool, const void*, void*, Stream) {
  EMBER_THROW(ValueError, "conv2d_fft_tiles: ", kGpuOnly);
}

}  // namespace ember::kernels::cpu
