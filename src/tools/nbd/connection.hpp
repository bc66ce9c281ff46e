// connection.hpp: one NBD client, a state machine over a non-blocking socket
// that its event loop (event_loop.hpp) runs whenever the socket is ready.
// It owns its parts and moves from one phase to the next:
//   - transport.hpp: the socket, plain or TLS, and the progress deadlines read;
//   - input_buffer.hpp: the bytes received and not yet taken;
//   - output_queue.hpp: the replies not yet sent (header bytes, and READ
//     data lent by the device for one send at a time);
//   - handshake.hpp: the negotiation, which produces `negotiated`;
//   - transmission.hpp: the requests, built from `negotiated` once the
//     handshake ends (write_payload.hpp and block_writer.hpp its parts).
//
// What a connection holds, whatever its client does:
//   - its input buffer (input_buffer::kSize): options, request headers and
//     payloads up to kInlinePayload, several at a time as they arrive;
//   - its replies not yet sent, bounded: it takes no further request while
//     the client leaves them unread;
//   - no READ data: a READ's bytes are lent by the device for one sendmsg at
//     a time and lent again for the next (brd), or read a window
//     (output_queue::kReadWindow) at a time into its own window buffer
//     (null_blk);
//   - of a WRITE payload above kInlinePayload, one piece (context::piece,
//     4 MiB) at a time, once the shared budget (budget.hpp) has reserved it
//     (write_payload.hpp).
//
//   connection c(fd, ctx, loop, now);
//   switch (c.run(now)) { case connection::next::wait: ...; case connection::next::close: ... }
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "nbd/budget.hpp"
#include "nbd/context.hpp"
#include "nbd/handshake.hpp"
#include "nbd/input_buffer.hpp"
#include "nbd/output_queue.hpp"
#include "nbd/page_recycle.hpp"
#include "nbd/transmission.hpp"
#include "nbd/transport.hpp"

namespace iov::nbd {

class connection {
 public:
  // What the event loop does next with the connection.
  enum class next : uint8_t {
    wait,   // the socket would block: run again at its next readiness (edge-triggered)
    yield,  // more to do: run again after the others
    park,   // waiting for payload memory: run again once budget_granted()
    close,  // done: destroy it
  };

  // Takes the socket (non-blocking) and queues the greeting. `recycler`:
  // the event loop's, for the pages of inline WRITEs (nullptr: none).
  connection(int fd, const context& ctx, payload_budget::listener* loop, clock_type::time_point now,
             page_recycler* recycler = nullptr);
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // Runs until the socket would block, the connection must wait for memory,
  // has had its turn, or is done. Never throws.
  next run(clock_type::time_point now);
  // Past a deadline (handshake, idle or request timeout)? *why names it.
  bool expired(clock_type::time_point now, const char** why) const;
  // Replies are queued that the socket did not take: the loop then also
  // waits for it to be writable.
  bool output_pending() const {
    return !out_.empty() || transport_.holds_record() || (phase_ == phase::tls_handshake && transport_.wants_write());
  }
  // Parked waiting for payload memory, which has now been granted.
  bool ready_after_park() const { return transmission_ && transmission_->ready_after_park(); }

  int fd() const { return transport_.fd(); }
  // The event loop saw the peer hang up: read until the end of the stream.
  void hung_up() { transport_.hung_up(); }

  // The event loop's bookkeeping: its index in the loop's table, whether it
  // is queued to run again after a yield, and whether it waits to write.
  size_t slot = 0;
  bool yielded = false;
  bool polls_out = false;  // registered for EPOLLOUT

 private:
  enum class phase : uint8_t { handshake, tls_handshake, transmission, closing };

  next drive();
  next drive_tls_handshake();
  step take_message();
  io fill();

  const context& ctx_;
  payload_budget::listener* const loop_;
  page_recycler* const recycler_;
  const clock_type::time_point accepted_;
  phase phase_ = phase::handshake;
  // Destroyed after the parts below: the socket closes once they have
  // given back what they hold.
  transport transport_;
  input_buffer in_;
  output_queue out_;
  std::optional<handshake> handshake_;        // until transmission begins
  std::optional<transmission> transmission_;  // from then on
};

}  // namespace iov::nbd
