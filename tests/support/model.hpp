// model.hpp: an independent model of an iterator's memory, for the tests.
//
// A Layout owns the segments behind one iterator of any type and the memory
// they describe (an iter_builder, kit/iter_builder.hpp), and maps the iterator's flat byte offsets (0 .. total) to
// addresses. Tests compute what an operation should do on a flat vector with
// plain loops and memcpy, and compare that with what the library did:
//
//   auto l = iov_test::Layout::make_iovec({{100, 3}, {0, 0}, {5000, 17}});
//   iov::iov_iter it = l->iter(iov::ITER_DEST);
//   std::vector<unsigned char> want = l->gather();   // the flat model
//   size_t n = iov::copy_to_iter(src, 300, &it);     // ... memcpy into want
//   EXPECT_EQ(l->gather(), want);
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "kit/iter_builder.hpp"

namespace iov_test {

enum class Kind { ubuf, iovec, kvec, bvec, bvecq, folioq, xarray, discard };
inline constexpr Kind kAllKinds[] = {Kind::ubuf,   Kind::iovec,  Kind::kvec,   Kind::bvec,
                                     Kind::bvecq,  Kind::folioq, Kind::xarray, Kind::discard};
const char* kind_name(Kind k);
iov::iter_type iter_type_of(Kind k);
inline bool user_backed(Kind k) { return k == Kind::ubuf || k == Kind::iovec; }
// BVEC, BVECQ, FOLIOQ and XARRAY pieces never cross a page.
inline bool page_split(Kind k) {
  return k == Kind::bvec || k == Kind::bvecq || k == Kind::folioq || k == Kind::xarray;
}
// The queue kinds: segments linked through next/prev, a slot index in each.
inline bool queued(Kind k) { return k == Kind::bvecq || k == Kind::folioq; }

// One segment as a test describes it: its length and an offset. For ubuf,
// iovec and kvec the offset is where the buffer starts within its page; for
// bvec it is bv_offset into a run of frames from one alloc_pages() (it may
// exceed PAGE_SIZE).
using SegSpec = seg_desc;

// A contiguous run of the iterator's bytes: `len` bytes at `base`, which are
// bytes flat .. flat + len of the iterator, in segment `seg`.
struct Chunk {
  size_t flat;
  unsigned char* base;
  size_t len;
  size_t seg;
  bool operator==(const Chunk&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Chunk& r);

class Layout {
 public:
  static std::unique_ptr<Layout> make_ubuf(size_t len, size_t offset);
  static std::unique_ptr<Layout> make_iovec(const std::vector<SegSpec>& segs);
  static std::unique_ptr<Layout> make_kvec(const std::vector<SegSpec>& segs);
  static std::unique_ptr<Layout> make_bvec(const std::vector<SegSpec>& segs);
  // The bio_vecs of make_bvec() in a queue of bvecq segments, split[k] slots
  // in the k'th (0 for an empty segment; the sum is segs.size()); by default
  // three slots a segment.
  static std::unique_ptr<Layout> make_bvecq(const std::vector<SegSpec>& segs, std::vector<unsigned> split = {});
  // Folios of these orders in a folio_queue, folioq_nr_slots() a segment
  // (every segment but the last full, as the kernel's revert assumes), the
  // iterator starting `offset` bytes into the first of them; `first_slot`
  // order-0 folios ahead of them in the first segment stand behind the start
  // (first_slot == 31: the iterator starts on the slot past the first
  // segment's end, as on a queue extended after the iterator was made).
  static std::unique_ptr<Layout> make_folioq(const std::vector<unsigned>& orders, unsigned first_slot = 0,
                                             size_t offset = 0);
  // Pages for byte positions start .. start + len at index pos >> PAGE_SHIFT;
  // `holes` lists page numbers (counted from the first page) left out.
  static std::unique_ptr<Layout> make_xarray(loff_t start, size_t len, const std::vector<size_t>& holes = {});
  static std::unique_ptr<Layout> make_discard(size_t len);
  // A random layout of that kind: zero-length and odd-sized segments, odd
  // offsets, bvecs over several frames; at most about max_total bytes.
  static std::unique_ptr<Layout> random(Kind kind, std::mt19937_64& rng, size_t max_total = 3 * iov::PAGE_SIZE);

  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
  ~Layout();

  Kind kind() const { return kind_; }
  size_t total() const { return total_; }          // bytes the segments hold
  size_t reachable() const { return reachable_; }  // bytes before the first xarray hole
  size_t nr_segs() const { return seg_start_.size(); }
  size_t seg_start(size_t seg) const { return seg_start_[seg]; }  // flat offset of a segment

  // A fresh iterator over the first `count` bytes (all of them by default).
  iov::iov_iter iter(unsigned direction) const { return iter(direction, total_); }
  iov::iov_iter iter(unsigned direction, size_t count) const;

  // Runs in flat order, one a segment (a page for xarray); zero-length
  // segments appear with len 0.
  const std::vector<Chunk>& runs() const { return runs_; }
  unsigned char* addr(size_t flat) const;  // nullptr where there is no memory
  // The non-empty pieces a walk of len bytes from flat offset pos must hand
  // its step: one a run, and for bvec/xarray split at page boundaries.
  std::vector<Chunk> pieces(size_t pos, size_t len) const;

  std::vector<unsigned char> gather() const;  // total() bytes; 0 where there is no memory
  void scatter(const std::vector<unsigned char>& flat);
  void fill(uint64_t seed);       // scatter(random_bytes(seed, total()))
  bool guards_intact() const;     // nothing outside the segments was written

  void* ubuf_base() const { return b_.ubuf(); }
  const std::vector<::iovec>& iovecs() const { return b_.iovecs(); }
  const std::vector<iov::kvec>& kvecs() const { return b_.kvecs(); }
  const std::vector<iov::bio_vec>& bvecs() const { return b_.bvecs(); }
  iov::bvecq* bvecq_head() const { return b_.bvecqs().empty() ? nullptr : b_.bvecqs().front(); }
  iov::folio_queue* folioq_head() const { return b_.folioqs().empty() ? nullptr : b_.folioqs().front(); }
  unsigned folioq_first_slot() const { return b_.folioq_first_slot(); }
  size_t folioq_offset() const { return b_.folioq_offset(); }
  iov::folio* folio_of(size_t seg) const { return folios_.at(seg); }  // FOLIOQ: the folio of a segment
  // The slot lengths of a queue in order, across its segments.
  std::vector<size_t> slot_lens() const;
  // The queue segment and slot of segment `seg` (counted across the queue).
  std::pair<const void*, unsigned> slot_home(size_t seg) const { return slot_home_.at(seg); }
  // The flat segment index of slot `slot` of queue segment `q` (a slot past a
  // segment's end is the next segment's first).
  size_t flat_slot(const void* q, unsigned slot) const;
  iov::xarray* xa() const { return b_.xa(); }
  loff_t xa_start() const { return b_.xa_start(); }
  iov::page* xa_page(size_t n) const;  // the page of page number n (counted from the first)

 private:
  Layout(Kind kind, const iter_desc& d);
  void add_run(unsigned char* base, size_t len, size_t seg);
  void describe(const iter_desc& d);

  Kind kind_;
  iter_builder b_;  // the segments and the memory
  size_t total_ = 0, reachable_ = 0;
  std::vector<std::pair<const void*, unsigned>> slot_home_;
  struct QueueSeg {
    const void* q;
    size_t first_flat;    // the flat index of its first slot past data_start
    unsigned data_start;  // slots ahead of the data (FOLIOQ: first_slot in the first segment)
  };
  std::vector<QueueSeg> qsegs_;
  std::vector<iov::folio*> folios_;  // FOLIOQ: the folio of each segment
  std::vector<iov::page*> xa_pages_;
  std::vector<Chunk> runs_;
  std::vector<size_t> seg_start_;
};

// Frames from one alloc_pages(), freed when the scope ends (also when an
// ASSERT leaves a test early).
class PageRun {
 public:
  explicit PageRun(unsigned order) : order_(order), p_(iov::alloc_pages(iov::GFP_KERNEL, order)) {}
  PageRun(const PageRun&) = delete;
  PageRun& operator=(const PageRun&) = delete;
  ~PageRun() { iov::free_pages(p_, order_); }
  iov::page* get() const { return p_; }
  unsigned char* bytes() const { return reinterpret_cast<unsigned char*>(p_); }
  size_t size() const { return iov::PAGE_SIZE << order_; }

 private:
  unsigned order_;
  iov::page* p_;
};

// Hand-made layouts of every kind that hit the edges: zero-length segments at
// the ends and in runs, bv_offset past the first frame, buffers that end a
// page, xarray ranges that start mid-page; filled with random bytes.
std::vector<std::unique_ptr<Layout>> edge_layouts();

// Deterministic bytes (no short period, so misplaced data shows).
std::vector<unsigned char> random_bytes(uint64_t seed, size_t n);

// The iterator's externally visible state: what must match between two ways
// of doing the same thing.
struct IterState {
  int type;
  bool data_source;
  size_t iov_offset;
  size_t count;
  unsigned long nr_segs;  // xarray_start for XARRAY; 0 for DISCARD
  const void* segs;       // the current segment (ubuf / xarray pointer)
  bool operator==(const IterState&) const = default;
};
IterState state_of(const iov::iov_iter& it);
std::ostream& operator<<(std::ostream& os, const IterState& s);

// Where the iterator stands: the base of the first non-empty piece a walk
// would hand its step (nullptr if none). Walks a copy.
const void* first_piece(const iov::iov_iter& it);

// The direction a test reads an iterator of that kind in: ITER_SOURCE, except
// DISCARD, which is always ITER_DEST.
inline unsigned source_or_dest(Kind k) { return k == Kind::discard ? iov::ITER_DEST : iov::ITER_SOURCE; }

// edge_layouts() and per_kind random layouts of every kind.
std::vector<std::unique_ptr<Layout>> mixed_layouts(uint64_t seed, int per_kind);

// Expects the iterator to hold `count` bytes and to stand at flat offset pos
// of l (its next non-empty piece starts at l.addr(pos)).
void expect_at(const Layout& l, const iov::iov_iter& it, size_t pos, size_t count);

// Seeds for randomized tests: the fixed list, or only IOV_TEST_SEED when set.
std::vector<uint64_t> test_seeds(std::vector<uint64_t> fixed);

// The pages under the model's flat bytes [pos, pos + len): the page of the
// first byte, then that of every later byte that starts a page (what
// iov_iter_get_pages2() and iov_iter_extract_pages() must return).
std::vector<iov::page*> model_pages(const Layout& l, size_t pos, size_t len);

// An address as an integer, for arithmetic on where pages lie.
inline uintptr_t addr_of(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace iov_test
