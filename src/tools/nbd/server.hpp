// server.hpp: accepts NBD clients on a Unix socket or TCP loopback port and
// serves each on its own thread, until stop() (from a signal handler too).
//
//   iov::nbd::server s(device, {.socket_path = "/tmp/iov.sock"});
//   if (absl::Status st = s.listen(); !st.ok()) return fail(st);
//   printf("listening on %s\n", s.address().c_str());
//   s.run();                   // returns after stop()
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "nbd/connection.hpp"

namespace iov::nbd {

struct server_options {
  std::string socket_path;  // a Unix socket; else TCP
  uint16_t port = 10809;    // on 127.0.0.1
  export_options exp;
};

class server {
 public:
  server(blkdev& dev, const server_options& opts);
  ~server();
  absl::Status listen();
  std::string address() const;
  void run();
  // Async-signal-safe: wakes run(), which closes every connection and returns.
  void stop();

 private:
  struct client {
    int fd;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void reap(bool all);

  blkdev& dev_;
  server_options opts_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t bound_port_ = 0;
  std::mutex lock_;
  std::list<std::unique_ptr<client>> clients_;
};

}  // namespace iov::nbd
