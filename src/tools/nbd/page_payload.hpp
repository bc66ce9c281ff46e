// page_payload.hpp: a WRITE's payload received into pages of its own, for a
// device that takes whole pages (blkdev::replace_pages). The bytes land once,
// in the pages the device keeps: no second copy from a receive buffer, and a
// concurrent READ sees each 4 KiB page whole, old or new. The partial pages
// at the ends of an unaligned range are written with a copy. Nothing reaches
// the device before commit(), so a client gone mid-WRITE changes nothing.
//
//   page_payload p;
//   if (p.prepare(offset, length)) {
//     recv_iter(fd, p.rest());                 // or p.fill(buf, n)
//     if (iov_iter_count(p.rest()) == 0) err = p.commit(dev, REQ_FUA, &why), p.retire_replaced();
//   }
#pragma once

#include <cstdint>
#include <vector>

#include "iov/bvec.hpp"
#include "iov/iov_iter.hpp"
#include "iov_drivers/blkdev.hpp"
#include "nbd/page_recycle.hpp"

namespace iov::nbd {

class page_payload {
 public:
  // With a recycler (page_recycle.hpp), the pages come from it and the
  // pages they replace on the device go back to it; else alloc_page, and
  // what they replace is freed after a grace period.
  explicit page_payload(page_recycler* recycler = nullptr) : recycler_(recycler) {}
  ~page_payload() { reset(); }
  page_payload(const page_payload&) = delete;
  page_payload& operator=(const page_payload&) = delete;

  // Pages for `length` bytes to be written at byte `offset` of the device;
  // false (holding nothing) when the allocator has none to give.
  bool prepare(uint64_t offset, uint64_t length);
  bool active() const { return !pieces_.empty(); }
  // The part still to be received; advanced by whoever fills it.
  iov_iter* rest() { return &rest_; }
  // Copies the next min(len, what is left) bytes of the payload from src (a
  // receive buffer) into the pages, advancing rest(). The whole pages, which
  // the device keeps and nothing reads soon, get streaming stores: through
  // the cache, every line of a fresh frame would first be read from memory.
  // The partial pages at the ends, copied again by commit(), get memcpy.
  void fill(const void* src, size_t len);
  // Writes the payload (all of it received) to the device: the partial page
  // at the start, the whole pages handed over, the partial page at the end.
  // 0 or the device's -errno with *why. Holds nothing afterwards but the
  // pages replaced, for retire_replaced(). With whole pages only, it waits
  // for no grace period, so that it may run in a read-side section
  // (block_locks::whole_guard); a partial page is written by the device,
  // which may free one it unmaps (free_page_rcu, which waits for a grace
  // period when it has no memory).
  int commit(blkdev& dev, unsigned rq_flags, const char** why);
  // No partial page at either end (prepare()'s offset and length are
  // multiples of PAGE_SIZE).
  bool whole_pages_only() const { return !head_ && !tail_; }
  // The pages the last commit() replaced, to the recycler, else freed after
  // a grace period: outside any read-side section (free_page_rcu may wait
  // for one when it has no memory).
  void retire_replaced();
  // Frees what was not handed over; keeps the capacity for the next WRITE.
  void reset();

 private:
  static constexpr unsigned kReplaceRun = 16;  // pages replaced per call with a recycler: an inline WRITE's
  int write_piece(blkdev& dev, unsigned rq_flags, uint64_t offset, const bio_vec& bv, const char** why);
  int replace(blkdev& dev, const char** why);

  std::vector<bio_vec> pieces_;  // [head] whole pages... [tail], in payload order
  page_recycler* const recycler_;
  std::vector<page*> whole_;  // the whole pages, for replace_pages; then the pages they replaced
  iov_iter rest_{};
  uint64_t offset_ = 0;
  unsigned head_ = 0, tail_ = 0;  // bytes of the partial pieces (0: none)
};

}  // namespace iov::nbd
