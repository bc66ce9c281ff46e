// connection.hpp: one NBD client, from the fixed newstyle handshake through
// transmission, served on the calling thread. Requests are executed in order
// on the shared device; several connections may serve one device at once
// (the export advertises CAN_MULTI_CONN: the drivers are one coherent memory).
//
//   iov::nbd::connection c(fd, device, {.read_only = false});
//   c.serve();   // returns when the client leaves, breaks the protocol, or stop() is called
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "iov_drivers/blkdev.hpp"
#include "nbd/protocol.hpp"

namespace iov::nbd {

struct export_options {
  bool read_only = false;
  std::string name = "";           // what NBD_OPT_LIST reports; any name is served
  std::string description = "iov";
};

class connection {
 public:
  connection(int fd, blkdev& dev, const export_options& opts);
  // Serves until the client disconnects or misbehaves; closes nothing.
  void serve();

  // What the handshake agreed, for tests.
  bool structured_replies() const { return structured_; }

 private:
  enum class phase { options, transmission, closed };
  phase handshake();
  phase handle_option(uint32_t option, const std::vector<unsigned char>& data);
  phase handle_info_or_go(uint32_t option, const std::vector<unsigned char>& data);
  phase handle_meta_context(uint32_t option, const std::vector<unsigned char>& data);
  bool send_export_info_reply(uint32_t option);
  bool transmission();
  bool handle_request(const request& rq);

  bool reply_option(uint32_t option, uint32_t type, const void* data = nullptr, uint32_t len = 0);
  bool reply_ok(const request& rq);
  bool reply_error(const request& rq, uint32_t error, const char* message);
  bool reply_read(const request& rq);
  size_t read_reply_header(const request& rq, unsigned char (&head)[28]) const;
  bool reply_block_status(const request& rq);

  bool recv_full(void* buf, size_t len);
  bool send_all(const ::iovec* iov, unsigned n);
  bool send_iter(iov_iter* it, int flags);
  uint16_t transmission_flags() const;

  int fd_;
  blkdev& dev_;
  export_options opts_;
  bool no_zeroes_ = false;
  bool structured_ = false;
  bool meta_allocation_ = false;
  std::vector<unsigned char> buffer_;  // a WRITE's payload, a READ's data: per connection
  std::vector<::iovec> lent_;          // a READ's reply: the header, then the lent pages
};

}  // namespace iov::nbd
