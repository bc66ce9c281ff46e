// socket_io.cc: non-blocking sendmsg of a vector, recvmsg into an iterator
// (see socket_io.hpp).
#include "nbd/socket_io.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "iov/extract.hpp"
#include "iov/position.hpp"

namespace iov::nbd {

namespace {

constexpr unsigned kMaxVecs = 128;

// One call of sendmsg or recvmsg, again after a signal.
template <class Call>
ssize_t call_msg(msghdr* msg, Call call) {
  for (;;) {
    const ssize_t n = call(msg);
    if (n >= 0)
      return n;
    if (errno != EINTR)
      return errno == EWOULDBLOCK ? -EAGAIN : -errno;
  }
}

}  // namespace

ssize_t send_vecs(int fd, ::iovec* vec, unsigned n, size_t max) {
  size_t at = 0;
  unsigned k = 0;
  while (k < n && at + vec[k].iov_len < max) at += vec[k++].iov_len;
  if (k < n)
    vec[k++].iov_len = max - at;  // the piece where max falls, shortened
  while (k && vec[k - 1].iov_len == 0) k--;
  if (k == 0)
    return -EINVAL;  // nothing to send: a caller's mistake, never a wait
  msghdr msg{};
  msg.msg_iov = vec;
  msg.msg_iovlen = k;
  return call_msg(&msg, [fd](msghdr* m) { return ::sendmsg(fd, m, MSG_NOSIGNAL | MSG_DONTWAIT); });
}

ssize_t recv_iter(int fd, iov_iter* it, size_t max, bool* drained) {
  ::iovec vecs[kMaxVecs];
  msghdr msg{};
  msg.msg_iov = vecs;
  msg.msg_iovlen = iov_iter_to_iovecs(it, vecs, kMaxVecs, std::min(max, iov_iter_count(it)));
  if (msg.msg_iovlen == 0)
    return -EINVAL;  // no room: a caller's mistake, never a wait
  const ssize_t n = call_msg(&msg, [fd](msghdr* m) { return ::recvmsg(fd, m, MSG_DONTWAIT); });
  if (n > 0)
    iov_iter_advance(it, static_cast<size_t>(n));
  if (drained) {
    size_t room = 0;
    for (size_t k = 0; k < msg.msg_iovlen; k++) room += vecs[k].iov_len;
    *drained = n < 0 || static_cast<size_t>(n) < room;
  }
  return n;
}

}  // namespace iov::nbd
