// Ember's public C++ API in one include.
#pragma once

#include "ember/build_config.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/gpu.h"
#include "runtime/rng.h"
#include "runtime/tensor.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
