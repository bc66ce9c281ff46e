// input_buffer.cc: see input_buffer.hpp.
#include "nbd/input_buffer.hpp"

#include <cstring>
#include <new>

#include "nbd/log.hpp"

namespace iov::nbd {

step input_buffer::need(size_t n) {
  if (buf_ && head_ + n > kSize) {
    std::memmove(buf_.get(), data(), available());
    tail_ -= head_;
    head_ = 0;
  }
  return step::need_input;
}

io input_buffer::fill(transport& t) {
  if (!buf_) {
    buf_.reset(new (std::nothrow) unsigned char[kSize]);
    if (!buf_) {
      log_event(event::no_memory, "out of memory for a connection's input buffer: connection closed");
      return io::error;
    }
  }
  if (available() == 0)
    head_ = tail_ = 0;
  size_t got = 0;
  const io r = t.recv(buf_.get() + tail_, kSize - tail_, &got);
  if (r == io::done)
    tail_ += got;
  return r;
}

}  // namespace iov::nbd
