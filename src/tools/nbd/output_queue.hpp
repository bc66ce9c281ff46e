// output_queue.hpp: a connection's replies not yet sent. Each reply is
// queued as segments: its header bytes (copied into the queue) and, for a
// READ, the range of the device whose data it carries. The data is taken
// only when it is sent: the device lends its pages (brd) or reads a window
// (kReadWindow) at a time into the queue's window buffer (null_blk), for one
// send at a time, and the vector for sendmsg (or for a TLS record) is built
// once from the header bytes and the lent bio_vecs. The device is only ever
// asked for whole logical blocks; the transport takes what it can of them.
//
//   output_queue out(dev, /*lends=*/true);
//   out.queue_bytes(head, sizeof head);
//   out.queue_device(offset, length);
//   if (out.flush(t) == io::again) wait_for_writable();
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "iov_drivers/blkdev.hpp"
#include "nbd/transport.hpp"

namespace iov::nbd {

class output_queue {
 public:
  static constexpr size_t kReadWindow = 128 * 1024;  // a non-lending device's READ data at a time
  // The most segments one reply queues, kept free before the next request
  // is taken: a structured READ of 16 chunks (data or hole) and its header
  // bytes.
  static constexpr unsigned kReplySegments = 2 * 16 + 1;

  // `lends`: dev lends its pages (blkdev::lend_pages); else READ data is
  // read into the window.
  output_queue(blkdev& dev, bool lends) : dev_(dev), lends_(lends) {}
  output_queue(const output_queue&) = delete;
  output_queue& operator=(const output_queue&) = delete;

  void queue_bytes(const void* p, size_t n);
  // The device's bytes [offset, offset + length), read when they are sent.
  void queue_device(uint64_t offset, uint64_t length);
  // The window a non-lending device's READ data goes through, allocated
  // before the first READ is queued: false without memory.
  bool reserve_window();

  bool empty() const { return seg_count_ == 0; }
  // Time to send before taking another request: room for one more reply's
  // segments, and not too much waiting.
  bool full() const;
  // Sends the queue, one send of the gathered vector at a time, until it is
  // empty (done) or the transport would block (again); error on a device
  // error (logged) or a socket one.
  io flush(transport& t);
  // Gives back the pages lent, after an exception cut a flush short.
  void release_lease() { lease_.release(); }

 private:
  struct segment {
    uint64_t length;
    uint64_t offset;  // device segments: where on the device
    bool device;
  };
  static constexpr unsigned kMaxSegments = 128;
  static constexpr unsigned kMaxIovecs = 128;  // per send

  void consume(size_t n);
  bool gather(::iovec* vec, unsigned* n, size_t* bytes, uint64_t want);
  bool gather_device(uint64_t pos, uint64_t seg_end, uint64_t want, ::iovec* vec, unsigned max, unsigned* n,
                     size_t* bytes);

  blkdev& dev_;
  const bool lends_;
  segment segs_[kMaxSegments];
  unsigned seg_first_ = 0, seg_count_ = 0;
  uint64_t seg_sent_ = 0;  // bytes of the first segment already sent
  uint64_t queued_device_bytes_ = 0;
  std::vector<unsigned char> out_;  // the bytes segments, in order, from out_head_
  size_t out_head_ = 0;
  blk_lease lease_;                          // held only inside flush()
  std::unique_ptr<unsigned char[]> window_;  // a non-lending device's READ data
  uint64_t window_offset_ = 0;
  size_t window_length_ = 0;
};

}  // namespace iov::nbd
