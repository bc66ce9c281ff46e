// transport.hpp: one connection's socket, in plain text or, once STARTTLS is
// acknowledged, through its TLS session: bytes in (into a buffer, or into an
// iterator's pieces), a gathered vector out, each call moving at most what
// the test knob server_limits::io_per_call allows, and the progress the
// request timeout measures. Every call returns at once: `again` says the
// socket would block.
//
//   transport t(fd, limits, now);
//   size_t got;
//   if (t.recv(buf, sizeof buf, &got) == io::done) ...;
//   size_t taken;
//   io r = t.send(vec, n, bytes, &taken);   // the first `taken` bytes are the transport's now
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "iov/iov_iter.hpp"
#include "nbd/config.hpp"
#include "nbd/context.hpp"
#include "nbd/tls.hpp"

namespace iov::nbd {

// What a socket call did.
enum class io : uint8_t { done, again, eof, error };

class transport {
 public:
  // Takes the socket (non-blocking).
  transport(int fd, const server_limits& limits, clock_type::time_point now)
      : fd_(fd), limits_(limits), now_(now), progress_(now) {}
  ~transport();  // shuts the socket down and closes it
  transport(const transport&) = delete;
  transport& operator=(const transport&) = delete;

  int fd() const { return fd_; }

  // TLS: a session started on the socket (false without memory), then its
  // handshake advanced as far as the socket lets it (error: logged).
  bool start_tls(const tls_credentials& credentials);
  bool tls() const { return tls_ != nullptr; }
  io tls_handshake();
  // The session's last `again` waited to write.
  bool wants_write() const;

  // At most n bytes into p; *got how many (done only).
  io recv(void* p, size_t n, size_t* got);
  // Into the next pieces of an ITER_DEST iterator, advanced by *got.
  io recv_iter(iov_iter* it, size_t* got);

  // The most bytes one send() takes: a TLS record, else no limit.
  uint64_t max_send() const;
  // Takes the first bytes of vec[0, n) (`bytes` in all, the vector
  // shortened in place where a call's limit falls): *taken of them, which
  // the caller may then forget. In plain text what one sendmsg sent; under
  // TLS a record's worth, copied and held (holds_record()) until the
  // session has sent it: `again` may come with *taken set.
  io send(::iovec* vec, unsigned n, size_t bytes, size_t* taken);
  // Sends the record held, if any: done once there is none.
  io send_record();
  bool holds_record() const { return record_len_ != 0; }

  // The socket held no more than the last recv took (in plain text: it
  // took less than it had room for), until the next run: the event loop
  // wakes the connection again when more comes (edge-triggered), so a recv
  // now would only return EAGAIN. Under TLS never: a short record says
  // nothing of what the socket holds. Nor once the peer has hung up: the
  // end of the stream may already be there behind the bytes taken, its
  // edge spent on the wake-up that brought them.
  bool drained() const { return drained_ && !hung_up_; }
  // The event loop saw the peer hang up (EPOLLRDHUP, EPOLLHUP, EPOLLERR).
  void hung_up() { hung_up_ = true; }

  // A run of the connection begins at `now`: the socket may hold input
  // again. Deadlines: the time of this run, and of the last progress (a
  // request done, the handshake done, or 64 KiB moved either way).
  void start_run(clock_type::time_point now) {
    now_ = now;
    drained_ = false;
  }
  void progress() { progress_ = now_; }
  clock_type::time_point last_progress() const { return progress_; }

 private:
  // n, or less under the test knob server_limits::io_per_call.
  size_t per_call(size_t n) const { return limits_.io_per_call && limits_.io_per_call < n ? limits_.io_per_call : n; }
  io tls_recv(void* p, size_t n, size_t* got);
  void moved(size_t n);

  int fd_;
  const server_limits& limits_;
  clock_type::time_point now_, progress_;
  uint64_t moved_ = 0;  // bytes received or sent since progress_
  bool drained_ = false, hung_up_ = false;

  std::unique_ptr<tls_session> tls_;
  // Under TLS, the plaintext of the record taken and not yet sent.
  std::unique_ptr<unsigned char[]> record_;
  size_t record_head_ = 0, record_len_ = 0;
};

}  // namespace iov::nbd
