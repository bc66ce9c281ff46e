// input_buffer.hpp: a connection's received bytes not yet taken: options,
// request headers and payloads up to kInlinePayload, several at a time as
// they arrive, so that every message already in the socket is taken in one
// recv(). Also what taking a message from it did (step), for the handshake
// and transmission alike.
//
//   input_buffer in;
//   if (in.available() < n) { in.need(n); in.fill(t); }   // t: the transport
//   parse(in.data()); in.consume(n);
#pragma once

#include <cstddef>
#include <memory>

#include "nbd/transport.hpp"

namespace iov::nbd {

// What taking one message from the input did.
enum class step : uint8_t {
  done,        // taken and answered (or queued to be)
  need_input,  // not all there yet
  park,        // waiting for payload memory (payload_budget)
  fail,        // malformed beyond repair: close the connection
  close,       // the last message: send what is queued, then close
};

class input_buffer {
 public:
  static constexpr size_t kSize = 128 * 1024;  // > an option's header and data, or an inline WRITE

  size_t available() const { return tail_ - head_; }
  const unsigned char* data() const { return buf_.get() + head_; }
  void consume(size_t n) { head_ += n; }
  // More input is needed for a message of n bytes: room is made for it.
  step need(size_t n);
  // One recv() into the room after the bytes held, as much as fits (the
  // buffer allocated at the first). error without memory (logged).
  io fill(transport& t);

 private:
  std::unique_ptr<unsigned char[]> buf_;
  size_t head_ = 0, tail_ = 0;  // bytes [head_, tail_) are received, not yet taken
};

}  // namespace iov::nbd
