// page_payload.cc: see page_payload.hpp.
#include "nbd/page_payload.hpp"

#include <algorithm>
#include <cstring>

#include "iov/internal/memcpy_nt.hpp"
#include "iov/page.hpp"
#include "iov/iterate.hpp"

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
    page* pg = alloc_page(GFP_NOIO);
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

namespace {

// fill()'s step over the pieces of rest(), priv a fill_source: the partial
// pages at the ends get memcpy, every other page goes into the batch.
struct fill_source {
  const char* from;
  const page* head;  // the partial page at the start, or nullptr
  const page* tail;  // the partial page at the end, or nullptr
  internal::memcpy_nt_batch batch;
};

size_t fill_step(void* to, size_t progress, size_t len, void* priv, void*) {
  auto* s = static_cast<fill_source*>(priv);
  const page* pg = virt_to_page(to);
  if (pg == s->head || pg == s->tail)
    std::memcpy(to, s->from + progress, len);
  else
    s->batch.add(to, s->from + progress, len);
  return 0;
}

}  // namespace

void page_payload::fill(const void* src, size_t len) {
  fill_source s{static_cast<const char*>(src), head_ ? pieces_.front().bv_page : nullptr,
                tail_ ? pieces_.back().bv_page : nullptr, {}};
  iterate_bvec(&rest_, len, &s, nullptr, fill_step);
  s.batch.finish();
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
  if (!err && end > first) {
    whole_.clear();
    for (size_t i = first; i < end; i++) {
      whole_.push_back(pieces_[i].bv_page);
      pieces_[i].bv_page = nullptr;  // the device's from here, whatever it answers
    }
    err = dev.replace_pages(static_cast<pgoff_t>((offset_ + head_) >> PAGE_SHIFT), whole_.data(),
                            static_cast<unsigned>(whole_.size()), why);
  }
  if (!err && tail_) {
    const uint64_t at = offset_ + head_ + (uint64_t{end - first} << PAGE_SHIFT);
    err = write_piece(dev, rq_flags, at, pieces_.back(), why);
  }
  reset();
  return err;
}

void page_payload::reset() {
  for (const bio_vec& bv : pieces_)
    if (bv.bv_page)
      free_page(bv.bv_page);
  pieces_.clear();
  head_ = tail_ = 0;
}

}  // namespace iov::nbd
