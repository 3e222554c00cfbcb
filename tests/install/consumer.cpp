#include <ember.h>

#include <iostream>

int main() {
  ember::Tensor t = ember::arange(0.0, 6.0, 1.0, ember::kFloat64);
  double sum = 0;
  for (double v : t.to_vector<double>()) sum += v;
  std::cout << "sum=" << sum << "\n";
  return sum == 15.0 ? 0 : 1;
}
