// output_queue.cc: see output_queue.hpp. Replies are queued and sent by one
// send per batch: the replies of every request taken, with the data of each
// READ lent by the device (or read into the window) only for that send.
#include "nbd/output_queue.hpp"

#include <algorithm>
#include <new>

#include "iov/iov.hpp"
#include "nbd/log.hpp"

namespace iov::nbd {

namespace {
constexpr size_t kOutputBytesHigh = 64 * 1024;  // replies queued before they are sent
constexpr uint64_t kDeviceBytesHigh = 1 << 20;  // READ data queued before it is sent
}  // namespace

void output_queue::queue_bytes(const void* p, size_t n) {
  if (!n)
    return;
  const unsigned char* b = static_cast<const unsigned char*>(p);
  out_.insert(out_.end(), b, b + n);
  if (seg_count_) {
    segment& last = segs_[(seg_first_ + seg_count_ - 1) % kMaxSegments];
    if (!last.device) {
      last.length += n;
      return;
    }
  }
  segs_[(seg_first_ + seg_count_++) % kMaxSegments] = {n, 0, false};
}

void output_queue::queue_device(uint64_t offset, uint64_t length) {
  segs_[(seg_first_ + seg_count_++) % kMaxSegments] = {length, offset, true};
  queued_device_bytes_ += length;
}

bool output_queue::full() const {
  return seg_count_ + kReplySegments > kMaxSegments || out_.size() - out_head_ >= kOutputBytesHigh ||
         queued_device_bytes_ >= kDeviceBytesHigh;
}

void output_queue::consume(size_t n) {
  while (n) {
    segment& s = segs_[seg_first_];
    const uint64_t take = std::min<uint64_t>(n, s.length - seg_sent_);
    if (s.device)
      queued_device_bytes_ -= take;
    else
      out_head_ += take;
    seg_sent_ += take;
    n -= take;
    if (seg_sent_ == s.length) {
      if (s.device)
        window_length_ = 0;  // the window held this READ's data only
      seg_first_ = (seg_first_ + 1) % kMaxSegments;
      seg_count_--;
      seg_sent_ = 0;
    }
  }
  if (out_head_ == out_.size()) {
    out_.clear();
    out_head_ = 0;
  } else if (out_head_ >= kOutputBytesHigh) {
    out_.erase(out_.begin(), out_.begin() + static_cast<ptrdiff_t>(out_head_));
    out_head_ = 0;
  }
}

// The iovecs of device bytes from pos to at most seg_end (its segment's
// end), appended to vec: lent (lease_) or from the window, read now if it
// does not hold pos. False on a device error. The device is only ever asked
// for whole logical blocks: from the block holding pos to the block boundary
// at or past seg_end (a READ of any bytes, from a client that negotiated no
// block size, is served from its covering blocks), or past pos + want, or to
// a window's end, whichever is first. What it gives may be more than want;
// the transport takes what it can.
bool output_queue::gather_device(uint64_t pos, uint64_t seg_end, uint64_t want, ::iovec* vec, unsigned max, unsigned* n,
                                 size_t* bytes) {
  const uint64_t lbs = dev_.limits().logical_block_size;
  const uint64_t start = pos / lbs * lbs, block_end = (seg_end + lbs - 1) / lbs * lbs;
  if (lends_) {
    // No more pages than vec has room for, and no further than want asks.
    const uint64_t room = uint64_t{max - *n} * PAGE_SIZE;
    const uint64_t end =
        std::min({block_end, (pos + std::min(want, room) + lbs - 1) / lbs * lbs, (pos + room) / lbs * lbs});
    if (end <= start)
      return true;  // vec is full: the rest goes in the next call
    const size_t from = lease_.pieces().size();
    if (dev_.lend_pages(start >> SECTOR_SHIFT, (end - start) >> SECTOR_SHIFT, &lease_) != 0)
      return false;
    uint64_t skip = pos - start, left = std::min(end, seg_end) - pos;
    for (size_t k = from; k < lease_.pieces().size() && *n < max && left; k++) {
      const bio_vec& bv = lease_.pieces()[k];
      if (skip >= bv.bv_len) {
        skip -= bv.bv_len;
        continue;
      }
      // bvec_virt, not kmap_local_page: pages are mapped for good (no
      // highmem), so the address stays valid until the sendmsg, as long as
      // the lease does.
      const size_t len = std::min<uint64_t>(bv.bv_len - skip, left);
      vec[(*n)++] = {bvec_virt(&bv) + skip, len};
      skip = 0;
      left -= len;
      *bytes += len;
    }
    return true;
  }
  if (pos < window_offset_ || pos >= window_offset_ + window_length_) {
    const uint64_t end = std::min<uint64_t>(block_end, start + kReadWindow);  // kReadWindow: whole blocks
    iov_iter it;
    iov_iter_ubuf(&it, ITER_DEST, window_.get(), end - start);
    blk_request br{.op = REQ_OP_READ, .sector = start >> SECTOR_SHIFT, .iter = &it};
    window_length_ = 0;
    if (dev_.submit(br) != 0)
      return false;
    window_offset_ = start;
    window_length_ = end - start;
  }
  const size_t at = pos - window_offset_;
  vec[(*n)++] = {window_.get() + at, std::min<uint64_t>(seg_end - pos, window_length_ - at)};
  *bytes += vec[*n - 1].iov_len;
  return true;
}

// The iovecs of the queue's first bytes, want of them or more (whole device
// blocks past it): the bytes segments, and device data lent or read into
// the window (one window's worth at most). False on a device error
// (logged; nothing held).
bool output_queue::gather(::iovec* vec, unsigned* n, size_t* bytes, uint64_t want) {
  *n = 0;
  *bytes = 0;
  size_t at = out_head_;
  bool window_used = false;
  for (unsigned k = 0; k < seg_count_ && *n < kMaxIovecs && *bytes < want; k++) {
    const segment& s = segs_[(seg_first_ + k) % kMaxSegments];
    const uint64_t skip = k == 0 ? seg_sent_ : 0, len = s.length - skip;
    if (!s.device) {
      vec[(*n)++] = {out_.data() + at, len};
      *bytes += len;
      at += len;
      continue;
    }
    if (!lends_ && window_used)
      break;  // one window per call
    window_used = true;
    const size_t before = *bytes;
    if (!gather_device(s.offset + skip, s.offset + s.length, want - *bytes, vec, kMaxIovecs, n, bytes)) {
      lease_.release();
      log_event(event::io_error, "a device error while sending READ data: connection closed");
      return false;
    }
    if (*bytes - before < len)
      break;  // the rest of this segment goes in the next call
  }
  return true;
}

bool output_queue::reserve_window() {
  if (!window_)
    window_.reset(new (std::nothrow) unsigned char[kReadWindow]);
  return window_ != nullptr;
}

// One send of gather's vector at a time. Lent pages are held for one send
// only: what the transport does not take (a short send, the rest past a TLS
// record) is lent again for the next.
io output_queue::flush(transport& t) {
  for (;;) {
    if (io r = t.send_record(); r != io::done)
      return r;
    if (!seg_count_)
      return io::done;
    ::iovec vec[kMaxIovecs];
    unsigned n;
    size_t bytes, taken;
    if (!gather(vec, &n, &bytes, t.max_send()))
      return io::error;
    const io r = t.send(vec, n, bytes, &taken);
    lease_.release();  // never held while the client makes us wait
    consume(taken);
    if (r != io::done)
      return r;
  }
}

}  // namespace iov::nbd
