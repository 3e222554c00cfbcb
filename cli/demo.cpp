// `ember demo`: a short tour of the runtime on the best device - tensors, broadcasting, a
// matrix product checked against float64, reductions - with timings.
#include <chrono>
#include <cmath>
#include <iostream>

#include "cli/commands.h"
#include "cli/validate.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "runtime/rng.h"

namespace ember::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run_demo(const std::string& device_name, int64_t n) {
  Device dev = Device::parse(device_name);
  std::cout << "\nember demo on " << dev << "\n";
  manual_seed(0);
  Tensor a = randn({n, n}).to(dev), b = randn({n, n}).to(dev);
  std::cout << "  a, b = randn([" << n << ", " << n << "]) on " << a.device() << "\n";

  // Ops run where the tensors live; a device whose kernels are not built says so.
  Device compute = dev;
  try {
    ops::add(a.slice(0, 0, 1), b.slice(0, 0, 1));
  } catch (const DeviceError& e) {
    std::cout << "  note: " << e.what() << "\n  computing on cpu instead (the data round-trips "
              << "through " << dev << ")\n";
    compute = kCPU;
    a = a.to(kCPU);
    b = b.to(kCPU);
  }

  ops::matmul(a, b);  // warm-up
  auto t0 = std::chrono::steady_clock::now();
  Tensor c = ops::matmul(a, b);
  Tensor c_host = c.to(kCPU);
  double t = seconds_since(t0);
  Tensor ref = ops::matmul(a.to(kCPU, kFloat64), b.to(kCPU, kFloat64));
  double err = ops::amax(ops::abs(ops::sub(c_host.to(kFloat64), ref))).item();
  std::cout << "  c = a @ b            " << t * 1e3 << " ms, "
            << 2.0 * n * n * n / t / 1e9 << " GFLOP/s on " << compute
            << "; max |c - float64 reference| = " << err << "\n";

  Tensor bias = arange(0.0, static_cast<double>(n), 1.0, {kFloat32, compute});
  Tensor d = ops::add(c, bias);  // [n, n] + [n] broadcasts over rows
  std::cout << "  d = c + arange(" << n << ")   shape " << d.shape() << "\n";
  Tensor m = ops::mean(d, {1});
  Tensor s = ops::std(d, {1});
  std::cout << "  mean(d, dim=1)[:4] = " << m.slice(0, 0, 4) << "\n";
  std::cout << "  std(d, dim=1)[:4]  = " << s.slice(0, 0, 4) << "\n";
  std::cout << "  argmax(d[0])       = " << ops::argmax(d.select(0, 0)).item<int64_t>() << "\n";
  std::cout << "  d[:2, :3] =\n" << d.slice(0, 0, 2).slice(1, 0, 3) << "\n";
  bool ok = err < 1e-3 * std::sqrt(static_cast<double>(n));
  std::cout << (ok ? "demo: OK\n" : "demo: FAILED (matmul error too large)\n");
  return ok ? 0 : 1;
}

}  // namespace

Runner add_demo(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "A short demonstration of tensors and ops on a device");
  auto device = std::make_shared<std::string>("auto");
  auto size = std::make_shared<int64_t>(256);
  cmd->add_option("--device", *device, "auto, cpu, cuda[:N] or emu[:N]")->capture_default_str();
  cmd->add_option("--size", *size, "matrix size")
      ->capture_default_str()
      ->transform(integer_in(1, 8192));
  return [cmd, device, size]() -> int {
    if (!cmd->parsed()) return -1;
    return run_demo(*device, *size);
  };
}

}  // namespace ember::cli
