// handshake.hpp: the fixed newstyle negotiation of one connection: the
// client's flags, then its options one at a time, each answered before the
// next is taken, until one ends it (GO or EXPORT_NAME: transmission; ABORT
// or a fault without an error reply: the end). It produces what
// transmission (transmission.hpp) is then built from: `negotiated`. After
// STARTTLS's ACK the connection runs the TLS handshake and calls
// tls_started(); the options then start afresh, under TLS.
//
//   handshake h(ctx, out);   // queues the greeting
//   switch (h.take(in)) { case step::done: if (h.where() == handshake::state::transmission) ...; }
#pragma once

#include <cstdint>

#include "nbd/context.hpp"
#include "nbd/input_buffer.hpp"
#include "nbd/output_queue.hpp"

namespace iov::nbd {

// What the handshake settled, for transmission. There is one export: any
// name the client gives is it.
struct negotiated {
  bool no_zeroes = false;
  bool structured = false;  // structured replies, or extended (which are structured too)
  bool extended = false;    // extended headers
  bool meta_allocation = false;
  bool any_offset = false;  // no block size negotiated: any offset and length (minimum block size 1)
};

class handshake {
 public:
  enum class state : uint8_t {
    client_flags,
    options,
    starttls,      // STARTTLS acknowledged: the TLS handshake comes next
    transmission,  // negotiated: result() holds what
  };

  // Queues the greeting.
  handshake(const context& ctx, output_queue& out);
  handshake(const handshake&) = delete;
  handshake& operator=(const handshake&) = delete;

  // One message from in, if it is all there, answered into the output
  // queue: done (where() says what comes next), need_input, fail, or close
  // (the negotiation ended without transmission).
  step take(input_buffer& in);
  state where() const { return state_; }
  // The TLS handshake after STARTTLS is complete: the options again.
  void tls_started() {
    tls_ = true;
    state_ = state::options;
  }
  const negotiated& result() const { return neg_; }

 private:
  step on_client_flags(input_buffer& in);
  step handle_option(uint32_t option, const unsigned char* data, uint32_t len, const input_buffer& in);
  step handle_info_or_go(uint32_t option, const unsigned char* data, uint32_t len);
  step handle_starttls(uint32_t option, uint32_t len, const input_buffer& in);
  step handle_meta_context(uint32_t option, const unsigned char* data, uint32_t len);
  void reply_option(uint32_t option, uint32_t type, const void* data = nullptr, uint32_t len = 0);
  void reply_export_info(uint32_t option);
  uint16_t transmission_flags() const;

  const context& ctx_;
  output_queue& out_;
  state state_ = state::client_flags;
  bool tls_ = false;  // the options now come under TLS
  negotiated neg_;
};

}  // namespace iov::nbd
