// listener.cc: the listening socket (see listener.hpp).
#include "nbd/listener.hpp"

#include <arpa/inet.h>
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

absl::Status listener::open_tcp(uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0)
    return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    return absl::UnavailableError(absl::StrCat("bind 127.0.0.1:", port, ": ", std::strerror(errno)));
  socklen_t len = sizeof sa;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  port_ = ntohs(sa.sin_port);
  if (::listen(fd_, SOMAXCONN) != 0)
    return absl::UnavailableError(absl::StrCat("listen: ", std::strerror(errno)));
  return absl::OkStatus();
}

std::string listener::address() const {
  return is_unix() ? absl::StrCat("unix:", path_) : absl::StrCat("127.0.0.1:", port_);
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
