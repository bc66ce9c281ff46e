// server.hpp: an NBD server of one device: a listener (listener.hpp) on a
// Unix socket or TCP loopback port, whose accepted sockets are served by a
// few event loops (event_loop.hpp), within the limits of server_limits
// (config.hpp): beyond max_connections a client is accepted and closed at
// once; when descriptors run out, accepting pauses (100 ms at a time, never
// spinning) and the clients waiting in the queue are taken once some free up.
//
//   iov::nbd::server s(device, {.socket_path = "/tmp/iov.sock"});
//   if (absl::Status st = s.listen(); !st.ok()) return fail(st);
//   printf("listening on %s\n", s.address().c_str());
//   s.run();                   // returns after stop(), every connection closed
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "iov_drivers/blkdev.hpp"
#include "nbd/block_locks.hpp"
#include "nbd/budget.hpp"
#include "nbd/config.hpp"
#include "nbd/context.hpp"
#include "nbd/listener.hpp"
#include "nbd/tls.hpp"

namespace iov::nbd {

class event_loop;

struct server_options {
  std::string socket_path;  // a Unix socket; else TCP
  std::string bind_address = "";  // TCP: numeric IPv4 or IPv6; "" is 127.0.0.1
  uint16_t port = 10809;    // 0: any free port
  int inherited_fd = -1;    // a listening socket handed over (socket activation): used instead of the above
  export_options exp;
  server_limits limits;
  tls_mode tls = tls_mode::off;                     // on or require: tls_credentials set
  std::shared_ptr<const tls_credentials> credentials = nullptr;
};

// What a server has done, for tests and logs.
struct server_stats {
  unsigned connections;     // open now
  uint64_t accepted;        // served, since the start
  uint64_t refused;         // turned away (max_connections, no memory)
  uint64_t payload_in_use;  // bytes of payload memory reserved now
  uint64_t payload_peak;    // the most ever reserved at once (<= limits.payload_memory)
  uint64_t payload_waits;   // reservations that had to wait
};

class server {
 public:
  server(blkdev& dev, const server_options& opts);
  ~server();  // as after stop(): every connection closed, the socket file removed
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Binds the listener (see listener.hpp for the socket path's rules) and
  // starts the event loops. Refuses a device the protocol cannot describe
  // (2^63 bytes or more).
  absl::Status listen();
  // The event loops alone, to serve sockets given to adopt() (fuzzing).
  absl::Status start();
  std::string address() const { return listener_.address(); }
  const listener& where() const { return listener_; }
  // Accepts until stop(), then closes every connection and the listener.
  void run();
  // Async-signal-safe: wakes run(), which ends.
  void stop();
  // Serves a connected socket as an accepted one; false when refused (the
  // connection limit, no memory), the socket then closed.
  bool adopt(int fd);
  server_stats stats() const;

 private:
  void accept_all();
  void shut_down();

  blkdev& dev_;
  const server_options opts_;
  payload_budget budget_;
  block_locks locks_;
  const context ctx_;
  listener listener_;
  std::vector<std::unique_ptr<event_loop>> loops_;
  int wake_[2] = {-1, -1};
  std::atomic<unsigned> open_{0};
  std::atomic<uint64_t> accepted_{0}, refused_{0};
  std::atomic<bool> stopping_{false};
  int64_t backoff_until_ms_ = 0;  // accepting paused until then (steady clock)
};

}  // namespace iov::nbd
