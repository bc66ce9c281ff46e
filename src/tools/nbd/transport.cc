// transport.cc: a connection's socket calls, plain or TLS (see transport.hpp).
#include "nbd/transport.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "iov/iov.hpp"
#include "nbd/log.hpp"
#include "nbd/socket_io.hpp"

namespace iov::nbd {

namespace {
constexpr uint64_t kProgressBytes = 64 * 1024;     // moved in a message, they count as progress
constexpr size_t kPrefetchBytes = 256 * 1024;      // under L2: a batch's lines all fit
constexpr size_t kWholePagesFrom = 3 * PAGE_SIZE;  // a batch with misses to overlap
constexpr size_t kPrefetchHead = 1024;             // of each piece of a smaller batch

// The kernel copies a batch's bytes into the socket a line after another, so
// a READ's page that is not in the cache costs a miss at each step. A batch
// of several pages has every line asked for first, so that the misses of all
// its pages overlap. A batch of a page or two has only the first kilobyte of
// each piece asked for, which the hardware prefetcher follows on: its misses
// have nothing to overlap with but the system call, and waiting for every
// line on the CPU's line-fill buffers only moved the wait into the server's
// own time (docs/nbd.md). Above kPrefetchBytes the early lines would be
// evicted before the copy.
void prefetch_reply(const ::iovec* vec, unsigned n, size_t bytes) {
  if (bytes > kPrefetchBytes)
    return;
  const size_t per_piece = bytes < kWholePagesFrom ? kPrefetchHead : SIZE_MAX;
  for (unsigned k = 0; k < n; k++)
    prefetch_range(vec[k].iov_base, std::min(vec[k].iov_len, per_piece));
}

// GnuTLS holding part of a record reports an end of stream as `again`, and
// the edge-triggered loop would not wake for it again: look for it.
bool peer_closed(int fd) {
  char c;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

// What a recv_iter() returned: *got bytes, or why none.
io received(ssize_t r, size_t* got) {
  if (r == -EAGAIN)
    return io::again;
  if (r <= 0)
    return r == 0 ? io::eof : io::error;
  *got = static_cast<size_t>(r);
  return io::done;
}
}  // namespace

transport::~transport() {
  ::shutdown(fd_, SHUT_RDWR);  // the client sees the end at once, even if a descriptor leaked to a child
  ::close(fd_);
}

bool transport::start_tls(const tls_credentials& credentials) {
  drained_ = false;  // the session's reads say nothing of it: it may buffer records
  tls_ = credentials.start(fd_, limits_.io_per_call);
  if (!tls_)
    log_event(event::no_memory, "out of memory for a TLS session: connection closed");
  return tls_ != nullptr;
}

io transport::tls_handshake() {
  switch (tls_->handshake()) {
    case tls_io::done:
      return io::done;
    case tls_io::again:
      return !tls_->wants_write() && peer_closed(fd_) ? io::eof : io::again;
    case tls_io::eof:
      return io::eof;
    case tls_io::error:
      log_event(event::io_error, "a TLS handshake failed (%s): connection closed", tls_->why());
      break;
  }
  return io::error;
}

bool transport::wants_write() const { return tls_ && tls_->wants_write(); }

io transport::tls_recv(void* p, size_t n, size_t* got) {
  switch (tls_->recv(p, n, got)) {
    case tls_io::done:
      return io::done;
    case tls_io::again:
      return peer_closed(fd_) ? io::eof : io::again;  // an end of stream in the middle of a record
    case tls_io::eof:
      return io::eof;
    case tls_io::error:
      break;
  }
  return io::error;
}

io transport::recv(void* p, size_t n, size_t* got) {
  n = per_call(n);
  io r;
  if (tls_) {
    r = tls_recv(p, n, got);
  } else {
    iov_iter it;
    iov_iter_ubuf(&it, ITER_DEST, p, n);
    r = received(nbd::recv_iter(fd_, &it, SIZE_MAX, &drained_), got);
  }
  if (r == io::done)
    moved(*got);
  return r;
}

// As many pieces as one recvmsg takes; under TLS the first only (a record
// is decrypted into one buffer at a time).
io transport::recv_iter(iov_iter* it, size_t* got) {
  io r;
  if (tls_) {
    ::iovec first;
    if (!iov_iter_to_iovecs(it, &first, 1, per_call(iov_iter_count(it))))
      return io::error;
    r = tls_recv(first.iov_base, first.iov_len, got);
    if (r == io::done)
      iov_iter_advance(it, *got);
  } else {
    r = received(nbd::recv_iter(fd_, it, per_call(SIZE_MAX), &drained_), got);  // advances it
  }
  if (r == io::done)
    moved(*got);
  return r;
}

uint64_t transport::max_send() const { return tls_ ? per_call(tls_session::kMaxRecord) : UINT64_MAX; }

io transport::send(::iovec* vec, unsigned n, size_t bytes, size_t* taken) {
  *taken = 0;
  if (!tls_) {
    prefetch_reply(vec, n, bytes);
    const ssize_t sent = send_vecs(fd_, vec, n, per_call(bytes));
    if (sent == -EAGAIN)
      return io::again;
    if (sent < 0)
      return io::error;
    *taken = static_cast<size_t>(sent);
    moved(*taken);
    return io::done;
  }
  // The record is copied (so that no lent page is held while the client
  // makes us wait) and given to the session; after `again` the same bytes
  // are given again, as GnuTLS requires.
  if (!record_) {
    record_.reset(new (std::nothrow) unsigned char[tls_session::kMaxRecord]);
    if (!record_) {
      log_event(event::no_memory, "out of memory for a TLS record: connection closed");
      return io::error;
    }
  }
  const size_t record = std::min<uint64_t>(bytes, max_send());
  size_t at = 0;
  for (unsigned k = 0; k < n && at < record; k++) {
    const size_t take = std::min(vec[k].iov_len, record - at);
    std::memcpy(record_.get() + at, vec[k].iov_base, take);
    at += take;
  }
  record_head_ = 0;
  record_len_ = at;
  *taken = at;
  return send_record();
}

io transport::send_record() {
  while (record_len_) {
    size_t sent = 0;
    switch (tls_->send(record_.get() + record_head_, record_len_, &sent)) {
      case tls_io::done:
        break;
      case tls_io::again:
        return io::again;
      case tls_io::eof:
      case tls_io::error:
        return io::error;
    }
    record_head_ += sent;
    record_len_ -= sent;
    moved(sent);
  }
  return io::done;
}

// A large payload or reply that keeps moving is progress too, 64 KiB at a
// time: a slow client is not cut off in the middle of 64 MiB, while one that
// trickles bytes to hold the connection still is.
void transport::moved(size_t n) {
  moved_ += n;
  if (moved_ >= kProgressBytes) {
    progress();
    moved_ = 0;
  }
}

}  // namespace iov::nbd
