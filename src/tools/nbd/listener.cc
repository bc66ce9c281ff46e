// listener.cc: the listening socket (see listener.hpp).
#include "nbd/listener.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace iov::nbd {

namespace {

bool unix_address(const std::string& path, sockaddr_un* sa) {
  *sa = {};
  sa->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof sa->sun_path)
    return false;
  std::memcpy(sa->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// Does a server answer on the socket at sa? A full backlog (EAGAIN) is a
// live server too; ECONNREFUSED is a socket nobody listens on.
bool answers(const sockaddr_un& sa) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return true;  // cannot tell: leave it alone
  const int r = connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  const int err = errno;
  ::close(fd);
  return r == 0 || err != ECONNREFUSED;
}

}  // namespace

absl::Status listener::open_unix(const std::string& path) {
  sockaddr_un sa;
  if (!unix_address(path, &sa))
    return absl::InvalidArgumentError(path.empty() ? std::string("the socket path is empty")
                                                   : absl::StrCat("socket path too long: ", path));
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return absl::AlreadyExistsError(absl::StrCat(path, " exists and is not a socket: refusing to replace it"));
    if (answers(sa))
      return absl::AlreadyExistsError(absl::StrCat(path, " is the socket of a running server"));
    unlink(path.c_str());  // left over by a server that is gone
  }
  path_ = path;
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    return absl::UnavailableError(absl::StrCat("bind ", path, ": ", std::strerror(errno)));
  if (lstat(path.c_str(), &st) == 0) {
    owns_file_ = true;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  if (::listen(fd_, SOMAXCONN) != 0)
    return absl::UnavailableError(absl::StrCat("listen: ", std::strerror(errno)));
  return absl::OkStatus();
}

absl::Status listener::open_tcp(const std::string& address, uint16_t port) {
  const std::string host = address.empty() ? "127.0.0.1" : address;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* ai = nullptr;
  const std::string service = std::to_string(port);
  if (int err = getaddrinfo(host.c_str(), service.c_str(), &hints, &ai); err != 0 || !ai)
    return absl::InvalidArgumentError(absl::StrCat("--bind=", host, ": not a numeric IPv4 or IPv6 address (",
                                                   gai_strerror(err), ")"));
  sockaddr_storage sa{};
  socklen_t len = ai->ai_addrlen;
  std::memcpy(&sa, ai->ai_addr, len);
  const int family = ai->ai_family;
  freeaddrinfo(ai);
  fd_ = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0)
    return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (family == AF_INET6)  // "::" means IPv6 only, as the address says
    setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0)
    return absl::UnavailableError(absl::StrCat("bind ", host, " port ", port, ": ", std::strerror(errno)));
  getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  char text[INET6_ADDRSTRLEN] = "";
  if (family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    port_ = ntohs(in6->sin6_port);
  } else {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    port_ = ntohs(in->sin_port);
  }
  host_ = text;
  if (::listen(fd_, SOMAXCONN) != 0)
    return absl::UnavailableError(absl::StrCat("listen: ", std::strerror(errno)));
  return absl::OkStatus();
}

bool listener::reachable_from_network() const {
  if (is_unix())
    return false;
  in_addr a4;
  if (inet_pton(AF_INET, host_.c_str(), &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) != 127;
  in6_addr a6;
  if (inet_pton(AF_INET6, host_.c_str(), &a6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&a6))
      return false;
    if (IN6_IS_ADDR_V4MAPPED(&a6))
      return a6.s6_addr[12] != 127;
  }
  return true;
}

std::string listener::address() const {
  if (is_unix())
    return absl::StrCat("unix:", path_);
  return host_.find(':') == std::string::npos ? absl::StrCat(host_, ":", port_)
                                              : absl::StrCat("[", host_, "]:", port_);
}

int listener::accept_one() {
  int fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0)
    return errno == EWOULDBLOCK ? -EAGAIN : -errno;
  if (!is_unix()) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

void listener::close() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  struct stat st;
  if (owns_file_ && lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    unlink(path_.c_str());
  owns_file_ = false;
}

}  // namespace iov::nbd
