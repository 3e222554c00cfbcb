// Fused optimiser updates on raw CPU buffers: one pass over each parameter, following PyTorch's
// update rules (torch.optim.SGD / Adam / AdamW, single-tensor implementation).
#pragma once

#include <cstdint>

namespace ember::kernels::cpu {

struct SgdParams {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // the momentum buffer is initialised to the gradient
};

// p -= lr * d, where d is the (weight-decayed, momentum-filtered) gradient. `buf` may be null
// when momentum == 0.
void sgd_step(float* p, const float* g, float* buf, int64_t n, const SgdParams& s);
void sgd_step(double* p, const double* g, double* buf, int64_t n, const SgdParams& s);

struct AdamParams {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;  // AdamW: decay the weights directly instead of adding to the gradient
  int64_t step = 1;        // 1-based step count, for bias correction
};

void adam_step(float* p, const float* g, float* m, float* v, int64_t n, const AdamParams& s);
void adam_step(double* p, const double* g, double* m, double* v, int64_t n, const AdamParams& s);

}  // namespace ember::kernels::cpu
