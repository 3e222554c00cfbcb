#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"

namespace ember {

bool gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
               const std::vector<Tensor>& inputs, const GradcheckOptions& opts, std::string* why) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK_DTYPE(inputs[i].dtype() == kFloat64, "gradcheck: input ", i,
                      " must be float64 for accurate finite differences, got ", inputs[i].dtype());
    EMBER_CHECK_VALUE(inputs[i].requires_grad(), "gradcheck: input ", i, " does not require grad");
  }
  Tensor out = f(inputs);
  EMBER_CHECK_DTYPE(out.dtype() == kFloat64, "gradcheck: the function must return float64, got ",
                    out.dtype());
  const int64_t n_out = out.numel();

  // Numeric Jacobian, column by column: J[i][k][j] = d out[k] / d in_i[j].
  std::vector<std::vector<double>> numeric(inputs.size());
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < inputs.size(); ++i) {
      // Perturb through a contiguous host copy, writing it back into the input's storage.
      Tensor x = inputs[i];
      const int64_t n_in = x.numel();
      numeric[i].assign(static_cast<size_t>(n_in * n_out), 0.0);
      std::vector<double> base = x.to_vector<double>();
      for (int64_t j = 0; j < n_in; ++j) {
        auto eval_at = [&](double v) {
          std::vector<double> pert = base;
          pert[j] = v;
          x.copy_(from_vector(pert, x.shape()).to(x.device()));
          return f(inputs).to_vector<double>();
        };
        std::vector<double> plus = eval_at(base[j] + opts.eps);
        std::vector<double> minus = eval_at(base[j] - opts.eps);
        for (int64_t k = 0; k < n_out; ++k)
          numeric[i][k * n_in + j] = (plus[k] - minus[k]) / (2 * opts.eps);
      }
      x.copy_(from_vector(base, x.shape()).to(x.device()));
    }
  }

  // Analytic Jacobian, row by row, from a fresh graph (the perturbations bumped versions).
  out = f(inputs);
  for (int64_t k = 0; k < n_out; ++k) {
    std::vector<double> onehot(static_cast<size_t>(n_out), 0.0);
    onehot[k] = 1.0;
    Tensor go = from_vector(onehot, out.shape()).to(out.device());
    std::vector<Tensor> gs = grad({out}, inputs, {go}, /*retain_graph=*/true, /*allow_unused=*/true);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int64_t n_in = inputs[i].numel();
      std::vector<double> a = gs[i].defined() ? gs[i].to_vector<double>()
                                              : std::vector<double>(static_cast<size_t>(n_in), 0.0);
      for (int64_t j = 0; j < n_in; ++j) {
        double num = numeric[i][k * n_in + j];
        if (!(std::fabs(a[j] - num) <= opts.atol + opts.rtol * std::fabs(num))) {
          if (why) {
            std::ostringstream os;
            os << "gradcheck: mismatch for input " << i << " (shape " << inputs[i].shape()
               << "), element " << j << ", output element " << k << ": analytic " << a[j]
               << ", numeric " << num;
            *why = os.str();
          }
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace ember
