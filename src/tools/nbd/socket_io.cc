// socket_io.cc: sendmsg/recvmsg of an iterator (see socket_io.hpp).
#include "nbd/socket_io.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

#include "iov/extract.hpp"
#include "iov/position.hpp"

namespace iov::nbd {

namespace {

constexpr unsigned kMaxVecs = 128;

template <class Call>
ssize_t transfer(iov_iter* it, size_t max, Call call) {
  ::iovec vecs[kMaxVecs];
  msghdr msg{};
  msg.msg_iov = vecs;
  msg.msg_iovlen = iov_iter_to_iovecs(it, vecs, kMaxVecs, std::min(max, iov_iter_count(it)));
  if (msg.msg_iovlen == 0)
    return -EINVAL;  // nothing to move: a caller's mistake, never a wait
  for (;;) {
    ssize_t n = call(&msg);
    if (n > 0)
      iov_iter_advance(it, static_cast<size_t>(n));
    if (n >= 0)
      return n;
    if (errno != EINTR)
      return errno == EWOULDBLOCK ? -EAGAIN : -errno;
  }
}

}  // namespace

ssize_t send_iter(int fd, iov_iter* it, size_t max) {
  return transfer(it, max, [fd](msghdr* msg) { return ::sendmsg(fd, msg, MSG_NOSIGNAL | MSG_DONTWAIT); });
}

ssize_t recv_iter(int fd, iov_iter* it, size_t max) {
  return transfer(it, max, [fd](msghdr* msg) { return ::recvmsg(fd, msg, MSG_DONTWAIT); });
}

}  // namespace iov::nbd
