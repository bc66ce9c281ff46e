// connection.cc: a connection's socket I/O, its output queue and its limits
// (see connection.hpp); what it says is in handshake.cc and transmission.cc.
//
// Input is received into the connection's buffer as much as fits, so that
// every request header already in the socket is taken in one recv(); output
// is queued and sent by one sendmsg() per batch: the replies of every
// request taken, with the data of each READ lent by the device (or read into
// the window) only for the time of that sendmsg.
#include "nbd/connection.hpp"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
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
constexpr unsigned kMessagesPerRun = 64;      // then the other connections get their turn
constexpr size_t kOutputBytesHigh = 64 * 1024;  // replies queued before they are sent
constexpr uint64_t kDeviceBytesHigh = 1 << 20;  // READ data queued before it is sent
constexpr unsigned kMaxIovecs = 128;            // per sendmsg
constexpr uint64_t kProgressBytes = 64 * 1024;  // moved in a message, they count as progress
constexpr size_t kPrefetchBytes = 256 * 1024;   // under L2: a batch's lines all fit

// The kernel copies a batch's bytes into the socket a line after another, so
// a READ's page that is not in the cache costs a miss at each step. Asking
// for every line first lets the misses of all the batch's pages overlap.
// Above kPrefetchBytes the early lines would be evicted before the copy.
void prefetch_lines(const ::iovec* vec, unsigned n, size_t bytes) {
  if (bytes > kPrefetchBytes)
    return;
  for (unsigned k = 0; k < n; k++)
    for (size_t off = 0; off < vec[k].iov_len; off += 64)
      __builtin_prefetch(static_cast<const char*>(vec[k].iov_base) + off);
}
}  // namespace

connection::connection(int fd, const context& ctx, payload_budget::listener* loop, clock_type::time_point now)
    : fd_(fd), ctx_(ctx), now_(now), accepted_(now), progress_(now) {
  waiter_.to_tell = loop;
  unsigned char hello[kGreetingSize];
  encode_greeting(hello, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
  queue_bytes(hello, sizeof hello);
}

connection::~connection() {
  ctx_.budget.release(&waiter_);
  if (payload_)
    munmap(payload_, piece_length_);
  ::shutdown(fd_, SHUT_RDWR);  // the client sees the end at once, even if a descriptor leaked to a child
  ::close(fd_);
}

connection::next connection::run(clock_type::time_point now) {
  now_ = now;
  try {
    return drive();
  } catch (const std::bad_alloc&) {
    lease_.release();
    log_event(event::no_memory, "out of memory serving a client: its connection is closed");
    return next::close;
  }
}

connection::next connection::drive() {
  for (unsigned handled = 0;;) {
    if (phase_ == phase::tls_handshake) {
      next n = drive_tls_handshake();
      if (phase_ == phase::tls_handshake || n == next::close)
        return n;
      continue;
    }
    if (phase_ == phase::closing) {
      io r = flush();
      return r == io::again ? next::wait : next::close;
    }
    if (output_full()) {
      io r = flush();
      if (r == io::again)
        return next::wait;  // the client is not reading: take nothing more until it does
      if (r == io::error)
        return next::close;
    }
    if (handled == kMessagesPerRun) {
      io r = flush();
      return r == io::error ? next::close : r == io::again ? next::wait : next::yield;
    }
    switch (take_message()) {
      case step::done:
        handled++;
        continue;
      case step::park:
        return flush() == io::error ? next::close : next::park;
      case step::fail:
        return next::close;
      case step::need_input:
        break;
    }
    switch (fill()) {
      case io::done:
        continue;
      case io::eof:
        phase_ = phase::closing;  // a client that half-closes still gets its replies
        continue;
      case io::error:
        return next::close;
      case io::again: {
        io r = flush();  // nothing more to read now: send what the batch produced
        return r == io::error ? next::close : next::wait;
      }
    }
  }
}

// One message from the input, if it is all there.
connection::step connection::take_message() {
  switch (phase_) {
    case phase::client_flags:
      return available() < 4 ? need(4) : on_client_flags();
    case phase::options: {
      if (available() < kOptionHeaderSize)
        return need(kOptionHeaderSize);
      option_header h;
      if (!decode_option_header(input(), &h) || h.length > kMaxOptionLength)
        return step::fail;  // a bad magic; or data no option needs, which may never come
      if (available() < kOptionHeaderSize + h.length)
        return need(kOptionHeaderSize + h.length);
      consume(kOptionHeaderSize);
      const unsigned char* data = input();
      consume(h.length);
      return on_option(h.option, data, h.length);
    }
    case phase::requests: {
      if (available() < request_size())
        return need(request_size());
      request rq;
      if (!(extended_ ? decode_extended_request(input(), &rq) : decode_request(input(), &rq)))
        return step::fail;
      return on_request(rq);
    }
    case phase::payload:
      return continue_payload();
    case phase::tls_handshake:
    case phase::closing:
      break;
  }
  return step::fail;
}

// After STARTTLS's ACK has gone out in plain text: the TLS handshake, as far
// as the socket lets it go; back to the options once it is complete.
connection::next connection::drive_tls_handshake() {
  if (!tls_) {
    io r = flush();
    if (r != io::done)
      return r == io::again ? next::wait : next::close;
    tls_ = ctx_.credentials->start(fd_, ctx_.limits.io_per_call);
    if (!tls_) {
      log_event(event::no_memory, "out of memory for a TLS session: connection closed");
      return next::close;
    }
  }
  switch (tls_->handshake()) {
    case tls_io::done:
      phase_ = phase::options;
      return next::yield;
    case tls_io::again: {
      // GnuTLS holding part of a record reports an end of stream as
      // `again`, and the edge-triggered loop would not wake for it again.
      char c;
      if (!tls_->wants_write() && ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
        return next::close;
      return next::wait;
    }
    case tls_io::eof:
      return next::close;
    case tls_io::error:
      log_event(event::io_error, "a TLS handshake failed (%s): connection closed", tls_->why());
      return next::close;
  }
  return next::close;
}

connection::io connection::tls_fill(void* p, size_t n, size_t* got) {
  switch (tls_->recv(p, n, got)) {
    case tls_io::done:
      return io::done;
    case tls_io::again: {
      char c;  // an end of stream in the middle of a record: see drive_tls_handshake
      return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0 ? io::eof : io::again;
    }
    case tls_io::eof:
      return io::eof;
    case tls_io::error:
      break;
  }
  return io::error;
}

// More input is needed for a message of n bytes: make room for it.
connection::step connection::need(size_t n) {
  if (in_ && in_head_ + n > kInputBuffer) {
    std::memmove(in_.get(), input(), available());
    in_tail_ -= in_head_;
    in_head_ = 0;
  }
  return step::need_input;
}

// One recv(): into the payload being received when nothing else is pending,
// else into the input buffer, as much as fits.
connection::io connection::fill() {
  if (!in_) {
    in_.reset(new (std::nothrow) unsigned char[kInputBuffer]);
    if (!in_) {
      log_event(event::no_memory, "out of memory for a connection's input buffer: connection closed");
      return io::error;
    }
  }
  const bool empty = available() == 0;
  if (empty)
    in_head_ = in_tail_ = 0;
  if (phase_ == phase::payload && pages_.active() && empty)
    return fill_pages();
  const bool direct = phase_ == phase::payload && payload_ && empty;
  void* dst = direct ? static_cast<void*>(static_cast<char*>(payload_) + (payload_received_ - piece_start_))
                     : in_.get() + in_tail_;
  const size_t room =
      per_call(direct ? piece_start_ + piece_length_ - payload_received_ : kInputBuffer - in_tail_);
  iov_iter it;
  iov_iter_ubuf(&it, ITER_DEST, dst, room);
  ssize_t n;
  if (tls_) {
    size_t got = 0;
    if (io r = tls_fill(dst, room, &got); r != io::done)
      return r;
    n = static_cast<ssize_t>(got);
  } else {
    n = recv_iter(fd_, &it);
    if (n == -EAGAIN)
      return io::again;
    if (n == 0)
      return io::eof;
    if (n < 0)
      return io::error;
  }
  if (empty && phase_ == phase::requests && seg_count_ == 0)
    progress();  // the first bytes of a request after a pause: its timeout counts from here
  if (direct)
    payload_received_ += static_cast<size_t>(n);
  else
    in_tail_ += static_cast<size_t>(n);
  moved(static_cast<size_t>(n));
  return io::done;
}

// A payload's bytes straight into the pages the device will keep: as many
// as the socket has, over as many pages as one recvmsg takes.
connection::io connection::fill_pages() {
  iov_iter* rest = pages_.rest();
  size_t n = 0;
  if (tls_) {
    ::iovec first;
    if (!iov_iter_to_iovecs(rest, &first, 1, per_call(iov_iter_count(rest))))
      return io::error;
    if (io r = tls_fill(first.iov_base, first.iov_len, &n); r != io::done)
      return r;
    iov_iter_advance(rest, n);
  } else {
    const ssize_t got = recv_iter(fd_, rest, per_call(SIZE_MAX));  // advances rest
    if (got == -EAGAIN)
      return io::again;
    if (got <= 0)
      return got == 0 ? io::eof : io::error;
    n = static_cast<size_t>(got);
  }
  payload_received_ += n;
  moved(n);
  return io::done;
}

// --- Output -------------------------------------------------------------------

void connection::queue_bytes(const void* p, size_t n) {
  if (!n)
    return;
  const unsigned char* b = static_cast<const unsigned char*>(p);
  out_.insert(out_.end(), b, b + n);
  if (seg_count_) {
    segment& last = segs_[(seg_first_ + seg_count_ - 1) % kMaxSegments];
    if (!last.device) {
      last.length += n;
      return;
    }
  }
  segs_[(seg_first_ + seg_count_++) % kMaxSegments] = {n, 0, false};
}

void connection::queue_device(uint64_t offset, uint64_t length) {
  segs_[(seg_first_ + seg_count_++) % kMaxSegments] = {length, offset, true};
  queued_device_bytes_ += length;
}

// Time to send before taking another request: room for one more reply's
// segments, and not too much waiting.
bool connection::output_full() const {
  return seg_count_ + kReplySegments > kMaxSegments || out_.size() - out_head_ >= kOutputBytesHigh ||
         queued_device_bytes_ >= kDeviceBytesHigh;
}

void connection::consume_output(size_t n) {
  while (n) {
    segment& s = segs_[seg_first_];
    const uint64_t take = std::min<uint64_t>(n, s.length - seg_sent_);
    if (s.device)
      queued_device_bytes_ -= take;
    else
      out_head_ += take;
    seg_sent_ += take;
    n -= take;
    if (seg_sent_ == s.length) {
      if (s.device)
        window_length_ = 0;  // the window held this READ's data only
      seg_first_ = (seg_first_ + 1) % kMaxSegments;
      seg_count_--;
      seg_sent_ = 0;
    }
  }
  if (out_head_ == out_.size()) {
    out_.clear();
    out_head_ = 0;
  } else if (out_head_ >= kOutputBytesHigh) {
    out_.erase(out_.begin(), out_.begin() + static_cast<ptrdiff_t>(out_head_));
    out_head_ = 0;
  }
}

// The iovecs of device bytes from pos to at most seg_end (its segment's
// end), appended to vec: lent (lease_) or from the window, read now if it
// does not hold pos. False on a device error. The device is only ever asked
// for whole logical blocks: from the block holding pos to the block boundary
// at or past seg_end (a READ of any bytes, from a client that negotiated no
// block size, is served from its covering blocks), or past pos + want, or to
// a window's end, whichever is first. What it gives may be more than want;
// the transport takes what it can.
bool connection::gather_device(uint64_t pos, uint64_t seg_end, uint64_t want, ::iovec* vec, unsigned max,
                               unsigned* n, size_t* bytes) {
  const uint64_t lbs = ctx_.dev.limits().logical_block_size;
  const uint64_t start = pos / lbs * lbs, block_end = (seg_end + lbs - 1) / lbs * lbs;
  if (ctx_.lends) {
    // No more pages than vec has room for, and no further than want asks.
    const uint64_t room = uint64_t{max - *n} * PAGE_SIZE;
    const uint64_t end =
        std::min({block_end, (pos + std::min(want, room) + lbs - 1) / lbs * lbs, (pos + room) / lbs * lbs});
    if (end <= start)
      return true;  // vec is full: the rest goes in the next call
    const size_t from = lease_.pieces().size();
    if (ctx_.dev.lend_pages(start >> SECTOR_SHIFT, (end - start) >> SECTOR_SHIFT, &lease_) != 0)
      return false;
    uint64_t skip = pos - start, left = std::min(end, seg_end) - pos;
    for (size_t k = from; k < lease_.pieces().size() && *n < max && left; k++) {
      const bio_vec& bv = lease_.pieces()[k];
      if (skip >= bv.bv_len) {
        skip -= bv.bv_len;
        continue;
      }
      // bvec_virt, not kmap_local_page: pages are mapped for good (no
      // highmem), so the address stays valid until the sendmsg, as long as
      // the lease does.
      const size_t len = std::min<uint64_t>(bv.bv_len - skip, left);
      vec[(*n)++] = {bvec_virt(&bv) + skip, len};
      skip = 0;
      left -= len;
      *bytes += len;
    }
    return true;
  }
  if (pos < window_offset_ || pos >= window_offset_ + window_length_) {
    const uint64_t end = std::min<uint64_t>(block_end, start + kReadWindow);  // kReadWindow: whole blocks
    iov_iter it;
    iov_iter_ubuf(&it, ITER_DEST, window_.get(), end - start);
    blk_request br{.op = REQ_OP_READ, .sector = start >> SECTOR_SHIFT, .iter = &it};
    window_length_ = 0;
    if (ctx_.dev.submit(br) != 0)
      return false;
    window_offset_ = start;
    window_length_ = end - start;
  }
  const size_t at = pos - window_offset_;
  vec[(*n)++] = {window_.get() + at, std::min<uint64_t>(seg_end - pos, window_length_ - at)};
  *bytes += vec[*n - 1].iov_len;
  return true;
}

// The iovecs of the queue's first bytes, want of them or more (whole device
// blocks past it): the bytes segments, and device data lent or read into
// the window (one window's worth at most). False on a device error
// (logged; nothing held).
bool connection::gather_output(::iovec* vec, unsigned* n, size_t* bytes, uint64_t want) {
  *n = 0;
  *bytes = 0;
  size_t at = out_head_;
  bool window_used = false;
  for (unsigned k = 0; k < seg_count_ && *n < kMaxIovecs && *bytes < want; k++) {
    const segment& s = segs_[(seg_first_ + k) % kMaxSegments];
    const uint64_t skip = k == 0 ? seg_sent_ : 0, len = s.length - skip;
    if (!s.device) {
      vec[(*n)++] = {out_.data() + at, len};
      *bytes += len;
      at += len;
      continue;
    }
    if (!ctx_.lends && window_used)
      break;  // one window per call
    window_used = true;
    const size_t before = *bytes;
    if (!gather_device(s.offset + skip, s.offset + s.length, want - *bytes, vec, kMaxIovecs, n, bytes)) {
      lease_.release();
      log_event(event::io_error, "a device error while sending READ data: connection closed");
      return false;
    }
    if (*bytes - before < len)
      break;  // the rest of this segment goes in the next call
  }
  return true;
}

// Sends the queue, one sendmsg() of gather_output's vector at a time, until
// it is empty (done) or the socket is full (again). Lent pages are held for
// one sendmsg only: what the socket does not take (a short send) is lent
// again for the next.
connection::io connection::flush() {
  if (tls_)
    return tls_flush();
  while (seg_count_) {
    ::iovec vec[kMaxIovecs];
    unsigned n;
    size_t bytes;
    if (!gather_output(vec, &n, &bytes, UINT64_MAX))
      return io::error;
    prefetch_lines(vec, n, bytes);
    const ssize_t sent = send_vecs(fd_, vec, n, per_call(bytes));
    lease_.release();  // never held while the client makes us wait
    if (sent == -EAGAIN)
      return io::again;
    if (sent < 0)
      return io::error;
    consume_output(static_cast<size_t>(sent));
    moved(static_cast<size_t>(sent));
  }
  return io::done;
}

// Under TLS: a record's worth of the queue at a time is copied into tls_out_
// (so that no lent page is held while the client makes us wait) and given
// to the session; after `again` the same bytes are given again.
connection::io connection::tls_flush() {
  for (;;) {
    if (tls_out_len_ == 0) {
      if (!seg_count_)
        return io::done;
      if (!tls_out_) {
        tls_out_.reset(new (std::nothrow) unsigned char[tls_session::kMaxRecord]);
        if (!tls_out_) {
          log_event(event::no_memory, "out of memory for a TLS record: connection closed");
          return io::error;
        }
      }
      ::iovec vec[kMaxIovecs];
      unsigned n;
      size_t bytes;
      const size_t record = per_call(tls_session::kMaxRecord);
      if (!gather_output(vec, &n, &bytes, record))
        return io::error;
      // The record takes the first `record` bytes; the rest is gathered again.
      size_t at = 0;
      for (unsigned k = 0; k < n && at < record; k++) {
        const size_t take = std::min(vec[k].iov_len, record - at);
        std::memcpy(tls_out_.get() + at, vec[k].iov_base, take);
        at += take;
      }
      lease_.release();
      consume_output(at);
      tls_out_head_ = 0;
      tls_out_len_ = at;
    }
    size_t sent = 0;
    switch (tls_->send(tls_out_.get() + tls_out_head_, tls_out_len_, &sent)) {
      case tls_io::done:
        break;
      case tls_io::again:
        return io::again;
      case tls_io::eof:
      case tls_io::error:
        return io::error;
    }
    tls_out_head_ += sent;
    tls_out_len_ -= sent;
    moved(sent);
  }
}

// --- Limits -------------------------------------------------------------------

// A large payload or reply that keeps moving is progress too, 64 KiB at a
// time: a slow client is not cut off in the middle of 64 MiB, while one that
// trickles bytes to hold the connection still is.
void connection::moved(size_t n) {
  moved_ += n;
  if (moved_ >= kProgressBytes) {
    progress();
    moved_ = 0;
  }
}

bool connection::expired(clock_type::time_point now, const char** why) const {
  const server_limits& l = ctx_.limits;
  auto past = [now](clock_type::time_point since, unsigned seconds) {
    return seconds && now - since >= std::chrono::seconds(seconds);
  };
  if (phase_ == phase::client_flags || phase_ == phase::options || phase_ == phase::tls_handshake) {
    *why = "the handshake took longer than --handshake-timeout";
    return past(accepted_, l.handshake_timeout);
  }
  if (parked_)
    return false;  // the server's wait, not the client's
  const bool busy = available() || seg_count_ || phase_ != phase::requests;
  *why = busy ? "a request or its reply stalled for longer than --request-timeout"
              : "idle for longer than --idle-timeout";
  return past(progress_, busy ? l.request_timeout : l.idle_timeout);
}

}  // namespace iov::nbd
