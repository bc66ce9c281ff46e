// connection.hpp: one NBD client, a state machine over a non-blocking socket
// that its event loop (event_loop.hpp) runs whenever the socket is ready:
// the fixed newstyle handshake (handshake.cc), then transmission
// (transmission.cc), with the socket I/O and the limits here
// (connection.cc). Requests are executed in order on the shared device;
// several connections may serve one device at once (the export advertises
// CAN_MULTI_CONN: the drivers are one coherent memory).
//
// What a connection holds, whatever its client does:
//   - its input buffer (kInputBuffer): options, request headers and payloads
//     up to kInlinePayload, several at a time as they arrive;
//   - its replies not yet sent, bounded: it takes no further request while
//     the client leaves them unread;
//   - no READ data: a READ's bytes are lent by the device for one sendmsg at
//     a time and lent again for the next (brd), or read a window
//     (kReadWindow) at a time into its own window buffer (null_blk);
//   - of a WRITE payload above kInlinePayload, one piece (context::piece,
//     4 MiB) at a time, once the shared budget (budget.hpp) has reserved
//     it; its memory is allocated then: pages the device will keep
//     (page_payload.hpp), received into directly, or, for a device that
//     copies, a mapping filled (so allocated) as the bytes arrive. Each
//     piece is written when it is complete, and its memory given back.
//
//   connection c(fd, ctx, loop, now);
//   switch (c.run(now)) { case connection::next::wait: ...; case connection::next::close: ... }
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "iov_drivers/blkdev.hpp"
#include "nbd/block_locks.hpp"
#include "nbd/budget.hpp"
#include "nbd/config.hpp"
#include "nbd/page_payload.hpp"
#include "nbd/protocol.hpp"
#include "nbd/tls.hpp"

namespace iov::nbd {

using clock_type = std::chrono::steady_clock;

// What every connection of a server shares.
struct context {
  blkdev& dev;
  const export_options& exp;
  const server_limits& limits;
  payload_budget& budget;
  block_locks& locks;    // held by every write of the device (block_locks.hpp)
  uint32_t max_payload;  // max_payload(limits)
  uint64_t piece;        // write_piece(limits)
  bool lends;            // the device lends its pages (blkdev::lend_pages)
  bool replaces;         // it takes a WRITE's whole pages (blkdev::replace_pages)
  tls_mode tls;          // off unless credentials are loaded
  const tls_credentials* credentials;
};

class connection {
 public:
  static constexpr size_t kInputBuffer = 128 * 1024;  // > an option's header and data, or an inline WRITE
  static constexpr size_t kReadWindow = 128 * 1024;   // a non-lending device's READ data at a time
  static constexpr size_t kMaxReadRuns = 16;          // chunks of one structured READ reply (data or hole)

  // What the event loop does next with the connection.
  enum class next : uint8_t {
    wait,   // the socket would block: run again at its next readiness (edge-triggered)
    yield,  // more to do: run again after the others
    park,   // waiting for payload memory: run again once budget_granted()
    close,  // done: destroy it
  };

  // Takes the socket (non-blocking) and queues the greeting.
  connection(int fd, const context& ctx, payload_budget::listener* loop, clock_type::time_point now);
  ~connection();  // closes the socket, gives back any reservation
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
    return seg_count_ != 0 || tls_out_len_ != 0 || (phase_ == phase::tls_handshake && tls_ && tls_->wants_write());
  }
  // Parked waiting for payload memory, which has now been granted.
  bool ready_after_park() const { return parked_ && waiter_.granted(); }

  int fd() const { return fd_; }
  bool structured_replies() const { return structured_; }
  bool extended_headers() const { return extended_; }

  // The event loop's bookkeeping: its index in the loop's table, whether it
  // is queued to run again after a yield, and whether it waits to write.
  size_t slot = 0;
  bool yielded = false;
  bool polls_out = false;  // registered for EPOLLOUT

 private:
  enum class phase : uint8_t { client_flags, options, tls_handshake, requests, payload, closing };
  enum class step : uint8_t { done, need_input, park, fail };
  enum class io : uint8_t { done, again, eof, error };

  next drive();
  next drive_tls_handshake();
  io tls_fill(void* p, size_t n, size_t* got);
  io tls_flush();
  step take_message();
  io fill();
  io flush();
  bool output_full() const;
  size_t available() const { return in_tail_ - in_head_; }
  const unsigned char* input() const { return in_.get() + in_head_; }
  void consume(size_t n) { in_head_ += n; }
  step need(size_t n);
  void progress() { progress_ = now_; }
  // n, or less under the test knob server_limits::io_per_call.
  size_t per_call(size_t n) const {
    return ctx_.limits.io_per_call && ctx_.limits.io_per_call < n ? ctx_.limits.io_per_call : n;
  }
  void moved(size_t n);

  // Output: a queue of segments, each either bytes of out_ (in order) or a
  // range of the device whose bytes are lent or read when it is sent.
  void queue_bytes(const void* p, size_t n);
  void queue_device(uint64_t offset, uint64_t length);
  void consume_output(size_t n);
  bool gather_output(::iovec* vec, unsigned* n, size_t* bytes, uint64_t want);
  bool gather_device(uint64_t pos, uint64_t seg_end, uint64_t want, ::iovec* vec, unsigned max, unsigned* n,
                     size_t* bytes);

  // Handshake (handshake.cc).
  step on_client_flags();
  step on_option(uint32_t option, const unsigned char* data, uint32_t len);
  phase handle_option(uint32_t option, const unsigned char* data, uint32_t len);
  phase handle_info_or_go(uint32_t option, const unsigned char* data, uint32_t len);
  phase handle_starttls(uint32_t option, uint32_t len);
  phase handle_meta_context(uint32_t option, const unsigned char* data, uint32_t len);
  void reply_option(uint32_t option, uint32_t type, const void* data = nullptr, uint32_t len = 0);
  void reply_export_info(uint32_t option);
  uint16_t transmission_flags() const;

  // Transmission (transmission.cc).
  size_t request_size() const { return extended_ ? kExtendedRequestSize : kRequestSize; }
  bool carries_payload(const request& rq) const;
  step on_request(const request& rq);
  step start_payload(const request& rq);
  step next_piece();
  step continue_payload();
  void finish_piece();
  void finish_payload();
  uint32_t refusal(const request& rq, const char** message) const;
  void handle_request(const request& rq, const void* payload);
  void handle_write(const request& rq, const void* payload);
  int commit_pages(uint64_t offset, uint64_t length, unsigned rq_flags, const char** why);
  io fill_pages();
  void handle_write_zeroes(const request& rq);
  bool block_aligned(const request& rq) const;
  int write_partial(uint64_t block, size_t at, size_t n, const unsigned char* src, unsigned rq_flags,
                    const char** why);
  int write_range(uint64_t offset, uint64_t length, const unsigned char* src, unsigned rq_flags, const char** why);
  void queue_read(const request& rq);
  size_t read_runs(const request& rq);
  void queue_chunk_header(const request& rq, uint16_t flags, uint16_t type, uint32_t length);
  void reply_block_status(const request& rq);
  bool submit_or_reply(const request& rq, blk_request& br, const char* what, bool optional = false);
  void reply_ok(const request& rq);
  void reply_error(const request& rq, uint32_t error, const char* message);

  int fd_;
  const context& ctx_;
  phase phase_ = phase::client_flags;
  clock_type::time_point now_, accepted_, progress_;
  uint64_t moved_ = 0;  // bytes received or sent since progress_

  // TLS, once STARTTLS is acknowledged; the plaintext of the replies taken
  // from the output queue and not yet taken by the session.
  std::unique_ptr<tls_session> tls_;
  std::unique_ptr<unsigned char[]> tls_out_;
  size_t tls_out_head_ = 0, tls_out_len_ = 0;

  // Negotiated.
  bool no_zeroes_ = false;
  bool structured_ = false;  // structured replies, or extended (which are structured too)
  bool extended_ = false;    // extended headers
  bool meta_allocation_ = false;
  bool any_offset_ = false;  // no block size negotiated: any offset and length (minimum block size 1)

  // Input: bytes [in_head_, in_tail_) of in_ are received, not yet taken.
  std::unique_ptr<unsigned char[]> in_;
  size_t in_head_ = 0, in_tail_ = 0;

  // Output.
  struct segment {
    uint64_t length;
    uint64_t offset;  // device segments: where on the device
    bool device;
  };
  static constexpr unsigned kMaxSegments = 128;
  // Room kept for one more reply: a READ of kMaxReadRuns chunks.
  static constexpr unsigned kReplySegments = 2 * kMaxReadRuns + 1;
  segment segs_[kMaxSegments];
  unsigned seg_first_ = 0, seg_count_ = 0;
  uint64_t seg_sent_ = 0;           // bytes of the first segment already sent
  uint64_t queued_device_bytes_ = 0;
  std::vector<unsigned char> out_;  // the bytes segments, in order, from out_head_
  size_t out_head_ = 0;
  blk_lease lease_;                 // held only inside flush()
  std::unique_ptr<unsigned char[]> window_;  // a non-lending device's READ data
  uint64_t window_offset_ = 0;
  size_t window_length_ = 0;
  // A READ's runs of data and zeros, and the extents they come from (kept
  // for their capacity).
  struct read_run {
    uint64_t offset, length;
    bool zero;
  };
  std::vector<read_run> runs_;
  std::vector<blk_extent> extents_;
  std::vector<unsigned char> edge_;  // one logical block, for a read-modify-write of a partial one

  // A WRITE whose payload is above kInlinePayload, being received a piece
  // at a time: into pages_ when the device takes whole pages, else into
  // payload_. The piece is bytes [piece_start_, piece_start_ + piece_length_)
  // of the payload.
  request pending_{};
  uint64_t payload_received_ = 0;
  uint64_t piece_start_ = 0, piece_length_ = 0;
  void* payload_ = nullptr;         // the piece, mmap()ed when its reservation is granted; nullptr: drained
  page_payload pages_;              // also an inline WRITE's, for the moment of its copy
  uint32_t payload_error_ = 0;      // the reply once drained (refused, no memory)
  const char* payload_message_ = nullptr;
  bool parked_ = false;
  payload_budget::waiter waiter_;
};

}  // namespace iov::nbd
