// server.cc: the listener and the connection threads (see server.hpp).
#include "nbd/server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace iov::nbd {

server::server(blkdev& dev, const server_options& opts) : dev_(dev), opts_(opts) {}

server::~server() {
  reap(true);
  if (listen_fd_ >= 0)
    close(listen_fd_);
  if (!opts_.socket_path.empty() && listen_fd_ >= 0)
    unlink(opts_.socket_path.c_str());
  for (int fd : wake_)
    if (fd >= 0)
      close(fd);
}

absl::Status server::listen() {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  if (!opts_.socket_path.empty()) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (opts_.socket_path.size() >= sizeof sa.sun_path)
      return absl::InvalidArgumentError(absl::StrCat("socket path too long: ", opts_.socket_path));
    std::memcpy(sa.sun_path, opts_.socket_path.c_str(), opts_.socket_path.size() + 1);
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(opts_.socket_path.c_str());
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
      return absl::UnavailableError(absl::StrCat("bind ", opts_.socket_path, ": ", std::strerror(errno)));
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(opts_.port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
      return absl::UnavailableError(absl::StrCat("bind 127.0.0.1:", opts_.port, ": ", std::strerror(errno)));
    socklen_t len = sizeof sa;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    bound_port_ = ntohs(sa.sin_port);
  }
  if (::listen(listen_fd_, 64) != 0)
    return absl::UnavailableError(absl::StrCat("listen: ", std::strerror(errno)));
  return absl::OkStatus();
}

std::string server::address() const {
  if (!opts_.socket_path.empty())
    return absl::StrCat("unix:", opts_.socket_path);
  return absl::StrCat("127.0.0.1:", bound_port_);
}

void server::stop() {
  char c = 1;
  [[maybe_unused]] ssize_t n = write(wake_[1], &c, 1);
}

// Joins finished connections; with all, shuts the others down first.
void server::reap(bool all) {
  std::lock_guard<std::mutex> guard(lock_);
  for (auto it = clients_.begin(); it != clients_.end();) {
    client& c = **it;
    if (all && !c.done)
      shutdown(c.fd, SHUT_RDWR);  // a blocked recv/send returns: the thread ends
    if (all || c.done) {
      c.thread.join();
      close(c.fd);
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
}

void server::run() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    int n = poll(fds, 2, 1000);
    if (n < 0 && errno != EINTR)
      break;
    if (fds[1].revents)
      break;
    reap(false);
    if (n <= 0 || !(fds[0].revents & POLLIN))
      continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    if (opts_.socket_path.empty()) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    auto c = std::make_unique<client>();
    c->fd = fd;
    client* raw = c.get();
    c->thread = std::thread([this, raw] {
      connection conn(raw->fd, dev_, opts_.exp);
      conn.serve();
      shutdown(raw->fd, SHUT_RDWR);  // the client sees EOF now; run() closes the fd when it reaps
      raw->done = true;
    });
    std::lock_guard<std::mutex> guard(lock_);
    clients_.push_back(std::move(c));
  }
  reap(true);
}

}  // namespace iov::nbd
