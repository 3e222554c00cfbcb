// The TCP store (dist/store.h): a one-thread poll() server and a blocking client.
//
// Wire format, both directions little-endian as the host (every rank of a job runs the same
// build on the same architecture): a request is [u8 op][u32 key length][key][u32 body
// length][body][i64 wait ms]; a reply is [u8 status][u32 length][payload], status 0 for done
// and 1 for "timed out waiting for the key".
#include "dist/store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "dist/errors.h"

namespace ember::dist {

namespace {

using Clock = std::chrono::steady_clock;
enum Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kAge = 4 };

std::string errno_text() {
  return std::strerror(errno);
}

void put_u32(std::string& s, uint32_t v) {
  s.append(reinterpret_cast<const char*>(&v), 4);
}
void put_i64(std::string& s, int64_t v) {
  s.append(reinterpret_cast<const char*>(&v), 8);
}

// Writes all of `data`; false when the peer is gone.
bool send_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string reply(uint8_t status, const std::string& payload) {
  std::string r(1, static_cast<char>(status));
  put_u32(r, static_cast<uint32_t>(payload.size()));
  return r + payload;
}

// Resolves host:port to addresses for a socket of `passive` (listening) or active use.
struct AddrList {
  addrinfo* head = nullptr;
  AddrList(const std::string& host, int port, bool passive) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    const std::string p = std::to_string(port);
    int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), p.c_str(), &hints, &head);
    if (rc != 0)
      EMBER_THROW(DistError, "TCP store: cannot resolve '", host, "': ", gai_strerror(rc),
                  " (check MASTER_ADDR)");
  }
  ~AddrList() {
    if (head) ::freeaddrinfo(head);
  }
};

}  // namespace

// The server: one thread, poll() over the listening socket, a wake-up pipe and the clients.
// A get of a key that is not set yet parks the client until a set of that key or its deadline.
class TcpStoreServer {
 public:
  TcpStoreServer(const std::string& host, int port) {
    AddrList addrs(host, port, /*passive=*/true);
    for (addrinfo* a = addrs.head; a && listen_fd_ < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
        listen_fd_ = fd;
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
        port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
      } else {
        ::close(fd);
      }
    }
    if (listen_fd_ < 0)
      EMBER_THROW(DistError, "TCP store: cannot listen on ", host, ":", port, ": ", errno_text(),
                  " (is the port in use? set MASTER_PORT to a free one)");
    if (::pipe(wake_) != 0) {
      ::close(listen_fd_);
      EMBER_THROW(DistError, "TCP store: pipe: ", errno_text());
    }
    thread_ = std::thread([this] { loop(); });
  }
  ~TcpStoreServer() {
    stop_ = true;
    char c = 0;
    (void)!::write(wake_[1], &c, 1);
    thread_.join();
    for (auto& [fd, buf] : clients_) ::close(fd);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  int port() const { return port_; }

 private:
  struct Entry {
    std::string value;
    Clock::time_point set_at;
  };
  struct Waiter {
    int fd;
    std::string key;
    Clock::time_point deadline;
  };

  void loop() {
    while (!stop_) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      for (auto& [fd, buf] : clients_) fds.push_back({fd, POLLIN, 0});
      int wait_ms = 1000;
      const auto now = Clock::now();
      for (const Waiter& w : waiters_)
        wait_ms = std::min<int>(
            wait_ms,
            static_cast<int>(std::max<int64_t>(
                0, std::chrono::duration_cast<std::chrono::milliseconds>(w.deadline - now).count() +
                       1)));
      if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) return;
      expire_waiters();
      if (fds[0].revents & POLLIN) {
        int fd = ::accept(listen_fd_, nullptr, nullptr);
        if (fd >= 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          clients_[fd];
        }
      }
      for (size_t i = 2; i < fds.size(); ++i)
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_client(fds[i].fd);
    }
  }

  void drop(int fd) {
    ::close(fd);
    clients_.erase(fd);
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                  [fd](const Waiter& w) { return w.fd == fd; }),
                   waiters_.end());
  }

  void read_client(int fd) {
    char tmp[4096];
    ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) {
      drop(fd);
      return;
    }
    std::string& buf = clients_[fd];
    buf.append(tmp, static_cast<size_t>(n));
    // Whole requests only: [op][klen][key][blen][body][wait].
    while (buf.size() >= 9) {
      uint32_t klen, blen;
      std::memcpy(&klen, buf.data() + 1, 4);
      if (buf.size() < 5 + klen + 4) break;
      std::memcpy(&blen, buf.data() + 5 + klen, 4);
      const size_t total = 5 + klen + 4 + blen + 8;
      if (buf.size() < total) break;
      const uint8_t op = static_cast<uint8_t>(buf[0]);
      std::string key = buf.substr(5, klen), body = buf.substr(9 + klen, blen);
      int64_t wait_ms;
      std::memcpy(&wait_ms, buf.data() + 9 + klen + blen, 8);
      buf.erase(0, total);
      if (!handle(fd, op, key, body, wait_ms)) {
        drop(fd);
        return;
      }
    }
  }

  bool handle(int fd, uint8_t op, const std::string& key, const std::string& body,
              int64_t wait_ms) {
    const auto now = Clock::now();
    switch (op) {
      case kSet: {
        data_[key] = {body, now};
        bool ok = send_all(fd, reply(0, ""));
        // Answer the clients parked on this key (not this one: it asked for a set).
        std::vector<Waiter> still;
        for (const Waiter& w : waiters_) {
          if (w.key == key)
            send_all(w.fd, reply(0, body));
          else
            still.push_back(w);
        }
        waiters_.swap(still);
        return ok;
      }
      case kGet: {
        auto it = data_.find(key);
        if (it != data_.end()) return send_all(fd, reply(0, it->second.value));
        waiters_.push_back({fd, key, now + std::chrono::milliseconds(wait_ms)});
        return true;
      }
      case kAdd: {
        Entry& e = data_[key];
        int64_t v = e.value.empty() ? 0 : std::stoll(e.value);
        v += std::stoll(body);
        e = {std::to_string(v), now};
        return send_all(fd, reply(0, e.value));
      }
      case kAge: {
        auto it = data_.find(key);
        double age = it == data_.end()
                         ? -1.0
                         : std::chrono::duration<double>(now - it->second.set_at).count();
        return send_all(fd, reply(0, std::to_string(age)));
      }
      default:
        return false;  // not our protocol: hang up
    }
  }

  void expire_waiters() {
    const auto now = Clock::now();
    std::vector<Waiter> still;
    for (const Waiter& w : waiters_) {
      if (w.deadline <= now)
        send_all(w.fd, reply(1, ""));
      else
        still.push_back(w);
    }
    waiters_.swap(still);
  }

  int listen_fd_ = -1, port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::map<int, std::string> clients_;  // fd -> bytes received, not yet a whole request
  std::map<std::string, Entry> data_;
  std::vector<Waiter> waiters_;
  std::thread thread_;
};

TcpStore::TcpStore(const std::string& host, int port, bool is_server,
                   std::chrono::milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout) {
  EMBER_CHECK_VALUE(timeout.count() > 0, "TCP store: the timeout must be positive");
  if (is_server) {
    server_ = std::make_unique<TcpStoreServer>(host, port);
    port_ = server_->port();
  }
  // The server may not be up yet: retry until the deadline, as every rank starts at its own pace.
  const auto deadline = Clock::now() + timeout;
  std::string last = "no attempt";
  while (fd_ < 0) {
    AddrList addrs(host_, port_, /*passive=*/false);
    for (addrinfo* a = addrs.head; a && fd_ < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd_ = fd;
      } else {
        last = errno_text();
        ::close(fd);
      }
    }
    if (fd_ >= 0) break;
    if (Clock::now() >= deadline)
      EMBER_THROW(DistError, "TCP store: could not connect to ", host_, ":", port_, " within ",
                  timeout.count() / 1000.0, " s (", last,
                  "); is rank 0 running, and are MASTER_ADDR and MASTER_PORT the same on every "
                  "rank?");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

bool TcpStore::request(uint8_t op, const std::string& key, const std::string& body,
                       std::chrono::milliseconds wait_for, std::string* out) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string msg(1, static_cast<char>(op));
  put_u32(msg, static_cast<uint32_t>(key.size()));
  msg += key;
  put_u32(msg, static_cast<uint32_t>(body.size()));
  msg += body;
  put_i64(msg, wait_for.count());
  const std::string where = host_ + ":" + std::to_string(port_);
  if (fd_ < 0 || !send_all(fd_, msg))
    EMBER_THROW(DistError, "TCP store at ", where,
                " is not answering (rank 0, which hosts it, may have died)");
  // The server answers a get within wait_for; allow a margin for the network on top.
  const auto deadline = Clock::now() + wait_for + std::chrono::seconds(5) + timeout_;
  std::string in;
  auto need = [&](size_t n) {
    while (in.size() < n) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      pollfd p{fd_, POLLIN, 0};
      int r = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
      if (r < 0 && errno == EINTR) continue;
      char tmp[4096];
      ssize_t got = r > 0 ? ::recv(fd_, tmp, std::min(sizeof tmp, n - in.size()), 0) : -1;
      if (got <= 0) {
        ::close(fd_);
        fd_ = -1;  // the stream is out of step now: later requests fail at once
        EMBER_THROW(DistError, "TCP store at ", where,
                    r == 0 ? " did not answer in time" : " closed the connection",
                    " (rank 0, which hosts it, may have died)");
      }
      in.append(tmp, static_cast<size_t>(got));
    }
  };
  need(5);
  uint32_t len;
  std::memcpy(&len, in.data() + 1, 4);
  need(5 + len);
  *out = in.substr(5);
  return in[0] == 0;  // only a get times out
}

void TcpStore::set(const std::string& key, const std::string& value) {
  std::string ignored;
  request(kSet, key, value, std::chrono::milliseconds(0), &ignored);
}

std::string TcpStore::get(const std::string& key) {
  std::string v;
  if (!request(kGet, key, "", timeout_, &v))
    EMBER_THROW(DistError, "TCP store at ", host_, ":", port_, ": key '", key,
                "' was not set within ", timeout_.count() / 1000.0, " s");
  return v;
}

bool TcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (const std::string& k : keys) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds(0);
    std::string ignored;
    if (!request(kGet, k, "", left, &ignored)) return false;
  }
  return true;
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  std::string v;
  request(kAdd, key, std::to_string(delta), std::chrono::milliseconds(0), &v);
  return std::stoll(v);
}

double TcpStore::age(const std::string& key) {
  std::string v;
  request(kAge, key, "", std::chrono::milliseconds(0), &v);
  return std::stod(v);
}

}  // namespace ember::dist
