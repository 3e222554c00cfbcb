// A small key-value store over TCP (PyTorch's TCPStore): rendezvous for the env:// launch (the
// NCCL unique id, who has joined) and the liveness records the watchdog reads when a collective
// times out (dist/watchdog.h). Rank 0 hosts the server in a thread of its own; every rank,
// rank 0 included, talks to it as a client. POSIX sockets only.
//
//   TcpStore store("127.0.0.1", 29500, /*is_server=*/rank == 0, std::chrono::seconds(30));
//   store.set("nccl/id", bytes);          // rank 0
//   std::string id = store.get("nccl/id"); // the others: waits until it is set (or times out)
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ember::dist {

class TcpStoreServer;

class TcpStore {
 public:
  // Connects to host:port, retrying until `timeout` (DistError naming the address after it).
  // is_server: first starts the server on that port (port 0: a free port, see port()).
  // requires: timeout > 0.
  TcpStore(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout);
  ~TcpStore();
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::string& value);
  // The value of `key`, waiting for it to be set up to the store's timeout (DistError after).
  std::string get(const std::string& key);
  // Waits until every key is set; false if `timeout` passes first.
  bool wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  // Adds `delta` to the integer at `key` (0 when unset) and returns the new value.
  int64_t add(const std::string& key, int64_t delta);
  // Seconds since `key` was last set, by the server's clock (so clocks of different machines
  // never meet); negative when the key is unset.
  double age(const std::string& key);

  int port() const { return port_; }
  const std::string& host() const { return host_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  // Sends one request and reads its reply into *out; false when a get timed out.
  bool request(uint8_t op, const std::string& key, const std::string& body,
               std::chrono::milliseconds wait_for, std::string* out);
  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<TcpStoreServer> server_;
  int fd_ = -1;
  std::mutex mu_;  // one request at a time on the connection
};

}  // namespace ember::dist
