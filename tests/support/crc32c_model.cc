// crc32c_model.cc: the CRC model and the layouts of the crc32c tests (see
// crc32c_model.hpp).
#include "support/crc32c_model.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace iov_test::crc32c_model {

uint32_t model_crc(uint32_t crc, const void* data, size_t len) {
  static const std::vector<uint32_t> table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t b = 0; b < 256; b++) {
      t[b] = b;
      for (int k = 0; k < 8; k++) t[b] = (t[b] >> 1) ^ ((t[b] & 1) ? kPoly : 0);
    }
    return t;
  }();
  auto* p = static_cast<const u8*>(data);
  while (len--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

namespace {
struct gf2_matrix {
  uint32_t col[32];  // col[i]: the image of bit i
  uint32_t times(uint32_t v) const {
    uint32_t r = 0;
    for (int i = 0; v; i++, v >>= 1)
      if (v & 1) r ^= col[i];
    return r;
  }
  gf2_matrix squared() const {
    gf2_matrix m;
    for (int i = 0; i < 32; i++) m.col[i] = times(col[i]);
    return m;
  }
};
}  // namespace

uint32_t model_zeroes(uint32_t crc, uint64_t n) {
  gf2_matrix m;  // one zero bit
  m.col[0] = kPoly;
  for (int i = 1; i < 32; i++) m.col[i] = 1u << (i - 1);
  m = m.squared().squared().squared();  // one zero byte
  for (; n; n >>= 1, m = m.squared())
    if (n & 1) crc = m.times(crc);
  return crc;
}

namespace {
uint64_t test_seed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("IOV_TEST_SEED");
    uint64_t s = env && *env ? std::strtoull(env, nullptr, 0) : 0x5eed5eedull;
    std::fprintf(stderr, "crc32c tests: IOV_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}
}  // namespace

std::mt19937_64 rng_for(const char* salt) {
  std::seed_seq seq{test_seed(), static_cast<uint64_t>(std::hash<std::string>{}(salt))};
  return std::mt19937_64(seq);
}

void fill_random(std::mt19937_64& rng, void* p, size_t n) {
  auto* b = static_cast<u8*>(p);
  for (size_t k = 0; k < n; k++) b[k] = static_cast<u8>(rng());
}

// ---- layout ------------------------------------------------------------------

layout::layout(Kind k, size_t total, std::mt19937_64& rng) : kind_(k), total_(total), b_(iter_type_of(k)) {
  switch (k) {
    case Kind::ubuf: build_ubuf(rng); break;
    case Kind::iovec:
    case Kind::kvec: build_vec(rng); break;
    case Kind::bvec: build_bvec(rng); break;
    case Kind::bvecq: build_bvecq(rng); break;
    case Kind::folioq: build_folioq(rng); break;
    case Kind::xarray: build_xarray(rng); break;
    case Kind::discard: break;
  }
  for (auto& b : blocks_) fill_random(rng, b.mem, b.size);
}

void layout::init(iov::iov_iter* it, unsigned dir) const {
  *it = kind_ == Kind::folioq ? folioq_->iter(dir, total_) : b_.iter(dir, total_);
}

std::vector<u8> layout::gather(size_t off, size_t n) const {
  std::vector<u8> out;
  walk(off, n, [&](u8* p, size_t len) { out.insert(out.end(), p, p + len); });
  return out;
}

void layout::scatter(size_t off, const u8* src, size_t n) {
  walk(off, n, [&](u8* p, size_t len) { std::memcpy(p, src, len), src += len; });
}

std::vector<u8> layout::snapshot() const {
  std::vector<u8> all;
  for (auto& b : blocks_) all.insert(all.end(), b.mem, b.mem + b.size);
  return all;
}

void layout::restore(const std::vector<u8>& snap) {
  size_t pos = 0;
  for (auto& b : blocks_) std::memcpy(b.mem, snap.data() + pos, b.size), pos += b.size;
}

u8* layout::heap_block(size_t size) {
  blocks_.push_back({b_.alloc_bytes(size), size});
  return blocks_.back().mem;
}

u8* layout::page_block(unsigned order) {
  iov::page* pg = b_.alloc_frames(order);
  blocks_.push_back({static_cast<u8*>(iov::page_address(pg)), iov::PAGE_SIZE << order, pg, static_cast<int>(order)});
  return blocks_.back().mem;
}

// Splits total into random segment lengths, with zero-length ones mixed in;
// one layout in five has runs of 1- to 4-byte segments among the others.
std::vector<size_t> layout::split(std::mt19937_64& rng, size_t max_seg) const {
  std::vector<size_t> lens;
  const bool tiny = rng() % 5 == 0;
  for (size_t left = total_; left;) {
    size_t n = std::min(left, 1 + rng() % (tiny && rng() % 4 ? 4 : max_seg));
    if (rng() % 6 == 0) lens.push_back(0);
    lens.push_back(n);
    left -= n;
  }
  if (rng() % 3 == 0) lens.push_back(0);
  return lens;
}

void layout::build_ubuf(std::mt19937_64& rng) {
  size_t off = rng() % 64;
  u8* p = heap_block(total_ + off + 64);
  b_.set_ubuf(p + off);
  extents_.push_back({p + off, total_});
}

// Segments apart, or (half the time) back to back in one block.
void layout::build_vec(std::mt19937_64& rng) {
  bool adjacent = rng() % 2;
  u8* next = adjacent ? heap_block(total_ + 128) + rng() % 64 : nullptr;
  for (size_t len : split(rng, 1 + rng() % 3000)) {
    u8* p = adjacent ? next : heap_block(len + 128) + rng() % 64;
    next = p + len;
    b_.add_vec(p, len);
    if (len) extents_.push_back({p, len});
  }
}

// bio_vecs may span the frames of one alloc_pages() and start anywhere in
// it; half the time they follow one another through one allocation.
// Folios enough for total_ bytes from a random offset, some of them in a
// second segment; the test model's layout owns them.
void layout::build_folioq(std::mt19937_64& rng) {
  std::vector<unsigned> orders;
  size_t offset = rng() % iov::PAGE_SIZE, have = 0;
  while (have < offset + total_ || orders.empty()) {
    orders.push_back(static_cast<unsigned>(rng() % 3));
    have += iov::PAGE_SIZE << orders.back();
  }
  folioq_ = Layout::make_folioq(orders, rng() % 2 ? 29 : 0, offset);
  for (const Chunk& c : folioq_->runs()) {
    fill_random(rng, c.base, c.len);
    extents_.push_back({c.base, c.len});
  }
}

// The bio_vecs of build_bvec() in segments of two slots.
void layout::build_bvecq(std::mt19937_64& rng) {
  build_bvec(rng);
  b_.queue_bvecs(std::vector<unsigned>(std::max<size_t>((b_.bvecs().size() + 1) / 2, 1), 2), 2);
}

void layout::build_bvec(std::mt19937_64& rng) {
  bool adjacent = rng() % 2;
  size_t pos = rng() % iov::PAGE_SIZE;  // within the shared block
  unsigned shared_order = 2;  // at least 16 KiB, and room for total_ after any offset
  while ((iov::PAGE_SIZE << shared_order) < iov::PAGE_SIZE + total_) shared_order++;
  if (adjacent) page_block(shared_order);
  const block shared = blocks_.empty() ? block{} : blocks_.back();
  for (size_t len : split(rng, 1 + rng() % 10000)) {
    unsigned order = 0;
    size_t off = adjacent ? pos : rng() % iov::PAGE_SIZE;
    while (!adjacent && (iov::PAGE_SIZE << order) < off + len) order++;
    const block& b = adjacent ? shared : (page_block(order), blocks_.back());
    b_.add_bvec(b.pg + off / iov::PAGE_SIZE, len, off % iov::PAGE_SIZE);
    if (len) extents_.push_back({b.mem + off, len});
    pos += len;
  }
}

void layout::build_xarray(std::mt19937_64& rng) {
  size_t first = rng() % 1000, off = rng() % iov::PAGE_SIZE;
  b_.set_xarray_start(static_cast<loff_t>(first * iov::PAGE_SIZE + off));
  for (size_t idx = first, left = total_; left; idx++, off = 0) {
    u8* p = page_block(0);
    b_.store_page(idx, blocks_.back().pg);
    size_t part = std::min(left, iov::PAGE_SIZE - off);
    extents_.push_back({p + off, part});
    left -= part;
  }
}

// ---- positions and trials -------------------------------------------------------

void expect_same_position(const iov::iov_iter& a, const iov::iov_iter& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.iov_offset, b.iov_offset);
  EXPECT_EQ(a.nr_segs, b.nr_segs);
  EXPECT_EQ(a.ubuf, b.ubuf);  // the union's pointer: the current segment
}

trial draw(std::mt19937_64& rng, Kind k) {
  trial t{k, 0, 0, 0, static_cast<uint32_t>(rng())};
  t.total = rng() % 4 == 0 ? rng() % 65 : rng() % 8193;
  t.skip = t.total ? rng() % (t.total / 4 + 1) : 0;
  size_t left = t.total - t.skip;
  switch (rng() % 4) {
    case 0: t.bytes = left; break;
    case 1: t.bytes = left + 1 + rng() % 100; break;  // clamped to the count
    default: t.bytes = left ? rng() % (left + 1) : 0;
  }
  return t;
}

}  // namespace iov_test::crc32c_model
