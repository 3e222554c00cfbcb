// The TCP store behind env:// rendezvous and the watchdog (dist/store.h), and the reading of
// the launcher's environment (dist/process_group.h, detect_launch). One process, or two (a
// fork), on 127.0.0.1 only.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "dist/process_group.h"
#include "dist/store.h"

using namespace ember;
using namespace ember::dist;
using namespace std::chrono_literals;

TEST_CASE("TCP store: set, get, add, age and wait in one process") {
  TcpStore server("127.0.0.1", 0, /*is_server=*/true, 5s);
  CHECK(server.port() > 0);
  TcpStore client("127.0.0.1", server.port(), false, 5s);
  server.set("a", "hello");
  CHECK(client.get("a") == "hello");
  client.set("a", std::string("with\0nul", 8));
  CHECK(server.get("a") == std::string("with\0nul", 8));
  CHECK(client.add("n", 5) == 5);
  CHECK(server.add("n", -2) == 3);
  CHECK(client.age("missing") < 0);
  const double age = client.age("a");
  CHECK(age >= 0);
  CHECK(age < 5);
  CHECK(client.wait({"a", "n"}, 1s));
  CHECK_FALSE(client.wait({"a", "never"}, 100ms));
  // A get parks until another client sets the key.
  std::thread later([&] {
    std::this_thread::sleep_for(100ms);
    server.set("late", "v");
  });
  CHECK(client.get("late") == "v");
  later.join();
}

TEST_CASE("TCP store: a missing key and an absent server are DistErrors that say what") {
  TcpStore server("127.0.0.1", 0, true, 300ms);
  TcpStore client("127.0.0.1", server.port(), false, 300ms);
  try {
    client.get("nobody-sets-this");
    FAIL("expected a DistError");
  } catch (const DistError& e) {
    CHECK(std::string(e.what()).find("'nobody-sets-this' was not set within 0.3 s") !=
          std::string::npos);
  }
  const int port = server.port();
  try {
    // Nothing listens on port 1 (privileged, never ours).
    TcpStore("127.0.0.1", 1, false, 200ms);
    FAIL("expected a DistError");
  } catch (const DistError& e) {
    CHECK(std::string(e.what()).find("could not connect to 127.0.0.1:1") != std::string::npos);
    CHECK(std::string(e.what()).find("MASTER_ADDR") != std::string::npos);
  }
  CHECK_THROWS_AS(TcpStore("127.0.0.1", port, false, 0ms), ValueError);
}

TEST_CASE("TCP store: two processes meet through env://-style rendezvous on 127.0.0.1") {
  // Rank 0 (this process) hosts the store; rank 1 (a child) connects, publishes, and reads what
  // rank 0 publishes after reading rank 1's key: each waits for the other.
  TcpStore server("127.0.0.1", 0, true, 10s);
  const int port = server.port();
  std::fflush(nullptr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int rc = 1;
    try {
      TcpStore store("127.0.0.1", port, false, 10s);
      store.set("joined/1", "pid " + std::to_string(getpid()));
      rc = store.get("reply/1") == "welcome 1" && store.add("count", 1) == 2 ? 0 : 2;
    } catch (...) {
      rc = 3;
    }
    _exit(rc);
  }
  TcpStore rank0("127.0.0.1", port, false, 10s);
  CHECK(rank0.add("count", 1) >= 1);
  const std::string joined = rank0.get("joined/1");
  CHECK(joined == "pid " + std::to_string(child));
  rank0.set("reply/1", "welcome 1");
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(rank0.get("count") == "2");
}

namespace {
// Sets the env:// variables for one scope (and clears mpirun's, in case the test runs under it).
struct EnvScope {
  std::vector<std::string> names;
  void set(const char* name, const char* value) {
    names.push_back(name);
    setenv(name, value, 1);
  }
  ~EnvScope() {
    for (const std::string& n : names) unsetenv(n.c_str());
  }
};
}  // namespace

TEST_CASE("detect_launch reads env:// variables and refuses malformed ones") {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE")) {
    MESSAGE("running under mpirun: the env:// parsing cases are for a plain launch");
    return;
  }
  {
    EnvScope env;
    CHECK(detect_launch().kind == Launch::Kind::none);
    env.set("RANK", "1");
    env.set("WORLD_SIZE", "2");
    env.set("MASTER_ADDR", "127.0.0.1");
    env.set("MASTER_PORT", "29512");
    const Launch l = detect_launch();
    CHECK(l.kind == Launch::Kind::env);
    CHECK(l.rank == 1);
    CHECK(l.world_size == 2);
    CHECK(l.master_addr == "127.0.0.1");
    CHECK(l.master_port == 29512);
    CHECK(l.describe() == "env:// (rank 1 of 2, 127.0.0.1:29512)");
  }
  {
    EnvScope env;
    env.set("RANK", "2");
    env.set("WORLD_SIZE", "2");
    env.set("MASTER_ADDR", "127.0.0.1");
    env.set("MASTER_PORT", "29512");
    CHECK_THROWS_WITH_AS(detect_launch(), doctest::Contains("RANK='2'"), ValueError);
  }
  {
    EnvScope env;
    env.set("RANK", "0");
    env.set("WORLD_SIZE", "2");
    CHECK_THROWS_WITH_AS(detect_launch(), doctest::Contains("MASTER_ADDR is not set"), DistError);
  }
}

TEST_CASE("init_process_group: unknown backends and methods, and a process nobody launched") {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE")) return;
  InitOptions o;
  o.backend = "gloo";
  CHECK_THROWS_WITH_AS(init_process_group(o), doctest::Contains("'mpi'"), ValueError);
  CHECK_THROWS_WITH_AS(init_process_group(o), doctest::Contains("'nccl'"), ValueError);
  o.backend = "mpi";
  o.init_method = "tcp://10.0.0.1:23456";
  CHECK_THROWS_WITH_AS(init_process_group(o), doctest::Contains("env://"), ValueError);
  o.init_method = "env://";
  CHECK_THROWS_WITH_AS(init_process_group(o), doctest::Contains("mpirun -np 2"), DistError);
  CHECK_FALSE(is_initialized());
  CHECK(get_world_size() == 1);
  CHECK(get_rank() == 0);
  // Launched as env://, the mpi backend still needs mpirun; nccl refuses emu with the way out.
  EnvScope env;
  env.set("RANK", "0");
  env.set("WORLD_SIZE", "1");
  env.set("MASTER_ADDR", "127.0.0.1");
  env.set("MASTER_PORT", "29513");
  CHECK_THROWS_WITH_AS(init_process_group(o), doctest::Contains("mpirun"), DistError);
  o.backend = "nccl";
  o.device = Device(DeviceType::EMU, 0);
  CHECK_THROWS_WITH_AS(init_process_group(o), doctest::Contains("not supported on emu"),
                       DeviceError);
  CHECK_FALSE(is_initialized());
}
