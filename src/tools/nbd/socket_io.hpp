// socket_io.hpp: one non-blocking sendmsg() of a vector the caller built (a
// reply's header bytes and a READ's lent pages), or one recvmsg() into an
// iterator's next pieces, whatever its type (iov_iter_to_iovecs: user
// buffers, kvecs, bvecs of pages...), advancing the iterator by what moved.
//
//   ssize_t n = iov::nbd::send_vecs(fd, vec, nr, limit);   // > 0 bytes sent, -EAGAIN, -errno
//   iov::iov_iter it;
//   iov::iov_iter_ubuf(&it, iov::ITER_DEST, buf, len);
//   ssize_t n = iov::nbd::recv_iter(fd, &it);   // > 0 bytes, 0 at EOF, -EAGAIN, -errno
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>

#include "iov/iov_iter.hpp"

namespace iov::nbd {

// Sends at most the first `max` bytes of vec[0, n): the bytes sent (> 0),
// -EAGAIN when the socket is full, or another -errno (-EPIPE, -ECONNRESET:
// the peer left). The piece where `max` falls is shortened in place.
ssize_t send_vecs(int fd, ::iovec* vec, unsigned n, size_t max = SIZE_MAX);
// Receives into an ITER_DEST iterator, at most `max` bytes: the bytes
// received (> 0), 0 at the end of the stream, -EAGAIN when there is nothing
// yet, or another -errno. *drained (if given) says whether the call took
// fewer bytes than it had room for: a stream socket then held no more.
ssize_t recv_iter(int fd, iov_iter* it, size_t max = SIZE_MAX, bool* drained = nullptr);

}  // namespace iov::nbd
