// crc32c_test.cc: crc32c.hpp against a model written here — a byte-table CRC
// built bit by bit, and zlib's bit-matrix powers for runs of zeroes — over
// flat memory and random layouts of every iterator type, inline and out of
// line, at every SIMD level of the fused kernels this CPU has.
//
//   ctest -R crc32c_test
//   IOV_TEST_SEED=12345 build/release/tests/crc32c_test   # a fresh seed instead of the fixed one
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <iov/crc32c.hpp>
#include <iov/iov_iter.hpp>
#include <iov/position.hpp>
#include <iov/xarray.hpp>

namespace {

using iov::internal::simd_level;
using u8 = uint8_t;

// ---- the model ---------------------------------------------------------------

constexpr uint32_t kPoly = 0x82F63B78u;  // Castagnoli, reflected

// The raw update, no inversion: what the kernel's crc32c() computes.
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

// crc over n zero bytes by bit-matrix powers (the method of zlib's old
// crc32_combine), independent of the library's polynomial multiply.
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

uint32_t model_zeroes(uint32_t crc, uint64_t n) {
  gf2_matrix m;  // one zero bit
  m.col[0] = kPoly;
  for (int i = 1; i < 32; i++) m.col[i] = 1u << (i - 1);
  m = m.squared().squared().squared();  // one zero byte
  for (; n; n >>= 1, m = m.squared())
    if (n & 1) crc = m.times(crc);
  return crc;
}

// ---- seeds, levels ---------------------------------------------------------------

uint64_t test_seed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("IOV_TEST_SEED");
    uint64_t s = env && *env ? std::strtoull(env, nullptr, 0) : 0x5eed5eedull;
    std::fprintf(stderr, "crc32c_test: IOV_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// A generator per test, so one test's draws do not depend on another's.
std::mt19937_64 rng_for(const char* salt) {
  std::seed_seq seq{test_seed(), static_cast<uint64_t>(std::hash<std::string>{}(salt))};
  return std::mt19937_64(seq);
}

void fill_random(std::mt19937_64& rng, void* p, size_t n) {
  auto* b = static_cast<u8*>(p);
  for (size_t k = 0; k < n; k++) b[k] = static_cast<u8>(rng());
}

// Runs fn at every level the CPU has, then restores the level found.
template <class Fn>
void for_each_level(Fn fn) {
  simd_level saved = iov::internal::crc32c_level();
  for (simd_level l : {simd_level::portable, simd_level::avx2, simd_level::avx512}) {
    if (!iov::internal::crc32c_select(l)) continue;
    SCOPED_TRACE(std::string("simd level ") + iov::internal::simd_level_name(l));
    fn();
  }
  ASSERT_TRUE(iov::internal::crc32c_select(saved));
}

// ---- vectors and flat memory -----------------------------------------------------

// The check value, and RFC 3720's iSCSI vectors (standard: inverted in and out).
TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(~iov::crc32c(~0u, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(~model_crc(~0u, "123456789", 9), 0xE3069283u);
  u8 v[4][32];  // 0x00..., 0xff..., 0, 1, ..., 31 and 31, 30, ..., 0
  for (int k = 0; k < 32; k++) v[0][k] = 0, v[1][k] = 0xff, v[2][k] = static_cast<u8>(k), v[3][k] = static_cast<u8>(31 - k);
  const uint32_t want[4] = {0x8A9136AA, 0x62A8AB43, 0x46DD794E, 0x113FDB5C};
  for (int j = 0; j < 4; j++) {
    EXPECT_EQ(~iov::crc32c(~0u, v[j], 32), want[j]) << "vector " << j;
    EXPECT_EQ(~model_crc(~0u, v[j], 32), want[j]) << "vector " << j;  // the model agrees with the standard
  }
}

// Every length 0..64 at every alignment 0..63, then random lengths to 8 KiB.
TEST(Crc32c, MatchesModel) {
  auto rng = rng_for("flat");
  std::vector<u8> buf(8192 + 64);
  fill_random(rng, buf.data(), buf.size());
  auto check = [&](size_t len, size_t a) {
    uint32_t c0 = static_cast<uint32_t>(rng());
    ASSERT_EQ(iov::crc32c(c0, buf.data() + a, len), model_crc(c0, buf.data() + a, len)) << len << " at " << a;
  };
  for (size_t len = 0; len <= 64; len++)
    for (size_t a = 0; a < 64; a++) ASSERT_NO_FATAL_FAILURE(check(len, a));
  for (int k = 0; k < 2000; k++) ASSERT_NO_FATAL_FAILURE(check(rng() % 8193, rng() % 64));
}

// The fused kernel behind the copies, at every level: every short length at
// every source alignment (destinations spread too); then, as its loops change
// at 16, 64 and 256 bytes and the portable one blocks at 8 KiB, every length
// to 1100 and random ones beyond a block.
TEST(Crc32c, CopyKernelMatchesModel) {
  auto rng = rng_for("copy-kernel");
  std::vector<u8> src(20000 + 64), dst(20000 + 128);
  fill_random(rng, src.data(), src.size());
  for_each_level([&] {
    auto check = [&](size_t len, size_t sa, size_t da) {
      uint32_t c0 = static_cast<uint32_t>(rng());
      std::fill(dst.begin(), dst.end(), u8{0xa5});
      ASSERT_EQ(iov::internal::crc32c_copy(dst.data() + da, src.data() + sa, len, c0),
                model_crc(c0, src.data() + sa, len))
          << len << " from " << sa << " to " << da;
      ASSERT_EQ(std::memcmp(dst.data() + da, src.data() + sa, len), 0) << len;
      auto untouched = [](auto from, auto to) { return std::all_of(from, to, [](u8 c) { return c == 0xa5; }); };
      ASSERT_TRUE(untouched(dst.begin(), dst.begin() + da) && untouched(dst.begin() + da + len, dst.end()))
          << "bytes written outside the copy";
    };
    for (size_t len = 0; len <= 64; len++)
      for (size_t a = 0; a < 64; a++) ASSERT_NO_FATAL_FAILURE(check(len, a, (a * 37 + len) % 64));
    for (size_t len = 0; len <= 1100; len++) ASSERT_NO_FATAL_FAILURE(check(len, len % 64, (len * 7) % 64));
    for (int k = 0; k < 200; k++) ASSERT_NO_FATAL_FAILURE(check(rng() % 20001, rng() % 64, rng() % 64));
  });
}

// crc32_iscsi() takes an int: a length past INT_MAX must be fed in pieces.
// 2 GiB + 4 KiB of address space tiled with one 1 MiB memfd, so it costs no RAM.
TEST(Crc32c, LengthBeyondIntMax) {
  constexpr size_t kTile = size_t{1} << 20, kTiles = 2049;
  constexpr size_t kLen = (kTiles - 1) * kTile + 4096 + 13;  // > INT_MAX
  static_assert(kLen > size_t{INT_MAX});
  int fd = memfd_create("crc32c_test", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kTile), 0);
  void* tile = mmap(nullptr, kTile, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(tile, MAP_FAILED);
  auto rng = rng_for("int-max");
  fill_random(rng, tile, kTile);
  auto* base = static_cast<u8*>(mmap(nullptr, kTiles * kTile, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  for (size_t t = 0; t < kTiles; t++)
    ASSERT_NE(mmap(base + t * kTile, kTile, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0), MAP_FAILED);

  // Model: crc(c, tile) == zeroes(c, |tile|) ^ crc(0, tile), tile after tile.
  uint32_t c0 = static_cast<uint32_t>(rng()), want = c0;
  const uint32_t tile_crc = model_crc(0, tile, kTile);
  for (size_t t = 0; t + 1 < kTiles; t++) want = model_zeroes(want, kTile) ^ tile_crc;
  want = model_crc(want, tile, kLen - (kTiles - 1) * kTile);
  EXPECT_EQ(iov::crc32c(c0, base, kLen), want);

  munmap(base, kTiles * kTile);
  munmap(tile, kTile);
  close(fd);
}

// ---- combine and zero extension ---------------------------------------------------

TEST(Crc32c, ExtendZeroesMatchesDirect) {
  auto rng = rng_for("zeroes");
  std::vector<u8> zeros(size_t{1} << 20);
  for_each_level([&] {
    std::vector<size_t> lens = {0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 63, 64, 4095, 4096, size_t{1} << 20};
    for (int k = 0; k < 40; k++) lens.push_back(rng() % ((size_t{1} << 20) + 1));
    for (size_t n : lens) {
      uint32_t c0 = static_cast<uint32_t>(rng());
      ASSERT_EQ(iov::crc32c_extend_zeroes(c0, n), model_crc(c0, zeros.data(), n)) << "n " << n;
    }
  });
}

TEST(Crc32c, ExtendZeroesHuge) {
  auto rng = rng_for("zeroes-huge");
  for_each_level([&] {
    std::vector<uint64_t> lens = {uint64_t{1} << 32, (uint64_t{1} << 40) + 7, SIZE_MAX, SIZE_MAX - 1,
                                  uint64_t{0xFFFFFFFF}};
    for (int k = 0; k < 40; k++) lens.push_back(rng());
    for (uint64_t n : lens) {
      uint32_t c0 = static_cast<uint32_t>(rng());
      ASSERT_EQ(iov::crc32c_extend_zeroes(c0, n), model_zeroes(c0, n)) << "n " << n;
    }
    EXPECT_EQ(iov::crc32c_extend_zeroes(0, SIZE_MAX), 0u);  // zero stays zero
  });
}

TEST(Crc32c, CombineMatchesDirect) {
  auto rng = rng_for("combine");
  std::vector<u8> buf(10000);
  fill_random(rng, buf.data(), buf.size());
  for_each_level([&] {
    for (int k = 0; k < 300; k++) {
      size_t la = rng() % 5000, lb = k < 10 ? static_cast<size_t>(k % 3) : rng() % 5000;
      uint32_t c0 = static_cast<uint32_t>(rng());
      uint32_t a = model_crc(c0, buf.data(), la), b = model_crc(0, buf.data() + la, lb);
      ASSERT_EQ(iov::crc32c_combine(a, b, lb), model_crc(c0, buf.data(), la + lb)) << la << "+" << lb;
    }
  });
}

// ---- iterators ----------------------------------------------------------------

enum class kind { ubuf, iovec, kvec, bvec, xarray, discard };
const char* kind_name(kind k) {
  const char* names[] = {"ubuf", "iovec", "kvec", "bvec", "xarray", "discard"};
  return names[static_cast<int>(k)];
}

// A random layout of `total` bytes of one iterator type. Every byte the
// iterator covers lives in one of `blocks` (each with slack around it), and
// `extents` lists the covered ranges in iterator order, so the model can read
// and write "byte k of the iterator" directly.
class layout {
 public:
  layout(kind k, size_t total, std::mt19937_64& rng) : kind_(k), total_(total) {
    switch (k) {
      case kind::ubuf: build_ubuf(rng); break;
      case kind::iovec:
      case kind::kvec: build_vec(rng); break;
      case kind::bvec: build_bvec(rng); break;
      case kind::xarray: build_xarray(rng); break;
      case kind::discard: break;
    }
    for (auto& b : blocks_) fill_random(rng, b.mem, b.size);
  }
  ~layout() {
    xa_.reset();
    for (auto& b : blocks_) b.page_order >= 0 ? iov::free_pages(b.pg, b.page_order) : std::free(b.mem);
  }

  void init(iov::iov_iter* it, unsigned dir) const {
    switch (kind_) {
      case kind::ubuf: iov::iov_iter_ubuf(it, dir, blocks_[0].mem + ubuf_off_, total_); break;
      case kind::iovec: iov::iov_iter_init(it, dir, iovs_.data(), iovs_.size(), total_); break;
      case kind::kvec: iov::iov_iter_kvec(it, dir, kvecs_.data(), kvecs_.size(), total_); break;
      case kind::bvec: iov::iov_iter_bvec(it, dir, bvecs_.data(), bvecs_.size(), total_); break;
      case kind::xarray: iov::iov_iter_xarray(it, dir, xa_.get(), xa_start_, total_); break;
      case kind::discard: iov::iov_iter_discard(it, dir, total_); break;
    }
  }

  // Bytes [off, off + n) of the iterator, in order.
  std::vector<u8> gather(size_t off, size_t n) const {
    std::vector<u8> out;
    walk(off, n, [&](u8* p, size_t len) { out.insert(out.end(), p, p + len); });
    return out;
  }
  void scatter(size_t off, const u8* src, size_t n) {
    walk(off, n, [&](u8* p, size_t len) { std::memcpy(p, src, len), src += len; });
  }
  // Every block's bytes, slack included: a snapshot to compare whole memory.
  std::vector<u8> snapshot() const {
    std::vector<u8> all;
    for (auto& b : blocks_) all.insert(all.end(), b.mem, b.mem + b.size);
    return all;
  }
  void restore(const std::vector<u8>& snap) {
    size_t pos = 0;
    for (auto& b : blocks_) std::memcpy(b.mem, snap.data() + pos, b.size), pos += b.size;
  }

 private:
  struct block {
    u8* mem;
    size_t size;
    iov::page* pg = nullptr;
    int page_order = -1;
  };

  template <class Fn>
  void walk(size_t off, size_t n, Fn fn) const {
    for (auto [p, len] : extents_) {
      if (!n) break;
      if (off >= len) {
        off -= len;
        continue;
      }
      size_t part = std::min(len - off, n);
      fn(p + off, part);
      n -= part;
      off = 0;
    }
  }
  u8* heap_block(size_t size) {
    blocks_.push_back({static_cast<u8*>(std::malloc(size ? size : 1)), size});
    return blocks_.back().mem;
  }
  u8* page_block(unsigned order) {
    iov::page* pg = iov::alloc_pages(iov::GFP_KERNEL, order);
    blocks_.push_back({static_cast<u8*>(iov::page_address(pg)), iov::PAGE_SIZE << order, pg, static_cast<int>(order)});
    return blocks_.back().mem;
  }
  // Splits total into random segment lengths, with zero-length ones mixed in.
  std::vector<size_t> split(std::mt19937_64& rng, size_t max_seg) const {
    std::vector<size_t> lens;
    for (size_t left = total_; left;) {
      size_t n = std::min(left, 1 + rng() % max_seg);
      if (rng() % 6 == 0) lens.push_back(0);
      lens.push_back(n);
      left -= n;
    }
    if (rng() % 3 == 0) lens.push_back(0);
    return lens;
  }
  void build_ubuf(std::mt19937_64& rng) {
    ubuf_off_ = rng() % 64;
    u8* p = heap_block(total_ + ubuf_off_ + 64);
    extents_.push_back({p + ubuf_off_, total_});
  }
  // Segments apart, or (half the time) back to back in one block.
  void build_vec(std::mt19937_64& rng) {
    bool adjacent = rng() % 2;
    u8* next = adjacent ? heap_block(total_ + 128) + rng() % 64 : nullptr;
    for (size_t len : split(rng, 1 + rng() % 3000)) {
      u8* p = adjacent ? next : heap_block(len + 128) + rng() % 64;
      next = p + len;
      iovs_.push_back({p, len});
      kvecs_.push_back({p, len});
      if (len) extents_.push_back({p, len});
    }
  }
  // bio_vecs may span the frames of one alloc_pages() and start anywhere in
  // it; half the time they follow one another through one allocation.
  void build_bvec(std::mt19937_64& rng) {
    bool adjacent = rng() % 2;
    size_t pos = rng() % iov::PAGE_SIZE;  // within the shared block
    if (adjacent) page_block(2);          // 16 KiB: room for 8 KiB after any offset
    const block shared = blocks_.empty() ? block{} : blocks_.back();
    for (size_t len : split(rng, 1 + rng() % 10000)) {
      unsigned order = 0;
      size_t off = adjacent ? pos : rng() % iov::PAGE_SIZE;
      while (!adjacent && (iov::PAGE_SIZE << order) < off + len) order++;
      const block& b = adjacent ? shared : (page_block(order), blocks_.back());
      bvecs_.push_back({b.pg + off / iov::PAGE_SIZE, static_cast<unsigned>(len),
                        static_cast<unsigned>(off % iov::PAGE_SIZE)});
      if (len) extents_.push_back({b.mem + off, len});
      pos += len;
    }
  }
  void build_xarray(std::mt19937_64& rng) {
    xa_ = std::make_unique<iov::xarray>();
    size_t first = rng() % 1000, off = rng() % iov::PAGE_SIZE;
    xa_start_ = static_cast<loff_t>(first * iov::PAGE_SIZE + off);
    for (size_t idx = first, left = total_; left; idx++, off = 0) {
      u8* p = page_block(0);
      iov::xa_store(xa_.get(), idx, blocks_.back().pg);
      size_t part = std::min(left, iov::PAGE_SIZE - off);
      extents_.push_back({p + off, part});
      left -= part;
    }
  }

  kind kind_;
  size_t total_;
  std::vector<block> blocks_;
  std::vector<std::pair<u8*, size_t>> extents_;
  std::vector<::iovec> iovs_;
  std::vector<iov::kvec> kvecs_;
  std::vector<iov::bio_vec> bvecs_;
  std::unique_ptr<iov::xarray> xa_;
  loff_t xa_start_ = 0;
  size_t ubuf_off_ = 0;
};

void expect_same_position(const iov::iov_iter& a, const iov::iov_iter& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.iov_offset, b.iov_offset);
  EXPECT_EQ(a.nr_segs, b.nr_segs);
  EXPECT_EQ(a.ubuf, b.ubuf);  // the union's pointer: the current segment
}

// One of the four fused forms.
size_t fused(bool to_iter, bool outofline, u8* addr, size_t bytes, uint32_t* crc, iov::iov_iter* it) {
  if (to_iter)
    return outofline ? iov::crc32c_and_copy_to_iter_outofline(addr, bytes, crc, it)
                     : iov::crc32c_and_copy_to_iter(addr, bytes, crc, it);
  return outofline ? iov::crc32c_and_copy_from_iter_outofline(addr, bytes, crc, it)
                   : iov::crc32c_and_copy_from_iter(addr, bytes, crc, it);
}

struct trial {
  kind k;
  size_t total, skip, bytes;
  uint32_t c0;
};

trial draw(std::mt19937_64& rng, kind k) {
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

constexpr kind kAllKinds[] = {kind::ubuf, kind::iovec, kind::kvec, kind::bvec, kind::xarray, kind::discard};
constexpr int kTrials = 60;

TEST(Crc32cIter, MatchesModelInlineAndOutOfLine) {
  auto rng = rng_for("iter");
  for (kind k : kAllKinds)
    for (int n = 0; n < kTrials; n++) {
      trial t = draw(rng, k);
      unsigned dir = n % 2 ? iov::ITER_SOURCE : iov::ITER_DEST;  // read whatever the direction
      SCOPED_TRACE(testing::Message() << kind_name(k) << " total " << t.total << " skip " << t.skip << " bytes "
                                      << t.bytes << " dir " << dir);
      layout lay(k, t.total, rng);
      iov::iov_iter a, b;
      lay.init(&a, dir);
      iov::iov_iter_advance(&a, t.skip);
      b = a;
      uint32_t ca = t.c0, cb = t.c0;
      size_t na = iov::crc32c_iter(&a, t.bytes, &ca);
      size_t nb = iov::crc32c_iter_outofline(&b, t.bytes, &cb);
      size_t want = k == kind::discard ? 0 : std::min(t.bytes, t.total - t.skip);
      ASSERT_EQ(na, want);
      ASSERT_EQ(nb, want);
      std::vector<u8> bytes = lay.gather(t.skip, want);
      EXPECT_EQ(ca, model_crc(t.c0, bytes.data(), want));
      EXPECT_EQ(cb, ca);
      EXPECT_EQ(a.count, t.total - t.skip - want);
      expect_same_position(a, b);
    }
}

TEST(Crc32cIter, ZeroBytesAndDiscard) {
  auto rng = rng_for("iter-zero");
  for (kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    layout lay(k, 5000, rng);
    for (int outofline = 0; outofline < 2; outofline++) {
      iov::iov_iter it, before;
      lay.init(&it, iov::ITER_SOURCE);
      before = it;
      // Zero bytes: nothing for any type; a discard iterator has no memory: nothing at all.
      for (size_t bytes : {size_t{0}, k == kind::discard ? size_t{100} : size_t{0}}) {
        uint32_t crc = 0x1234;
        EXPECT_EQ(outofline ? iov::crc32c_iter_outofline(&it, bytes, &crc) : iov::crc32c_iter(&it, bytes, &crc), 0u);
        EXPECT_EQ(crc, 0x1234u);
        expect_same_position(it, before);
      }
    }
  }
}

// The fused copies against the model: copy, then CRC of the bytes copied.
// Both forms start from the same memory; the copy must land exactly where the
// model says and nowhere else.
void check_fused(kind k, const trial& t, bool to_iter, std::mt19937_64& rng) {
  SCOPED_TRACE(testing::Message() << kind_name(k) << (to_iter ? " to_iter" : " from_iter") << " total " << t.total
                                  << " skip " << t.skip << " bytes " << t.bytes);
  layout lay(k, t.total, rng);
  std::vector<u8> flat(t.bytes + 64);
  fill_random(rng, flat.data(), flat.size());
  size_t flat_off = rng() % 64;
  const std::vector<u8> mem0 = lay.snapshot(), flat0 = flat;
  size_t want = to_iter || k != kind::discard ? std::min(t.bytes, t.total - t.skip) : 0;
  // The bytes the copy moves: the source's, whichever side that is.
  const std::vector<u8> moved = to_iter ? std::vector<u8>(flat0.begin() + static_cast<long>(flat_off),
                                                          flat0.begin() + static_cast<long>(flat_off + want))
                                        : lay.gather(t.skip, want);
  std::vector<u8> model_mem = mem0, model_flat = flat0;
  if (to_iter) {
    lay.scatter(t.skip, moved.data(), want);
    model_mem = lay.snapshot();
  } else {
    std::copy(moved.begin(), moved.end(), model_flat.begin() + static_cast<long>(flat_off));
  }

  iov::iov_iter results[2];
  uint32_t crcs[2];
  for (int outofline = 0; outofline < 2; outofline++) {
    SCOPED_TRACE(outofline ? "out of line" : "inline");
    lay.restore(mem0);
    flat = flat0;
    iov::iov_iter& it = results[outofline];
    lay.init(&it, to_iter ? iov::ITER_DEST : iov::ITER_SOURCE);
    iov::iov_iter_advance(&it, t.skip);
    uint32_t& crc = crcs[outofline];
    crc = t.c0;
    ASSERT_EQ(fused(to_iter, outofline, flat.data() + flat_off, t.bytes, &crc, &it), want);
    EXPECT_EQ(it.count, t.total - t.skip - want);
    EXPECT_EQ(crc, model_crc(t.c0, moved.data(), want));
    EXPECT_TRUE(lay.snapshot() == model_mem) << "iterator memory differs from the model";
    EXPECT_TRUE(flat == model_flat) << "flat buffer differs from the model";
  }
  EXPECT_EQ(crcs[1], crcs[0]);
  expect_same_position(results[0], results[1]);
}

TEST(Crc32cIter, FusedCopiesMatchModel) {
  auto rng = rng_for("fused");
  for_each_level([&] {
    for (kind k : kAllKinds)
      for (int n = 0; n < kTrials; n++) {
        trial t = draw(rng, k);
        ASSERT_NO_FATAL_FAILURE(check_fused(k, t, true, rng));
        if (k != kind::discard) {  // a discard iterator is never a source
          ASSERT_NO_FATAL_FAILURE(check_fused(k, t, false, rng));
        }
      }
  });
}

// A copy into an ITER_SOURCE iterator (or out of an ITER_DEST one) is the
// kernel's WARN_ON_ONCE: 0, nothing copied, crc and iterator unchanged.
TEST(Crc32cIter, WrongDirectionCopiesNothing) {
  auto rng = rng_for("direction");
  for (kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    layout lay(k, 3000, rng);
    const std::vector<u8> mem0 = lay.snapshot();
    std::vector<u8> flat(3000, 0x77);
    for (int form = 0; form < 4; form++) {
      iov::iov_iter it, before;
      bool to_iter = form < 2, outofline = form % 2;
      lay.init(&it, to_iter ? iov::ITER_SOURCE : iov::ITER_DEST);  // discard is always ITER_DEST
      if (to_iter && k == kind::discard) continue;
      before = it;
      uint32_t crc = 0xabcdef;
      EXPECT_EQ(fused(to_iter, outofline, flat.data(), 1000, &crc, &it), 0u) << "form " << form;
      EXPECT_EQ(crc, 0xabcdefu);
      expect_same_position(it, before);
      EXPECT_TRUE(lay.snapshot() == mem0);
      EXPECT_TRUE(std::all_of(flat.begin(), flat.end(), [](u8 c) { return c == 0x77; }));
    }
  }
}

#if IOV_FAULT_INJECTION
// A fault in a user copy ends the copy short; the CRC covers what was copied.
TEST(Crc32cIter, ShortUserCopy) {
  auto rng = rng_for("fault");
  for (kind k : {kind::ubuf, kind::iovec})
    for (int n = 0; n < 20; n++) {
      layout lay(k, 6000, rng);
      std::vector<u8> flat(6000);
      fill_random(rng, flat.data(), flat.size());
      size_t budget = rng() % 6000;
      for (int form = 0; form < 4; form++) {
        bool to_iter = form < 2, outofline = form % 2;
        iov::iov_iter it;
        lay.init(&it, to_iter ? iov::ITER_DEST : iov::ITER_SOURCE);
        uint32_t crc = 7;
        iov::internal::usercopy_fault_after(budget);
        size_t got = fused(to_iter, outofline, flat.data(), 6000, &crc, &it);
        iov::internal::usercopy_fault_clear();
        ASSERT_EQ(got, budget);
        EXPECT_EQ(it.count, 6000 - budget);
        std::vector<u8> moved = lay.gather(0, budget);  // for to_iter, what landed there
        EXPECT_EQ(crc, model_crc(7, moved.data(), budget));
        if (to_iter) {
          EXPECT_TRUE(std::equal(moved.begin(), moved.end(), flat.begin()));
        }
      }
    }
}
#endif

}  // namespace
