// write_payload.hpp: the payload of a WRITE above kInlinePayload, received
// before anything else of its connection, a piece (context::piece, 4 MiB)
// at a time: into memory the shared budget (budget.hpp) has reserved for
// that piece (parked, reading nothing, until then), or drained if the
// request is refused anyway. The memory is allocated once reserved: pages
// the device will keep (page_payload.hpp), received into directly, or, for
// a device that copies, a mapping filled (so allocated) as the bytes
// arrive. Each piece is written when it is complete and its memory given
// back, so no connection holds more than a piece, however large its WRITE;
// a WRITE of one piece reaches the device whole or not at all.
//
//   write_payload p(ctx, writer, loop);
//   step s = p.start(rq, refusal, why, in);    // then p.resume(in) / p.receive(t) until done
//   if (s == step::done) reply(p.rq(), p.error(), p.message());
#pragma once

#include <cstdint>

#include "nbd/block_writer.hpp"
#include "nbd/budget.hpp"
#include "nbd/context.hpp"
#include "nbd/input_buffer.hpp"
#include "nbd/page_payload.hpp"
#include "nbd/protocol.hpp"
#include "nbd/transport.hpp"

namespace iov::nbd {

class write_payload {
 public:
  // `loop` is told when a reservation this payload waits for is granted.
  write_payload(const context& ctx, block_writer& writer, payload_budget::listener* loop);
  ~write_payload();  // gives back the reservation and the piece's memory
  write_payload(const write_payload&) = delete;
  write_payload& operator=(const write_payload&) = delete;

  // Starts on rq's payload, which follows in the input; `error` (with
  // `message`), when not 0, is the protocol's refusal of rq: its payload is
  // then drained. done once the whole payload is received and written (or
  // drained), need_input, or park.
  step start(const request& rq, uint32_t error, const char* message, input_buffer& in);
  // Takes what the input holds of the payload: as start().
  step resume(input_buffer& in);
  // One receive straight into the piece's memory, for when the input holds
  // nothing; false when there is none (draining: receive into the input).
  bool receives_directly() const { return payload_ || pages_.active(); }
  io receive(transport& t);

  bool parked() const { return parked_; }
  bool ready_after_park() const { return parked_ && waiter_.granted(); }
  // Once done: the request, and its error (0: written) with why.
  const request& rq() const { return pending_; }
  uint32_t error() const { return error_; }
  const char* message() const { return message_; }

 private:
  step next_piece(input_buffer& in);
  void finish_piece();

  const context& ctx_;
  block_writer& writer_;
  // The piece is bytes [piece_start_, piece_start_ + piece_length_) of the
  // payload: into pages_ when the device takes whole pages, else into
  // payload_.
  request pending_{};
  uint64_t received_ = 0;
  uint64_t piece_start_ = 0, piece_length_ = 0;
  void* payload_ = nullptr;  // the piece, mmap()ed when its reservation is granted; nullptr: drained
  page_payload pages_;
  uint32_t error_ = 0;  // the reply once drained (refused, no memory)
  const char* message_ = nullptr;
  bool parked_ = false;
  payload_budget::waiter waiter_;
};

}  // namespace iov::nbd
