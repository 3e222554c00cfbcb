// The differentiable tensor API in one include: what users call. Each function runs the
// autograd-free op from ops/ and, when grad mode is on and an input requires grad, records how to
// differentiate it. The NN functions (conv2d, batch_norm, losses, ...) have headers of their own.
#pragma once

#include "autograd/autocast.h"
#include "autograd/copy.h"
#include "autograd/elementwise.h"
#include "autograd/index.h"
#include "autograd/inplace.h"
#include "autograd/leaf.h"
#include "autograd/math.h"
#include "autograd/matmul.h"
#include "autograd/reduce.h"
#include "autograd/shape.h"
#include "autograd/sort.h"
