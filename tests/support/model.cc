// model.cc: the layouts behind the test model (see model.hpp).
#include "support/model.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace iov_test {

using iov::PAGE_SIZE;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::ubuf: return "ubuf";
    case Kind::iovec: return "iovec";
    case Kind::kvec: return "kvec";
    case Kind::bvec: return "bvec";
    case Kind::bvecq: return "bvecq";
    case Kind::folioq: return "folioq";
    case Kind::xarray: return "xarray";
    default: return "discard";
  }
}

std::ostream& operator<<(std::ostream& os, const Chunk& r) {
  return os << "{flat " << r.flat << ", base " << static_cast<const void*>(r.base) << ", len " << r.len
            << ", seg " << r.seg << "}";
}

iov::iter_type iter_type_of(Kind k) {
  switch (k) {
    case Kind::ubuf: return iov::ITER_UBUF;
    case Kind::iovec: return iov::ITER_IOVEC;
    case Kind::kvec: return iov::ITER_KVEC;
    case Kind::bvec: return iov::ITER_BVEC;
    case Kind::bvecq: return iov::ITER_BVECQ;
    case Kind::folioq: return iov::ITER_FOLIOQ;
    case Kind::xarray: return iov::ITER_XARRAY;
    default: return iov::ITER_DISCARD;
  }
}

namespace {
iter_desc with_type(Kind k, iter_desc d) {
  d.type = iter_type_of(k);
  return d;
}
}  // namespace

Layout::Layout(Kind kind, const iter_desc& d) : kind_(kind), b_(with_type(kind, d)) { describe(d); }

Layout::~Layout() = default;

namespace {
iter_desc segs_desc(const std::vector<SegSpec>& segs) {
  iter_desc d;
  d.segs = segs;
  return d;
}
}  // namespace

void Layout::add_run(unsigned char* base, size_t len, size_t seg) {
  runs_.push_back(Chunk{total_, base, len, seg});
  total_ += len;
}

// The model's account of what the builder made: the flat runs, and for the
// queues where each segment's slot lives.
void Layout::describe(const iter_desc& d) {
  const std::vector<region>& regions = b_.regions();
  if (kind_ == Kind::xarray) {
    size_t first = static_cast<size_t>(d.start), last = first + d.len;  // byte positions
    size_t npages = d.len ? (last - 1) / PAGE_SIZE - first / PAGE_SIZE + 1 : 0, r = 0;
    bool hole_seen = false;
    for (size_t n = 0; n < npages; n++) {
      size_t page_pos = (first / PAGE_SIZE + n) * PAGE_SIZE;
      size_t lo = std::max(first, page_pos) - page_pos, hi = std::min(last, page_pos + PAGE_SIZE) - page_pos;
      if (std::find(d.holes.begin(), d.holes.end(), n) != d.holes.end()) {
        xa_pages_.push_back(nullptr);
        if (!hole_seen) reachable_ = total_;
        hole_seen = true;
        total_ += hi - lo;  // no memory, no run: the walk ends here
        continue;
      }
      const region& g = regions.at(r++);
      xa_pages_.push_back(reinterpret_cast<iov::page*>(g.mem));
      if (!hole_seen) add_run(g.mem + lo, hi - lo, n);
      else total_ += hi - lo;
    }
    if (!hole_seen) reachable_ = total_;
    return;
  }
  if (kind_ == Kind::discard) {
    total_ = reachable_ = d.len;
    return;
  }
  for (size_t k = 0; k < regions.size(); k++) {
    seg_start_.push_back(total_);
    add_run(regions[k].mem + regions[k].lo, regions[k].hi - regions[k].lo, k);
  }
  reachable_ = total_;
  if (kind_ == Kind::bvecq) {
    size_t next = 0;
    for (const iov::bvecq* bq : b_.bvecqs()) {
      qsegs_.push_back({bq, next, 0});
      for (unsigned slot = 0; slot < bq->nr_slots; slot++, next++) slot_home_.emplace_back(bq, slot);
    }
    size_t asked = 0;
    for (unsigned nr : d.split) asked += nr;
    EXPECT_TRUE(d.split.empty() || asked == d.segs.size()) << "make_bvecq: split does not cover the segments";
  } else if (kind_ == Kind::folioq) {
    unsigned start = d.first_slot;
    for (const iov::folio_queue* fq : b_.folioqs()) {
      qsegs_.push_back({fq, folios_.size(), start});
      for (unsigned slot = start; slot < iov::folioq_count(fq); slot++) {
        slot_home_.emplace_back(fq, slot);
        folios_.push_back(fq->vec.folios[slot]);
      }
      start = 0;
    }
  }
}

std::unique_ptr<Layout> Layout::make_ubuf(size_t len, size_t offset) {
  return std::unique_ptr<Layout>(new Layout(Kind::ubuf, segs_desc({{len, offset}})));
}

std::unique_ptr<Layout> Layout::make_iovec(const std::vector<SegSpec>& segs) {
  return std::unique_ptr<Layout>(new Layout(Kind::iovec, segs_desc(segs)));
}

std::unique_ptr<Layout> Layout::make_kvec(const std::vector<SegSpec>& segs) {
  return std::unique_ptr<Layout>(new Layout(Kind::kvec, segs_desc(segs)));
}

std::unique_ptr<Layout> Layout::make_bvec(const std::vector<SegSpec>& segs) {
  return std::unique_ptr<Layout>(new Layout(Kind::bvec, segs_desc(segs)));
}

std::unique_ptr<Layout> Layout::make_bvecq(const std::vector<SegSpec>& segs, std::vector<unsigned> split) {
  iter_desc d = segs_desc(segs);
  d.split = std::move(split);
  return std::unique_ptr<Layout>(new Layout(Kind::bvecq, d));
}

size_t Layout::flat_slot(const void* q, unsigned slot) const {
  for (const QueueSeg& g : qsegs_)
    if (g.q == q) return g.first_flat + (slot - g.data_start);
  ADD_FAILURE() << "flat_slot: not a segment of this queue";
  return SIZE_MAX;
}

std::unique_ptr<Layout> Layout::make_folioq(const std::vector<unsigned>& orders, unsigned first_slot, size_t offset) {
  iter_desc d;
  d.orders = orders;
  d.first_slot = first_slot;
  d.offset = offset;
  return std::unique_ptr<Layout>(new Layout(Kind::folioq, d));
}

std::vector<size_t> Layout::slot_lens() const {
  std::vector<size_t> v;
  for (const iov::bio_vec& bv : b_.bvecs()) v.push_back(bv.bv_len);
  return v;
}

std::unique_ptr<Layout> Layout::make_xarray(loff_t start, size_t len, const std::vector<size_t>& holes) {
  iter_desc d;
  d.start = start;
  d.len = len;
  d.holes = holes;
  return std::unique_ptr<Layout>(new Layout(Kind::xarray, d));
}

std::unique_ptr<Layout> Layout::make_discard(size_t len) {
  iter_desc d;
  d.len = len;
  return std::unique_ptr<Layout>(new Layout(Kind::discard, d));
}

std::unique_ptr<Layout> Layout::random(Kind kind, std::mt19937_64& rng, size_t max_total) {
  auto uni = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  // Lengths: often tiny or zero, sometimes several pages.
  auto seg_len = [&](size_t cap, int zero_in) -> size_t {
    if (uni(0, zero_in - 1) == 0) return 0;
    switch (uni(0, 3)) {
      case 0: return uni(1, 16);
      case 1: return uni(1, PAGE_SIZE);
      default: return uni(1, std::max<size_t>(cap, 1));
    }
  };
  auto offset = [&]() -> size_t { return uni(0, 2) == 0 ? 0 : uni(0, PAGE_SIZE - 1); };
  switch (kind) {
    case Kind::ubuf:
      return make_ubuf(seg_len(max_total, 8), offset());
    case Kind::iovec:
    case Kind::kvec: {
      std::vector<SegSpec> segs(uni(1, 8));
      for (SegSpec& s : segs) s = {seg_len(max_total / 2, 4), offset()};
      return kind == Kind::iovec ? make_iovec(segs) : make_kvec(segs);
    }
    case Kind::bvec: {
      std::vector<SegSpec> segs(uni(1, 6));
      for (SegSpec& s : segs) s = {seg_len(max_total / 2, 5), uni(0, 3) == 0 ? uni(0, 3 * PAGE_SIZE) : offset()};
      return make_bvec(segs);
    }
    case Kind::bvecq: {
      std::vector<SegSpec> segs(uni(1, 8));
      for (SegSpec& s : segs) s = {seg_len(max_total / 2, 4), uni(0, 3) == 0 ? uni(0, 3 * PAGE_SIZE) : offset()};
      std::vector<unsigned> split;  // some segments empty, some of one slot
      for (size_t left = segs.size(); left || split.empty();) {
        unsigned nr = static_cast<unsigned>(std::min<size_t>(uni(0, 4), left));
        split.push_back(nr);
        left -= nr;
      }
      return make_bvecq(segs, split);
    }
    case Kind::folioq: {
      // Mostly order 0 and 1, some order 2 and 3; sometimes starting late in
      // the first segment (or past it) so that a walk crosses into the next.
      std::vector<unsigned> orders(uni(1, 6));
      for (unsigned& o : orders) o = uni(0, 7) < 5 ? static_cast<unsigned>(uni(0, 1)) : static_cast<unsigned>(uni(2, 3));
      unsigned first_slot = uni(0, 1) ? static_cast<unsigned>(uni(27, 31)) : 0;
      // (On the slot past a segment's end an offset is the kernel's WARN in extraction: none there.)
      size_t offset = first_slot == 31 || uni(0, 2) == 0 ? 0 : uni(0, PAGE_SIZE << orders[0]);
      return make_folioq(orders, first_slot, offset);
    }
    case Kind::xarray: {
      loff_t start = static_cast<loff_t>(uni(0, 3) * PAGE_SIZE + offset());
      return make_xarray(start, seg_len(max_total, 8));
    }
    default:
      return make_discard(seg_len(max_total, 8));
  }
}

iov::iov_iter Layout::iter(unsigned direction, size_t count) const { return b_.iter(direction, count); }

unsigned char* Layout::addr(size_t flat) const {
  for (const Chunk& r : runs_)
    if (flat >= r.flat && flat < r.flat + r.len) return r.base + (flat - r.flat);
  return nullptr;
}

std::vector<Chunk> Layout::pieces(size_t pos, size_t len) const {
  std::vector<Chunk> out;
  size_t end = pos + len;
  for (const Chunk& r : runs_) {
    size_t a = std::max(pos, r.flat), b = std::min(end, r.flat + r.len);
    if (a >= b) continue;
    unsigned char* p = r.base + (a - r.flat);
    size_t n = b - a;
    while (n) {
      size_t m = n;
      if (page_split(kind_)) m = std::min(n, PAGE_SIZE - reinterpret_cast<uintptr_t>(p) % PAGE_SIZE);
      out.push_back(Chunk{a, p, m, r.seg});
      a += m;
      p += m;
      n -= m;
    }
  }
  return out;
}

std::vector<unsigned char> Layout::gather() const {
  std::vector<unsigned char> flat(total_, 0);
  for (const Chunk& r : runs_)
    if (r.len) std::memcpy(flat.data() + r.flat, r.base, r.len);
  return flat;
}

void Layout::scatter(const std::vector<unsigned char>& flat) {
  for (const Chunk& r : runs_)
    if (r.len) std::memcpy(r.base, flat.data() + r.flat, r.len);
}

void Layout::fill(uint64_t seed) { scatter(random_bytes(seed, total_)); }

bool Layout::guards_intact() const { return b_.guards_intact(); }

iov::page* Layout::xa_page(size_t n) const { return n < xa_pages_.size() ? xa_pages_[n] : nullptr; }

std::vector<std::unique_ptr<Layout>> edge_layouts() {
  std::vector<std::unique_ptr<Layout>> v;
  v.push_back(Layout::make_ubuf(0, 0));
  v.push_back(Layout::make_ubuf(1, 0));
  v.push_back(Layout::make_ubuf(5000, 4095));
  v.push_back(Layout::make_ubuf(3 * PAGE_SIZE, 0));
  for (Kind k : {Kind::iovec, Kind::kvec}) {
    for (const std::vector<SegSpec>& segs : std::vector<std::vector<SegSpec>>{
             {{10, 3}, {0, 0}, {20, 4090}, {0, 0}, {0, 0}, {5, 0}},
             {{0, 0}, {PAGE_SIZE, 0}, {0, 5}},
             {{2 * PAGE_SIZE + 7, 4000}},
             {{0, 0}},
             {{1, 4095}, {1, 4095}, {1, 0}, {0, 0}}})
      v.push_back(k == Kind::iovec ? Layout::make_iovec(segs) : Layout::make_kvec(segs));
  }
  v.push_back(Layout::make_bvec({{10000, 5000}}));
  v.push_back(Layout::make_bvec({{0, 100}, {PAGE_SIZE, 0}, {0, 0}, {100, 4000}, {2 * PAGE_SIZE, PAGE_SIZE}, {0, 7}}));
  v.push_back(Layout::make_bvec({{3 * PAGE_SIZE, 0}}));
  v.push_back(Layout::make_bvec({{1, 4095}, {0, 1}, {1, 0}}));
  v.push_back(Layout::make_bvec({{0, 0}}));
  v.push_back(Layout::make_bvecq({{10000, 5000}}));
  v.push_back(Layout::make_bvecq({{0, 100}, {PAGE_SIZE, 0}, {0, 0}, {100, 4000}, {2 * PAGE_SIZE, PAGE_SIZE}, {0, 7}},
                                 {0, 2, 1, 0, 3, 0}));
  v.push_back(Layout::make_bvecq({{1, 4095}, {0, 1}, {1, 0}}, {1, 1, 1}));
  v.push_back(Layout::make_bvecq({{PAGE_SIZE, 0}, {PAGE_SIZE, 0}}, {1, 0, 0, 1}));
  v.push_back(Layout::make_bvecq({{0, 0}}));
  v.push_back(Layout::make_folioq({0, 1, 0, 2}));
  v.push_back(Layout::make_folioq({1, 0}, 30, 5000));         // across into a second segment
  v.push_back(Layout::make_folioq({0, 0, 1}, 31));            // from the slot past the first segment
  std::vector<unsigned> many(40, 0);
  many[3] = 2;
  v.push_back(Layout::make_folioq(many, 0, PAGE_SIZE - 1));  // 31 + 9 folios
  v.push_back(Layout::make_xarray(100, 3 * PAGE_SIZE));
  v.push_back(Layout::make_xarray(2 * PAGE_SIZE, PAGE_SIZE));
  v.push_back(Layout::make_xarray(PAGE_SIZE - 1, 2));
  v.push_back(Layout::make_xarray(5, 0));
  v.push_back(Layout::make_discard(0));
  v.push_back(Layout::make_discard(12345));
  for (size_t n = 0; n < v.size(); n++) v[n]->fill(n + 1);
  return v;
}

std::vector<unsigned char> random_bytes(uint64_t seed, size_t n) {
  std::vector<unsigned char> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t k = 0; k < n; k++) {
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;  // xorshift64*
    v[k] = static_cast<unsigned char>((x * 0x2545F4914F6CDD1Dull) >> 56);
  }
  return v;
}

IterState state_of(const iov::iov_iter& it) {
  IterState s{it.type, it.data_source, it.iov_offset, it.count, 0, nullptr};
  switch (it.type) {
    case iov::ITER_UBUF: s.nr_segs = it.nr_segs; s.segs = it.ubuf; break;
    case iov::ITER_IOVEC: s.nr_segs = it.nr_segs; s.segs = it.iov; break;
    case iov::ITER_KVEC: s.nr_segs = it.nr_segs; s.segs = it.kvec; break;
    case iov::ITER_BVEC: s.nr_segs = it.nr_segs; s.segs = it.bvec; break;
    case iov::ITER_BVECQ: s.nr_segs = it.bvecq_slot; s.segs = it.bvecq; break;
    case iov::ITER_FOLIOQ: s.nr_segs = it.folioq_slot; s.segs = it.folioq; break;
    case iov::ITER_XARRAY: s.nr_segs = static_cast<unsigned long>(it.xarray_start); s.segs = it.xarray; break;
    default: break;
  }
  return s;
}

std::ostream& operator<<(std::ostream& os, const IterState& s) {
  return os << "{type " << s.type << ", source " << s.data_source << ", iov_offset " << s.iov_offset << ", count "
            << s.count << ", nr_segs " << s.nr_segs << ", segs " << s.segs << "}";
}

const void* first_piece(const iov::iov_iter& it) {
  iov::iov_iter probe = it;
  const void* found = nullptr;
  auto step = [](void* base, size_t, size_t len, void* priv, void*) -> size_t {
    if (!len) return 0;
    *static_cast<const void**>(priv) = base;
    return len;  // process nothing: the walk stops here
  };
  iov::iterate_and_advance2(&probe, probe.count, &found, nullptr, step, step);
  return found;
}

std::vector<std::unique_ptr<Layout>> mixed_layouts(uint64_t seed, int per_kind) {
  std::vector<std::unique_ptr<Layout>> v = edge_layouts();
  std::mt19937_64 rng(seed);
  for (Kind k : kAllKinds)
    for (int n = 0; n < per_kind; n++) {
      v.push_back(Layout::random(k, rng));
      v.back()->fill(seed + n);
    }
  return v;
}

void expect_at(const Layout& l, const iov::iov_iter& it, size_t pos, size_t count) {
  EXPECT_EQ(iov::iov_iter_count(&it), count);
  if (count && pos < l.reachable() && l.kind() != Kind::discard) {
    EXPECT_EQ(first_piece(it), l.addr(pos)) << "position " << pos;
  }
}

std::vector<uint64_t> test_seeds(std::vector<uint64_t> fixed) {
  if (const char* env = std::getenv("IOV_TEST_SEED"); env && *env)
    return {std::strtoull(env, nullptr, 0)};
  return fixed;
}

std::vector<iov::page*> model_pages(const Layout& l, size_t pos, size_t len) {
  std::vector<iov::page*> v;
  for (size_t x = pos; x < pos + len; x++)
    if (x == pos || iov::offset_in_page(l.addr(x)) == 0) v.push_back(iov::virt_to_page(l.addr(x)));
  return v;
}

}  // namespace iov_test
