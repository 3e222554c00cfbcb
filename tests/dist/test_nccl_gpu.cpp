// The nccl backend on cuda:0 with one rank (the `gpu` suite): an env:// rendezvous through the
// TCP store on 127.0.0.1, every collective and dtype against the input (one rank: the reduction
// of one value), and no host wait between issuing a collective and using its result.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "dist/backends.h"
#include "dist/process_group.h"
#include "runtime/gpu.h"

using namespace ember;
using namespace ember::dist;

namespace {
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}
}  // namespace

TEST_CASE("nccl backend: one rank on cuda:0, every collective and dtype, no host wait") {
  if (!nccl_missing_reason().empty()) {
    MESSAGE("SKIPPED: nccl collectives: " << nccl_missing_reason());
    std::printf("SKIPPED: nccl collectives: %s\n", nccl_missing_reason().c_str());
    return;
  }
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(free_port()).c_str(), 1);
  InitOptions o;
  o.backend = "nccl";
  o.timeout = std::chrono::seconds(60);
  o.device = Device(DeviceType::CUDA, 0);
  ProcessGroupPtr g = init_process_group(o);
  CHECK(g->backend() == "nccl");
  CHECK(g->size() == 1);
  const Device dev(DeviceType::CUDA, 0);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool})
    for (int64_t n : {0, 1, 1000, 4099}) {
      CAPTURE(dt);
      CAPTURE(n);
      std::vector<double> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i % 7);
      const std::vector<double> want = from_vector<double>(v).to(dt).to_vector<double>();
      Tensor t = from_vector<double>(v).to(dt).to(dev);
      Tensor b = t.clone(), gathered = zeros({n}, {dt, dev}), scattered = zeros({n}, {dt, dev});
      std::vector<Tensor> outs{gathered};
      const gpu::HostWaits before = gpu::host_waits();
      std::vector<WorkPtr> works{g->all_reduce(t, ReduceOp::sum), g->broadcast(b, 0),
                                 g->all_gather(outs, t),
                                 g->reduce_scatter(scattered, {b}, ReduceOp::max)};
      if (is_floating(dt)) works.push_back(g->all_reduce(t, ReduceOp::avg));
      for (auto& w : works) w->wait();
      const gpu::HostWaits after = gpu::host_waits();
      CHECK(after.device_to_host_copies == before.device_to_host_copies);
      CHECK(after.synchronizations == before.synchronizations);
      for (const Tensor& r : {t, b, gathered, scattered}) {
        CHECK(r.device() == dev);
        CHECK(r.to(kCPU).to_vector<double>() == want);
      }
    }
  g->barrier()->wait();
  // emu is refused with the way out.
  destroy_process_group();
  o.device = Device(DeviceType::EMU, 0);
  CHECK_THROWS_WITH_AS(init_process_group(o), doctest::Contains("not supported on emu"),
                       DeviceError);
  for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) unsetenv(v);
}
