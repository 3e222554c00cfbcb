// Internal to runtime/: the raw byte copy between devices that the tensor factories and the copy
// engine (tensor_copy.cpp) share. Users copy tensors with Tensor::copy_ and Tensor::to.
#pragma once

#include <cstddef>

#include "runtime/device.h"

namespace ember {

// Copies `bytes` bytes from `src` on `src_dev` to `dst` on `dst_dev`: memcpy between host
// pointers, otherwise one GPU-facade memcpy on the GPU-like device involved.
// requires: not two different GPU device types (DeviceError; copy through the cpu).
void copy_bytes(void* dst, Device dst_dev, const void* src, Device src_dev, size_t bytes);

}  // namespace ember
