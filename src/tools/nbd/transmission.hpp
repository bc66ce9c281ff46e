// transmission.hpp: one connection's requests and their replies, built from
// what its handshake negotiated (handshake.hpp). Requests are executed in
// order on the shared device; several connections may serve one device at
// once (the export advertises CAN_MULTI_CONN: the drivers are one coherent
// memory). Every request is checked before it reaches the device; a refused
// one gets the protocol's error, a WRITE's payload consumed first whatever
// becomes of it. Replies are queued (output_queue.hpp) and go out with the
// next flush; a READ queues its header and the range of the device, whose
// bytes are taken when sent, so that it holds no READ data while it waits.
//
//   transmission tx(ctx, hs.result(), t, in, out, loop);
//   step s = tx.take();        // need_input: tx.fill(), then take() again
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nbd/block_writer.hpp"
#include "nbd/context.hpp"
#include "nbd/handshake.hpp"
#include "nbd/input_buffer.hpp"
#include "nbd/output_queue.hpp"
#include "nbd/page_payload.hpp"
#include "nbd/protocol.hpp"
#include "nbd/transport.hpp"
#include "nbd/write_payload.hpp"

namespace iov::nbd {

class transmission {
 public:
  static constexpr size_t kMaxReadRuns = 16;  // chunks of one structured READ reply (data or hole)

  // The connection's transport, input and output, which outlive it; `loop`
  // is told when payload memory this connection waits for is granted;
  // `recycler` (its event loop's, or nullptr) gives an inline WRITE's pages.
  transmission(const context& ctx, const negotiated& neg, transport& t, input_buffer& in, output_queue& out,
               payload_budget::listener* loop, page_recycler* recycler = nullptr);
  ~transmission();
  transmission(const transmission&) = delete;
  transmission& operator=(const transmission&) = delete;

  // The next request from the input, or the next part of a large WRITE's
  // payload: done, need_input, park (payload memory), fail (a bad magic, a
  // payload beyond the maximum), or close (NBD_CMD_DISC).
  step take();
  // One receive: straight into a large WRITE's piece when the input holds
  // nothing else, else into the input.
  io fill();

  bool parked() const { return large_.parked(); }
  bool ready_after_park() const { return large_.ready_after_park(); }
  // In the middle of a large WRITE's payload.
  bool mid_payload() const { return in_payload_; }

 private:
  size_t request_size() const { return neg_.extended ? kExtendedRequestSize : kRequestSize; }
  bool carries_payload(const request& rq) const;
  void prefetch_ahead();
  step on_request(const request& rq);
  void finish_payload();
  uint32_t refusal(const request& rq, const char** message) const;
  void handle_request(const request& rq, const void* payload);
  void handle_write(const request& rq, const void* payload);
  void handle_write_zeroes(const request& rq);
  void queue_read(const request& rq);
  size_t read_runs(const request& rq);
  void queue_chunk_header(const request& rq, uint16_t flags, uint16_t type, uint32_t length);
  void reply_block_status(const request& rq);
  bool submit_or_reply(const request& rq, blk_request& br, const char* what, bool optional = false);
  void reply_ok(const request& rq);
  void reply_error(const request& rq, uint32_t error, const char* message);

  const context& ctx_;
  const negotiated neg_;
  transport& t_;
  input_buffer& in_;
  output_queue& out_;
  block_writer writer_;
  write_payload large_;      // a WRITE above kInlinePayload
  bool in_payload_ = false;  // receiving large_
  page_payload pages_;       // an inline WRITE's, for the moment of its copy
  unsigned ahead_ = 0;       // requests in the input from the next one whose lookups were asked for
  // A READ's runs of data and zeros, and the extents they come from (kept
  // for their capacity).
  struct read_run {
    uint64_t offset, length;
    bool zero;
  };
  std::vector<read_run> runs_;
  std::vector<blk_extent> extents_;
};

}  // namespace iov::nbd
