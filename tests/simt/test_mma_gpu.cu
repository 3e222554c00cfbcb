// test_mma.cpp compiled by nvcc for the `gpu` executable: the same tables checked on cuda:0
// (Note [Tensor Core tests on hardware] in simt/kernel_buffer.h).
#include "simt/test_mma.cpp"
