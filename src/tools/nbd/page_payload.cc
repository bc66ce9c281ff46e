// page_payload.cc: see page_payload.hpp.
#include "nbd/page_payload.hpp"

#include <algorithm>

#include "iov/copy.hpp"
#include "iov/copy_nocache.hpp"
#include "iov/page.hpp"
#include "iov/rcu.hpp"

namespace iov::nbd {

bool page_payload::prepare(uint64_t offset, uint64_t length) {
  reset();
  offset_ = offset;
  const uint64_t lead = (PAGE_SIZE - (offset & ~PAGE_MASK)) & ~PAGE_MASK;
  head_ = static_cast<unsigned>(std::min(lead, length));
  const uint64_t whole = (length - head_) >> PAGE_SHIFT;
  tail_ = static_cast<unsigned>(length - head_ - (whole << PAGE_SHIFT));
  pieces_.reserve(whole + 2);
  auto add = [this](unsigned len) {
    page* pg = recycler_ ? recycler_->alloc() : alloc_page(GFP_NOIO);
    if (!pg)
      return false;
    bio_vec bv;
    bvec_set_page(&bv, pg, len, 0);
    pieces_.push_back(bv);
    return true;
  };
  bool ok = !head_ || add(head_);
  for (uint64_t i = 0; ok && i < whole; i++)
    ok = add(PAGE_SIZE);
  ok = ok && (!tail_ || add(tail_));
  if (!ok) {
    reset();
    return false;
  }
  iov_iter_bvec(&rest_, ITER_DEST, pieces_.data(), pieces_.size(), length);
  return true;
}

// The whole pages go to the device unread: streaming stores. The partial
// pages at the ends are read again by commit()'s writes: memcpy. rest() may
// have been advanced by a receive into it, so the position comes from its count.
void page_payload::fill(const void* src, size_t len) {
  const size_t total = static_cast<size_t>(head_) + tail_ +
                       ((pieces_.size() - (head_ ? 1 : 0) - (tail_ ? 1 : 0)) << PAGE_SHIFT);
  const size_t whole_end = total - tail_;
  const char* from = static_cast<const char*>(src);
  len = std::min(len, iov_iter_count(&rest_));
  while (len) {
    const size_t at = total - iov_iter_count(&rest_);
    size_t n;
    if (at < head_)
      n = copy_to_iter(from, std::min<size_t>(len, head_ - at), &rest_);
    else if (at < whole_end)
      n = copy_to_iter_nocache(from, std::min(len, whole_end - at), &rest_);
    else
      n = copy_to_iter(from, len, &rest_);
    if (!n)
      break;  // a guard: pages of the allocator take every byte
    from += n;
    len -= n;
  }
}

int page_payload::write_piece(blkdev& dev, unsigned rq_flags, uint64_t offset, const bio_vec& bv,
                              const char** why) {
  iov_iter it;
  iov_iter_bvec(&it, ITER_SOURCE, &bv, 1, bv.bv_len);
  blk_request br{.op = REQ_OP_WRITE, .flags = rq_flags, .sector = offset >> SECTOR_SHIFT, .iter = &it};
  const int err = dev.submit(br);
  if (err)
    *why = br.error;
  return err;
}

int page_payload::commit(blkdev& dev, unsigned rq_flags, const char** why) {
  const size_t first = head_ ? 1 : 0, end = pieces_.size() - (tail_ ? 1 : 0);
  int err = head_ ? write_piece(dev, rq_flags, offset_, pieces_.front(), why) : 0;
  whole_.clear();
  if (!err && end > first) {
    for (size_t i = first; i < end; i++) {
      whole_.push_back(pieces_[i].bv_page);
      pieces_[i].bv_page = nullptr;  // the device's from here, whatever it answers
    }
    err = replace(dev, why);
  }
  if (!err && tail_) {
    const uint64_t at = offset_ + head_ + (uint64_t{end - first} << PAGE_SHIFT);
    err = write_piece(dev, rq_flags, at, pieces_.back(), why);
  }
  reset();
  return err;
}

// whole_ handed to the device, kReplaceRun pages at a time (no allocation);
// each entry of whole_ then holds the page it replaced (nullptr: none), for
// retire_replaced().
int page_payload::replace(blkdev& dev, const char** why) {
  const auto index = static_cast<pgoff_t>((offset_ + head_) >> PAGE_SHIFT);
  page* replaced[kReplaceRun];
  int err = 0;
  for (size_t at = 0; at < whole_.size(); at += kReplaceRun) {
    const auto n = static_cast<unsigned>(std::min<size_t>(kReplaceRun, whole_.size() - at));
    if (err) {  // past a failed run: never visible
      for (unsigned k = 0; k < n; k++) {
        free_page(whole_[at + k]);
        whole_[at + k] = nullptr;
      }
      continue;
    }
    err = dev.replace_pages(index + at, whole_.data() + at, n, why, replaced);
    std::copy(replaced, replaced + n, whole_.begin() + static_cast<std::ptrdiff_t>(at));
  }
  return err;
}

void page_payload::retire_replaced() {
  for (page* p : whole_)
    if (recycler_)
      recycler_->retire(p);
    else
      free_page_rcu(p);  // nullptr: nothing
  whole_.clear();
}

void page_payload::reset() {
  for (const bio_vec& bv : pieces_)
    if (recycler_)
      recycler_->give_back(bv.bv_page);  // never seen by a reader (nullptr: nothing)
    else if (bv.bv_page)
      free_page(bv.bv_page);
  pieces_.clear();
  head_ = tail_ = 0;
}

}  // namespace iov::nbd
