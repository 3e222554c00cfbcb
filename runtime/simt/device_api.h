// Everything a kernel compiled by g++ sees in place of the CUDA headers: the built-ins, atomics,
// device math, vector and 16-bit float types, and the launch entry point. Included only through
// kernels/cuda/compat.h.
#pragma once

#include "runtime/simt/atomics.h"
#include "runtime/simt/builtins.h"
#include "runtime/simt/device_math.h"
#include "runtime/simt/half_types.h"
#include "runtime/simt/launch.h"
#include "runtime/simt/tensor_core.h"
#include "runtime/simt/vector_types.h"
#include "runtime/simt/wmma.h"
#include "runtime/simt/work_count.h"
