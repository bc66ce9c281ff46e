// listener.hpp: a server's listening socket. A Unix socket at a path is
// created only where nothing is, or where a socket no server answers on is
// left over (a crashed server's); a path that is not a socket, or a socket a
// live server answers on, is refused. At the end the socket file is removed
// only if it is still the one this listener made (same device and inode).
// TCP listens on 127.0.0.1 unless told another address (IPv4 or IPv6, in
// numeric form). The backlog is the system's largest, so that a
// burst of clients waits in the queue instead of being turned away.
// A socket handed over by a service manager (systemd's socket activation:
// LISTEN_PID, LISTEN_FDS, the first at descriptor 3) is adopted as it is;
// its file, if any, belongs to the manager and is never removed here.
//
//   listener l;
//   if (absl::Status st = l.open_unix("/tmp/iov.sock"); !st.ok()) return st;
//   int fd = l.accept_one();   // a non-blocking socket, or -EAGAIN, -EMFILE, ...
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace iov::nbd {

class listener {
 public:
  listener() = default;
  ~listener() { close(); }
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;

  absl::Status open_unix(const std::string& path);
  // On `address` ("" is 127.0.0.1; "0.0.0.0" or "::" every interface).
  absl::Status open_tcp(const std::string& address, uint16_t port);  // port 0: any free port
  // Takes over fd, a bound and listening stream socket (Unix, IPv4 or IPv6).
  absl::Status adopt(int fd);
  int fd() const { return fd_; }
  bool is_unix() const { return !path_.empty(); }
  std::string address() const;  // "unix:PATH", "HOST:PORT" or "[HOST]:PORT"
  const std::string& path() const { return path_; }
  const std::string& host() const { return host_; }  // TCP: the address bound, numeric
  uint16_t port() const { return port_; }
  // TCP on an address other hosts may reach: not loopback (127/8, ::1).
  bool reachable_from_network() const;
  // One accept4(): a non-blocking, close-on-exec socket (TCP_NODELAY for
  // TCP), or -errno (-EAGAIN: nobody is waiting).
  int accept_one();
  // Closes the socket and removes the socket file if it is still ours.
  void close();

 private:
  int fd_ = -1;
  std::string path_;
  std::string host_;
  uint16_t port_ = 0;
  bool owns_file_ = false;  // the socket file made, to remove nothing else
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// The listening socket a service manager handed over, as sd_listen_fds(1)
// finds it: -1 when none was (no LISTEN_PID, or another process's), the
// descriptor when LISTEN_FDS=1, an error for any other count. The variables
// are removed from the environment, so that a child (--run) does not take
// them for its own.
absl::StatusOr<int> inherited_listen_fd();

}  // namespace iov::nbd
