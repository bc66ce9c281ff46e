// listener.cc: the listening socket (see listener.hpp).
#include "nbd/listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
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

absl::Status listener::adopt(int fd) {
  int type = 0, listening = 0;
  socklen_t n = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &n) != 0)
    return absl::InvalidArgumentError(absl::StrCat("descriptor ", fd, " is not a socket: ", std::strerror(errno)));
  n = sizeof listening;
  if (type != SOCK_STREAM || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &n) != 0 || !listening)
    return absl::InvalidArgumentError(absl::StrCat("descriptor ", fd, " is not a listening stream socket"));
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    return absl::InvalidArgumentError(absl::StrCat("getsockname on descriptor ", fd, ": ", std::strerror(errno)));
  char text[INET6_ADDRSTRLEN] = "";
  switch (sa.ss_family) {
    case AF_UNIX: {
      const auto* un = reinterpret_cast<const sockaddr_un*>(&sa);
      const size_t room = len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
      path_.assign(un->sun_path, strnlen(un->sun_path, std::min(room, sizeof un->sun_path)));
      if (path_.empty())
        return absl::InvalidArgumentError(
            absl::StrCat("descriptor ", fd, " is an abstract or unnamed Unix socket: clients need a path"));
      break;
    }
    case AF_INET6: {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
      port_ = ntohs(in6->sin6_port);
      host_ = text;
      break;
    }
    case AF_INET: {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      port_ = ntohs(in->sin_port);
      host_ = text;
      break;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("descriptor ", fd, " is neither a Unix nor an IP socket"));
  }
  // The accept loop polls: accept4 must not block.
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
    return absl::InvalidArgumentError(absl::StrCat("descriptor ", fd, ": ", std::strerror(errno)));
  fd_ = fd;
  owns_file_ = false;
  return absl::OkStatus();
}

absl::StatusOr<int> inherited_listen_fd() {
  constexpr int kFirst = 3;  // SD_LISTEN_FDS_START
  const char* pid_text = getenv("LISTEN_PID");
  const char* fds_text = getenv("LISTEN_FDS");
  long pid = 0;
  const bool ours = pid_text && absl::SimpleAtoi(pid_text, &pid) && pid == getpid();
  const std::string fds = fds_text ? fds_text : "";
  for (const char* name : {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"})
    unsetenv(name);
  if (!ours)
    return -1;
  int count = 0;
  if (!absl::SimpleAtoi(fds, &count) || count < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("socket activation: LISTEN_FDS=", fds, " names no socket (it should be 1)"));
  if (count != 1)
    return absl::InvalidArgumentError(absl::StrCat("socket activation: LISTEN_FDS=", count,
                                                   ": iov-nbd listens on one socket (one ListenStream= in the unit)"));
  return kFirst;
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
