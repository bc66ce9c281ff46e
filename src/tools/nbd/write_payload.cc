// write_payload.cc: see write_payload.hpp.
#include "nbd/write_payload.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "nbd/log.hpp"

namespace iov::nbd {

write_payload::write_payload(const context& ctx, block_writer& writer, payload_budget::listener* loop)
    : ctx_(ctx), writer_(writer) {
  waiter_.to_tell = loop;
}

write_payload::~write_payload() {
  ctx_.budget.release(&waiter_);
  if (payload_)
    munmap(payload_, piece_length_);
}

step write_payload::start(const request& rq, uint32_t error, const char* message, input_buffer& in) {
  pending_ = rq;
  received_ = 0;
  piece_start_ = piece_length_ = 0;
  error_ = error;
  message_ = message;
  return next_piece(in);
}

// The next piece: up to the next multiple of ctx_.piece on the device (a
// whole number of blocks and pages), so that only the payload's own ends
// can be partial blocks.
step write_payload::next_piece(input_buffer& in) {
  piece_start_ = received_;
  const uint64_t at = pending_.offset + piece_start_, end = pending_.offset + pending_.length;
  piece_length_ = std::min(end, (at / ctx_.piece + 1) * ctx_.piece) - at;
  if (!error_) {
    switch (ctx_.budget.acquire(&waiter_, piece_length_)) {
      case payload_budget::granted:
        break;
      case payload_budget::queued:
        parked_ = true;
        return step::park;
      case payload_budget::too_big:
        error_ = NBD_ENOMEM;
        message_ = "the payload is larger than the server's payload memory";
        break;
    }
  }
  return resume(in);
}

step write_payload::resume(input_buffer& in) {
  if (parked_) {
    if (!waiter_.granted())
      return step::park;
    parked_ = false;
  }
  const uint64_t at = pending_.offset + piece_start_;
  const bool aligned = ctx_.block_aligned(pending_.offset, pending_.length);
  if (!error_ && !payload_ && !pages_.active() && ctx_.replaces && aligned && !pages_.prepare(at, piece_length_))
    log_event(event::no_memory, "out of memory for the pages of a %llu-byte WRITE payload: received into a mapping",
              static_cast<unsigned long long>(piece_length_));
  if (!error_ && !payload_ && !pages_.active()) {
    // Mapped, not touched: pages come as the bytes arrive.
    void* p = mmap(nullptr, piece_length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      log_event(event::no_memory, "out of memory for a %llu-byte WRITE payload: refused with ENOMEM",
                static_cast<unsigned long long>(piece_length_));
      ctx_.budget.release(&waiter_);
      error_ = NBD_ENOMEM;
      message_ = "out of memory for the payload";
    } else {
      payload_ = p;
    }
  }
  const uint64_t take = std::min<uint64_t>(in.available(), piece_start_ + piece_length_ - received_);
  if (pages_.active())
    pages_.fill(in.data(), take);
  else if (payload_)
    std::memcpy(static_cast<char*>(payload_) + (received_ - piece_start_), in.data(), take);
  in.consume(take);
  received_ += take;
  if (received_ < piece_start_ + piece_length_)
    return step::need_input;
  finish_piece();
  if (received_ < pending_.length)
    return next_piece(in);
  return step::done;
}

// The bytes straight into the piece's memory: the pages the device will
// keep, as many as one receive takes, or the mapping.
io write_payload::receive(transport& t) {
  size_t got = 0;
  io r;
  if (pages_.active())
    r = t.recv_iter(pages_.rest(), &got);  // advances rest()
  else
    r = t.recv(static_cast<char*>(payload_) + (received_ - piece_start_), piece_start_ + piece_length_ - received_,
               &got);
  if (r == io::done)
    received_ += got;
  return r;
}

// A piece received: written (unless the WRITE already failed), its memory
// and its reservation given back.
void write_payload::finish_piece() {
  const uint64_t at = pending_.offset + piece_start_;
  const unsigned flags = pending_.flags & NBD_CMD_FLAG_FUA ? REQ_FUA : 0u;
  const char* why = nullptr;
  int err = 0;
  if (!error_ && pages_.active())
    err = writer_.commit(pages_, at, piece_length_, flags, &why);
  else if (!error_)
    err = writer_.write(at, piece_length_, static_cast<const unsigned char*>(payload_), flags, &why);
  if (err) {
    error_ = nbd_errno(err);
    message_ = why ? why : "write failed";
  }
  pages_.reset();
  if (payload_)
    munmap(payload_, piece_length_);
  payload_ = nullptr;
  ctx_.budget.release(&waiter_);
}

}  // namespace iov::nbd
