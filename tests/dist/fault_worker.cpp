// A DistributedDataParallel training loop in which rank 1 fails on purpose, for
// tests/dist/faults.py: `fault_worker kill|stop STEP TIMEOUT_S`. At step STEP rank 1 raises
// SIGKILL (it dies) or SIGSTOP (it hangs); the other ranks must stop with a DistError naming
// rank 1 within the timeout. Each rank prints what it caught and exits 3 on a DistError.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "dist/ddp.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "runtime/rng.h"

using namespace ember;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: fault_worker kill|stop STEP TIMEOUT_S\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int fail_at = std::atoi(argv[2]);
  try {
    dist::InitOptions o;
    o.backend = "mpi";
    o.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::atof(argv[3]) * 1000));
    auto group = dist::init_process_group(o);
    manual_seed(0);
    auto model = std::make_shared<nn::Linear>(32, 8);
    dist::DistributedDataParallel ddp(model, group);
    nn::SGD opt(model->parameters(), nn::SGDOptions{0.01});
    for (int step = 1; step <= 1000; ++step) {
      if (group->rank() == 1 && step == fail_at) {
        std::printf("rank 1: raising %s at step %d\n", mode.c_str(), step);
        std::fflush(stdout);
        std::raise(mode == "kill" ? SIGKILL : SIGSTOP);
      }
      opt.zero_grad();
      backward(sum(ddp(randn({4, 32}))));
      opt.step();
    }
    std::printf("rank %d: finished without a failure\n", group->rank());
    return 0;
  } catch (const DistError& e) {
    std::printf("rank %d: caught DistError: %s\n", dist::get_rank(), e.what());
    std::fflush(stdout);
    return 3;
  }
}
