// Marks a function that CPU code and CUDA kernels both call: under nvcc it is compiled for the
// host and the device; under a host compiler (the CPU kernels, and the emu copy of
// kernels/cuda, whose compat.h defines __host__ and __device__ away) it is an inline function.
#pragma once

#if defined(__CUDACC__)
#define EMBER_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define EMBER_HOST_DEVICE inline
#endif
