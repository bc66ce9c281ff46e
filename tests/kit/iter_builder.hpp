// iter_builder.hpp: an iov_iter of any type over memory, for the tests, the
// fuzz targets and the benchmarks (header only; no test framework).
//
// An iter_builder owns the segment tables behind one iterator (the iovec,
// kvec or bio_vec array, the bvecq or folio_queue segments, the xarray) and
// every piece of memory it was asked to allocate, and frees all of it when it
// goes. Two ways to fill one:
//
//   // From a flat description: each segment its own buffer, guard bytes around.
//   iov_test::iter_builder b({.type = iov::ITER_BVECQ, .segs = {{100, 3}, {5000, 17}}, .split = {1, 0, 1}});
//   iov::iov_iter it = b.iter(iov::ITER_DEST, 5100);
//   bool ok = b.guards_intact();
//
//   // Segment by segment, over memory of the caller's or the builder's.
//   iov_test::iter_builder b(iov::ITER_KVEC);
//   b.add_vec(buf, 4096);
//   b.add_vec(b.alloc_bytes(100), 100);
//   iov::iov_iter it = b.iter(iov::ITER_SOURCE, 4196);
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "iov/bvecq.hpp"
#include "iov/folio.hpp"
#include "iov/folio_queue.hpp"
#include "iov/iov_iter.hpp"
#include "iov/page.hpp"
#include "iov/xarray.hpp"

namespace iov_test {

// One segment of a flat description: its length and an offset. For UBUF,
// IOVEC and KVEC the offset is where the buffer starts within its page; for
// BVEC and BVECQ it is bv_offset into a run of frames from one alloc_pages()
// (it may exceed PAGE_SIZE).
struct seg_desc {
  size_t len;
  size_t offset;
};

// A flat description of an iterator; the fields that do not concern `type`
// are ignored.
struct iter_desc {
  iov::iter_type type = iov::ITER_DISCARD;
  std::vector<seg_desc> segs;    // UBUF: one; IOVEC, KVEC, BVEC, BVECQ: one each
  std::vector<unsigned> split;   // BVECQ: slots a queue segment (default three; 0: an empty one)
  std::vector<unsigned> orders;  // FOLIOQ: the folios' orders, folioq_nr_slots() a segment
  unsigned first_slot = 0;       // FOLIOQ: order-0 folios ahead of the start in the first segment
  size_t offset = 0;             // FOLIOQ: where in the first folio the iterator starts
  loff_t start = 0;              // XARRAY: the first byte position
  size_t len = 0;                // XARRAY, DISCARD: the bytes
  std::vector<size_t> holes;     // XARRAY: page numbers (from the first page) left without a page
};

// Bytes [lo, hi) of mem..mem+size are what a segment describes; with a flat
// description the rest holds kGuardByte.
struct region {
  unsigned char* mem;
  size_t size, lo, hi;
};

inline constexpr unsigned char kGuardByte = 0xA5;
inline constexpr size_t kGuardAfter = 64;

class iter_builder {
 public:
  explicit iter_builder(iov::iter_type type) : type_(type) {
    if (type == iov::ITER_XARRAY) xa_ = std::make_unique<iov::xarray>();
  }
  explicit iter_builder(const iter_desc& d);
  iter_builder(const iter_builder&) = delete;
  iter_builder& operator=(const iter_builder&) = delete;
  ~iter_builder();

  iov::iter_type type() const { return type_; }

  // ---- Memory the builder owns ----
  // size bytes from the heap, aligned to `align` (1: as malloc() aligns).
  unsigned char* alloc_bytes(size_t size, size_t align = 1);
  // 2^order frames from one alloc_pages(), one compound page (__GFP_COMP,
  // as a folio's) when `compound`.
  iov::page* alloc_frames(unsigned order, bool compound = false);
  // A folio whose reference the builder drops when it goes.
  iov::folio* alloc_folio(unsigned order);
  // Records that bytes [lo, hi) of mem..mem+size belong to the next segment.
  void add_region(unsigned char* mem, size_t size, size_t lo, size_t hi) { regions_.push_back({mem, size, lo, hi}); }
  const std::vector<region>& regions() const { return regions_; }
  // Nothing outside a region's [lo, hi) was written (flat descriptions only).
  bool guards_intact() const;

  // ---- Segments, in the iterator's order ----
  void set_ubuf(void* base) { ubuf_ = base; }
  void add_vec(void* base, size_t len);  // IOVEC or KVEC
  void add_bvec(iov::page* pg, size_t len, size_t offset) {  // BVEC or BVECQ
    iov::bio_vec bv;
    iov::bvec_set_page(&bv, pg, static_cast<unsigned>(len), static_cast<unsigned>(offset));
    bvs_.push_back(bv);
  }
  // BVECQ: the bio_vecs added so far into a queue, split[k] slots in its k'th
  // segment (0: an empty segment). Each segment has room for max_slots (0:
  // as many as it holds, at least one) in its own array, or, with borrow,
  // points into bvecs() (add no bio_vec after).
  void queue_bvecs(const std::vector<unsigned>& split, unsigned max_slots = 0, bool borrow = false);
  // FOLIOQ: appends f (not owned unless from alloc_folio()), starting a new
  // segment when the last is full; returns its slot.
  unsigned add_folio(iov::folio* f);
  void add_folioq_segment();
  void set_folioq_start(unsigned slot, size_t offset) { fq_slot_ = slot, fq_offset_ = offset; }
  // XARRAY: stores entry at index.
  void store_page(unsigned long index, void* entry);
  void set_xarray_start(loff_t start) { xa_start_ = start; }

  // A fresh iterator over the first count bytes (DISCARD: always ITER_DEST).
  iov::iov_iter iter(unsigned direction, size_t count) const;

  void* ubuf() const { return ubuf_; }
  const std::vector<::iovec>& iovecs() const { return iovs_; }
  const std::vector<iov::kvec>& kvecs() const { return kvs_; }
  const std::vector<iov::bio_vec>& bvecs() const { return bvs_; }
  const std::vector<iov::bvecq*>& bvecqs() const { return bqs_; }
  const std::vector<iov::folio_queue*>& folioqs() const { return fqs_; }
  unsigned folioq_first_slot() const { return fq_slot_; }
  size_t folioq_offset() const { return fq_offset_; }
  iov::xarray* xa() const { return xa_.get(); }
  loff_t xa_start() const { return xa_start_; }
  // XARRAY: the entry stored at index (nullptr if none was).
  void* stored(unsigned long index) const {
    for (const auto& [i, e] : stored_)
      if (i == index) return e;
    return nullptr;
  }

  static unsigned order_for(size_t bytes) {
    unsigned order = 0;
    while ((iov::PAGE_SIZE << order) < bytes) order++;
    return order;
  }

 private:
  [[noreturn]] static void oom(const char* what) {
    std::fprintf(stderr, "iter_builder: out of memory in %s\n", what);
    std::abort();
  }
  unsigned char* guarded_user(size_t len, size_t offset);
  void build(const iter_desc& d);

  iov::iter_type type_;
  void* ubuf_ = nullptr;
  std::vector<::iovec> iovs_;
  std::vector<iov::kvec> kvs_;
  std::vector<iov::bio_vec> bvs_;
  std::vector<iov::bvecq*> bqs_;
  std::vector<iov::folio_queue*> fqs_;
  unsigned fq_slot_ = 0;
  size_t fq_offset_ = 0;
  std::unique_ptr<iov::xarray> xa_;
  loff_t xa_start_ = 0;
  std::vector<std::pair<unsigned long, void*>> stored_;
  std::vector<void*> heap_;
  std::vector<std::pair<iov::page*, unsigned>> frames_;
  std::vector<iov::folio*> folios_;
  std::vector<region> regions_;
};

// ---------------------------------------------------------------------------

inline iter_builder::iter_builder(const iter_desc& d) : iter_builder(d.type) { build(d); }

inline iter_builder::~iter_builder() {
  if (xa_) iov::xa_destroy(xa_.get());
  for (iov::bvecq* bq : bqs_) iov::bvecq_free(bq);
  for (iov::folio_queue* fq : fqs_) delete fq;
  for (iov::folio* f : folios_) iov::folio_put(f);
  for (auto [pg, order] : frames_) iov::free_pages(pg, order);
  for (void* p : heap_) std::free(p);
}

inline unsigned char* iter_builder::alloc_bytes(size_t size, size_t align) {
  size = std::max<size_t>(size, 1);  // a zero-length buffer still has an address
  void* p = align > 1 ? std::aligned_alloc(align, (size + align - 1) / align * align) : std::malloc(size);
  if (!p) oom("alloc_bytes");
  heap_.push_back(p);
  return static_cast<unsigned char*>(p);
}

inline iov::page* iter_builder::alloc_frames(unsigned order, bool compound) {
  iov::page* pg = iov::alloc_pages(iov::GFP_KERNEL | (compound ? iov::__GFP_COMP : 0u), order);
  if (!pg) oom("alloc_frames");
  frames_.emplace_back(pg, order);
  return pg;
}

inline iov::folio* iter_builder::alloc_folio(unsigned order) {
  iov::folio* f = iov::folio_alloc(iov::GFP_KERNEL, order);
  if (!f) oom("alloc_folio");
  folios_.push_back(f);
  return f;
}

inline bool iter_builder::guards_intact() const {
  for (const region& r : regions_)
    for (size_t k = 0; k < r.size; k++)
      if ((k < r.lo || k >= r.hi) && r.mem[k] != kGuardByte) return false;
  return true;
}

inline void iter_builder::add_vec(void* base, size_t len) {
  if (type_ == iov::ITER_KVEC)
    kvs_.push_back(iov::kvec{base, len});
  else
    iovs_.push_back(::iovec{base, len});
}

inline void iter_builder::queue_bvecs(const std::vector<unsigned>& split, unsigned max_slots, bool borrow) {
  size_t next = 0;
  for (unsigned nr : split) {
    nr = static_cast<unsigned>(std::min<size_t>(nr, bvs_.size() - next));
    iov::bvecq* bq = iov::bvecq_alloc(static_cast<uint16_t>(borrow ? 0 : max_slots ? max_slots : std::max(nr, 1u)));
    if (!bq) oom("bvecq_alloc");
    if (borrow) {
      bq->bv = bvs_.data() + next;
      bq->inline_bv = false;
      bq->max_slots = static_cast<uint16_t>(nr);
    }
    for (unsigned k = 0; k < nr; k++) bq->bv[bq->nr_slots++] = bvs_[next++];
    if (!bqs_.empty()) bqs_.back()->next = bq, bq->prev = bqs_.back();
    bqs_.push_back(bq);
  }
}

inline void iter_builder::add_folioq_segment() {
  auto* fq = new iov::folio_queue{};
  iov::folioq_init(fq, 0);
  if (!fqs_.empty()) fqs_.back()->next = fq, fq->prev = fqs_.back();
  fqs_.push_back(fq);
}

inline unsigned iter_builder::add_folio(iov::folio* f) {
  if (fqs_.empty() || iov::folioq_full(fqs_.back())) add_folioq_segment();
  return iov::folioq_append(fqs_.back(), f);
}

inline void iter_builder::store_page(unsigned long index, void* entry) {
  void* old = iov::xa_store(xa_.get(), index, entry);
  if (iov::xa_is_err(old)) oom("xa_store");
  stored_.emplace_back(index, entry);
}

inline iov::iov_iter iter_builder::iter(unsigned direction, size_t count) const {
  iov::iov_iter it;
  switch (type_) {
    case iov::ITER_UBUF: iov::iov_iter_ubuf(&it, direction, ubuf_, count); break;
    case iov::ITER_IOVEC: iov::iov_iter_init(&it, direction, iovs_.data(), iovs_.size(), count); break;
    case iov::ITER_KVEC: iov::iov_iter_kvec(&it, direction, kvs_.data(), kvs_.size(), count); break;
    case iov::ITER_BVEC: iov::iov_iter_bvec(&it, direction, bvs_.data(), bvs_.size(), count); break;
    case iov::ITER_BVECQ: iov::iov_iter_bvec_queue(&it, direction, bqs_.front(), 0, 0, count); break;
    case iov::ITER_FOLIOQ:
      iov::iov_iter_folio_queue(&it, direction, fqs_.front(), fq_slot_, static_cast<unsigned>(fq_offset_), count);
      break;
    case iov::ITER_XARRAY: iov::iov_iter_xarray(&it, direction, xa_.get(), xa_start_, count); break;
    default: iov::iov_iter_discard(&it, iov::ITER_DEST, count); break;  // ITER_SOURCE is the kernel's BUG
  }
  return it;
}

// A buffer whose data starts offset % PAGE_SIZE into a page, a page of guard
// before it and kGuardAfter bytes (at least) after.
inline unsigned char* iter_builder::guarded_user(size_t len, size_t offset) {
  size_t lo = iov::PAGE_SIZE + offset % iov::PAGE_SIZE;
  size_t size = (lo + len + kGuardAfter + iov::PAGE_SIZE - 1) / iov::PAGE_SIZE * iov::PAGE_SIZE;
  unsigned char* mem = alloc_bytes(size, iov::PAGE_SIZE);
  std::memset(mem, kGuardByte, size);
  add_region(mem, size, lo, lo + len);
  return mem + lo;
}

inline void iter_builder::build(const iter_desc& d) {
  using iov::PAGE_SIZE;
  switch (type_) {
    case iov::ITER_UBUF: set_ubuf(guarded_user(d.segs.at(0).len, d.segs.at(0).offset)); break;
    case iov::ITER_IOVEC:
    case iov::ITER_KVEC:
      for (const seg_desc& s : d.segs) add_vec(guarded_user(s.len, s.offset), s.len);
      break;
    case iov::ITER_BVEC:
    case iov::ITER_BVECQ: {
      // Every other run is one compound page, as the kernel's bvecs point
      // into folios as well as into plain alloc_pages() runs (whose later
      // frames have no reference count of their own).
      for (const seg_desc& s : d.segs) {
        unsigned order = order_for(s.offset + s.len + kGuardAfter);
        auto* mem = reinterpret_cast<unsigned char*>(alloc_frames(order, frames_.size() % 2 == 1));
        std::memset(mem, kGuardByte, PAGE_SIZE << order);
        add_region(mem, PAGE_SIZE << order, s.offset, s.offset + s.len);
        add_bvec(reinterpret_cast<iov::page*>(mem), s.len, s.offset);
      }
      if (type_ == iov::ITER_BVEC) break;
      std::vector<unsigned> split = d.split;
      if (split.empty())
        for (size_t n = 0; n < d.segs.size() || split.empty(); n += 3)
          split.push_back(static_cast<unsigned>(std::min<size_t>(3, d.segs.size() - n)));
      queue_bvecs(split);
      break;
    }
    case iov::ITER_FOLIOQ:
      add_folioq_segment();
      for (unsigned k = 0; k < d.first_slot; k++) add_folio(alloc_folio(0));  // behind the start
      for (unsigned order : d.orders) {
        iov::folio* f = alloc_folio(order);
        auto* mem = static_cast<unsigned char*>(iov::folio_address(f));
        size_t size = iov::folio_size(f);
        std::memset(mem, kGuardByte, size);
        add_region(mem, size, regions_.empty() ? std::min(d.offset, size) : 0, size);
        add_folio(f);
      }
      set_folioq_start(d.first_slot, d.offset);
      break;
    case iov::ITER_XARRAY: {
      size_t first = static_cast<size_t>(d.start), last = first + d.len;  // byte positions
      size_t npages = d.len ? (last - 1) / PAGE_SIZE - first / PAGE_SIZE + 1 : 0;
      for (size_t n = 0; n < npages; n++) {
        if (std::find(d.holes.begin(), d.holes.end(), n) != d.holes.end()) continue;
        size_t page_pos = (first / PAGE_SIZE + n) * PAGE_SIZE;
        auto* mem = reinterpret_cast<unsigned char*>(alloc_frames(0));
        std::memset(mem, kGuardByte, PAGE_SIZE);
        add_region(mem, PAGE_SIZE, std::max(first, page_pos) - page_pos, std::min(last, page_pos + PAGE_SIZE) - page_pos);
        store_page(page_pos / PAGE_SIZE, mem);
      }
      set_xarray_start(d.start);
      break;
    }
    default: break;
  }
}

}  // namespace iov_test
