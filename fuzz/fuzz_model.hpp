// fuzz_model.hpp: what the fuzz targets share — a reader over the fuzzer's
// bytes, the flat models they check against (plain loops and memcpy, a
// bitwise CRC32C) and the layout: an iov_iter of any type over fresh memory
// (made by the shared iter_builder, tests/kit/iter_builder.hpp), with the
// model's account of where each of its bytes lives.
//
//   fuzz::input in(data, size);
//   fuzz::layout L;
//   L.build(in);                       // any type: UBUF, IOVEC, KVEC, BVEC, BVECQ, FOLIOQ, XARRAY, DISCARD
//   size_t n = L.reach(len);           // what a copy of len bytes must process
//   L.check("copy_to_iter");           // count, position and every byte vs the model
//
// The model never calls the library to compute an expected value: a logical
// byte k of the iterator lives at addr[k] (nullptr: no memory, for DISCARD or
// an XARRAY hole) and its expected contents at *shadow[k].
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "iov/bvecq.hpp"
#include "iov/folio_queue.hpp"
#include "iov/copy.hpp"
#include "iov/crc32c.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"
#include "iov/page.hpp"
#include "iov/position.hpp"
#include "iov/xarray.hpp"
#include "iov/zero_scan.hpp"
#include "kit/iter_builder.hpp"

namespace fuzz {

// Set IOV_FUZZ_TRACE=1 to see each operation of an input (to read a reproducer).
inline void trace(const char* fmt, ...) {
  static const bool on = std::getenv("IOV_FUZZ_TRACE") != nullptr;
  if (!on) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

// The model's loops are not what is being tested: keep them out of the
// coverage feedback, where they would only slow the fuzzer down (noinline, or
// a caller would take them in instrumented). Only on functions that call
// nothing of the library, which would lose its coverage if inlined into them.
#define FUZZ_MODEL __attribute__((no_sanitize("coverage"), noinline))

[[noreturn]] inline void fail(const char* what, const char* file, int line) {
  std::fprintf(stderr, "fuzz: model mismatch: %s (%s:%d); rerun with IOV_FUZZ_TRACE=1\n", what, file, line);
  std::abort();
}
#define FUZZ_CHECK(cond) ((cond) ? (void)0 : ::fuzz::fail(#cond, __FILE__, __LINE__))

// The fuzzer's bytes as numbers; reads past the end give zeroes.
class input {
 public:
  input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ == end_; }
  uint8_t u8() { return p_ < end_ ? *p_++ : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
  uint32_t u32() { return u16() | static_cast<uint32_t>(u16()) << 16; }
  uint64_t u64() { return u32() | static_cast<uint64_t>(u32()) << 32; }
  // Uniform-ish in [0, n).
  size_t below(size_t n) {
    if (n <= 1) return 0;
    if (n <= 256) return u8() % n;
    if (n <= 65536) return u16() % n;
    return u64() % n;
  }
  // A length in [0, max], biased to where walks break: tiny, a few bytes
  // around a page multiple, anything, or max itself.
  size_t length(size_t max) {
    uint8_t m = u8();
    size_t n;
    switch (m & 3) {
      case 0: n = m >> 2; break;
      case 1: {
        size_t base = ((m >> 2) & 7) * iov::PAGE_SIZE, delta = u8() % 33;
        n = base + delta < 16 ? 0 : base + delta - 16;
        break;
      }
      case 2: n = u16(); break;
      default: n = max; break;
    }
    return n < max ? n : max;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// Contents for a buffer: all zero, noise, or zero with rare non-zero bytes
// (so that the zero scans meet both answers), chosen by seed.
FUZZ_MODEL inline void fill(unsigned char* p, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 0x9e3779b9u;
  for (size_t k = 0; k < n; k++) {
    x = x * 1103515245u + 12345u;
    switch (seed & 3) {
      case 0: p[k] = 0; break;
      case 1: p[k] = static_cast<unsigned char>(x >> 24); break;
      default: p[k] = (x >> 16) % 97 == 0 ? static_cast<unsigned char>((x >> 24) | 1) : 0; break;
    }
  }
}

// CRC-32C the slow way: reflected, polynomial 0x82F63B78, no inversion (the
// kernel's crc32c() convention).
FUZZ_MODEL inline uint32_t crc32c_bitwise(uint32_t crc, const unsigned char* p, size_t n) {
  for (size_t k = 0; k < n; k++) {
    crc ^= p[k];
    for (int b = 0; b < 8; b++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return crc;
}

// The same CRC a byte at a time through a table built by that loop, for the
// long runs (a whole device) where the bitwise form would be too slow.
FUZZ_MODEL inline uint32_t crc32c_table(uint32_t crc, const unsigned char* p, size_t n) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t b = 0; b < 256; b++) {
      unsigned char byte = static_cast<unsigned char>(b);
      t[b] = crc32c_bitwise(0, &byte, 1);
    }
    return t;
  }();
  for (size_t k = 0; k < n; k++) crc = (crc >> 8) ^ table[(crc ^ p[k]) & 0xff];
  return crc;
}

inline bool same_iter(const iov::iov_iter& a, const iov::iov_iter& b) {
  return a.type == b.type && a.data_source == b.data_source && a.iov_offset == b.iov_offset && a.ubuf == b.ubuf &&
         a.count == b.count && a.nr_segs == b.nr_segs;
}

inline constexpr size_t kMaxSegs = 16;
inline constexpr size_t kMaxSeg = 3 * iov::PAGE_SIZE;

class layout {
 public:
  iov::iov_iter it{};
  iov::iter_type type = iov::ITER_DISCARD;
  unsigned dir = iov::ITER_DEST;
  std::vector<unsigned char*> addr;    // where logical byte k lives
  std::vector<unsigned char*> shadow;  // the model's copy of it
  size_t cap = 0, pos = 0, count = 0;  // reexpand bound, bytes consumed, bytes left
  std::vector<size_t> empty_bvecs;     // where zero-length bio_vecs sit, as logical offsets

  layout() = default;
  layout(const layout&) = delete;
  layout& operator=(const layout&) = delete;
  ~layout() = default;  // b_ frees the memory and the segments

  void build(input& in);
  bool user_backed() const { return type == iov::ITER_UBUF || type == iov::ITER_IOVEC; }
  bool discard() const { return type == iov::ITER_DISCARD; }

  // Bytes a walk over the memory processes for a request of n: n clamped to
  // the count, ending at an XARRAY hole (DISCARD: just the clamp).
  FUZZ_MODEL size_t reach(size_t n) const {
    n = n < count ? n : count;
    if (discard()) return n;
    size_t k = 0;
    while (k < n && addr[pos + k]) k++;
    return k;
  }
  unsigned char get(size_t k) const { return *shadow[pos + k]; }
  // Bulk forms of get and put, and the CRC of the next n bytes.
  FUZZ_MODEL void get_all(unsigned char* to, size_t n) const {
    for (size_t k = 0; k < n; k++) to[k] = *shadow[pos + k];
  }
  FUZZ_MODEL void put_all(const unsigned char* from, size_t n) {
    for (size_t k = 0; !discard() && k < n; k++) *shadow[pos + k] = from ? from[k] : 0;
  }
  FUZZ_MODEL uint32_t crc_of(uint32_t crc, size_t n) const {
    for (size_t k = 0; k < n; k++) crc = crc32c_bitwise(crc, shadow[pos + k], 1);
    return crc;
  }
  // Do bytes [k, k + n) live at base, base + 1, ...?
  FUZZ_MODEL bool lives_at(size_t k, const void* base, size_t n) const {
    for (size_t j = 0; j < n; j++)
      if (addr[pos + k + j] != static_cast<const unsigned char*>(base) + j) return false;
    return true;
  }
  // The zero bytes that lead the next n (clamped to the count; up to a hole).
  FUZZ_MODEL size_t zero_run(size_t n) const {
    size_t k = 0, m = n < count ? n : count;
    while (k < m && addr[pos + k] && !*shadow[pos + k]) k++;
    return k;
  }
  // Are the n bytes from k on all there (no hole) and zero?
  FUZZ_MODEL bool zero_at(size_t k, size_t n) const {
    for (size_t j = k; j < k + n; j++)
      if (!addr[pos + j] || *shadow[pos + j]) return false;
    return true;
  }
  void put(size_t k, unsigned char v) {
    if (!discard()) *shadow[pos + k] = v;
  }
  void advance(size_t n) {
    pos += n;
    count -= n;
  }

  // The iterator against the model: count, type, direction, every byte of
  // every buffer, and the address of the next byte (a one-byte walk on a copy).
  void check(const char* op) const {
    trace("  -> pos %zu count %zu (%s)", pos, count, op);
    FUZZ_CHECK(it.count == count && it.type == type && iov::iov_iter_rw(&it) == static_cast<int>(dir));
    for (const region& r : regions_)
      FUZZ_CHECK(r.len == 0 || std::memcmp(r.mem, r.model.data(), r.len) == 0);
    if (!count || discard()) return;
    iov::iov_iter probe = it;
    void* first = nullptr;
    auto rec = [&first](void* base, size_t, size_t len, void*, void*) -> size_t {
      if (len && !first) first = base;
      return 0;
    };
    size_t n = iov::iterate_and_advance2(&probe, 1, nullptr, nullptr, rec, rec);
    FUZZ_CHECK(n == (addr[pos] ? 1u : 0u) && first == addr[pos]);
  }

 private:
  // A buffer of the builder's and the model's copy of its contents.
  struct region {
    unsigned char* mem;
    size_t len;
    std::vector<unsigned char> model;
  };

  region& add_region(size_t len, bool pages, uint32_t seed) {
    auto* mem = pages ? reinterpret_cast<unsigned char*>(b_->alloc_frames(iov_test::iter_builder::order_for(len)))
                      : b_->alloc_bytes(len);
    return add_filled(mem, len, seed);
  }
  region& add_filled(unsigned char* mem, size_t len, uint32_t seed) {
    fill(mem, len, seed);
    regions_.push_back(region{mem, len, std::vector<unsigned char>(mem, mem + len)});
    return regions_.back();
  }
  // Logical bytes [off, off + len) of region r come next.
  FUZZ_MODEL void extend(const region& r, size_t off, size_t len) {
    for (size_t k = 0; k < len; k++) {
      addr.push_back(r.mem + off + k);
      shadow.push_back(const_cast<unsigned char*>(r.model.data()) + off + k);
    }
  }
  void extend_none(size_t len) {
    addr.insert(addr.end(), len, nullptr);
    shadow.insert(shadow.end(), len, nullptr);
  }
  // One IOVEC/KVEC segment: empty (maybe with a null base), a part of an
  // earlier buffer (segments may overlap), or a buffer of its own.
  ::iovec vec_segment(input& in, uint32_t seed) {
    uint8_t mode = in.u8() % 4;
    if (mode == 0) return ::iovec{in.u8() & 1 ? nullptr : &empty_byte_, 0};
    if (mode == 1 && !regions_.empty()) {
      const region& r = regions_[in.below(regions_.size())];
      size_t off = in.below(r.len + 1), len = in.length(r.len - off);
      extend(r, off, len);
      return ::iovec{r.mem + off, len};
    }
    region& r = add_region(in.length(kMaxSeg), false, seed);
    extend(r, 0, r.len);
    trace("  segment: %zu bytes", r.len);
    return ::iovec{r.mem, r.len};
  }
  // One bio_vec: up to four contiguous frames, any offset and length within
  // them, sometimes sharing frames with an earlier one.
  void bvec_segment(input& in, uint32_t seed) {
    const region* r;
    if (in.u8() % 4 == 0 && !regions_.empty()) {
      r = &regions_[in.below(regions_.size())];
    } else {
      r = &add_region(iov::PAGE_SIZE << in.below(3), true, seed);
    }
    size_t off = in.below(r->len + 1), len = in.length(r->len - off);
    if (!len && type == iov::ITER_BVEC) empty_bvecs.push_back(addr.size());
    extend(*r, off, len);
    trace("  bvec: offset %zu into %zu bytes, len %zu", off, r->len, len);
    auto* pg = reinterpret_cast<iov::page*>(r->mem);
    if (in.u8() & 1)
      b_->add_bvec(pg + off / iov::PAGE_SIZE, len, off % iov::PAGE_SIZE);
    else
      b_->add_bvec(pg, len, off);  // bv_offset past a frame
  }
  // An xarray index to start at: near 0, near a node boundary, or far out.
  static unsigned long xarray_index(input& in) {
    switch (in.u8() % 3) {
      case 0: return in.below(4);
      case 1: return (1UL << (6 * (1 + in.below(7)))) - 2 + in.below(4);
      default: return in.u64() & ((1UL << 50) - 1);
    }
  }

  std::unique_ptr<iov_test::iter_builder> b_;  // the segments and the memory
  std::vector<region> regions_;
  unsigned char empty_byte_ = 0;
};

inline void layout::build(input& in) {
  uint8_t head = in.u8(), seed = in.u8();
  // The queues last, so that inputs from before them keep their meaning.
  static constexpr iov::iter_type kTypes[] = {iov::ITER_UBUF,   iov::ITER_IOVEC,   iov::ITER_KVEC,
                                              iov::ITER_BVEC,   iov::ITER_XARRAY,  iov::ITER_DISCARD,
                                              iov::ITER_BVECQ,  iov::ITER_FOLIOQ};
  type = kTypes[head & 7];
  dir = (head >> 3) & 1 ? iov::ITER_SOURCE : iov::ITER_DEST;
  b_ = std::make_unique<iov_test::iter_builder>(type);
  regions_.reserve(3 * kMaxSegs + 8);  // shadow pointers stay valid (FOLIOQ: up to 40 folios)
  size_t xa_start = 0, fq_offset = 0;
  unsigned fq_first_slot = 0;
  size_t nsegs = 0;
  if (type == iov::ITER_UBUF) {
    region& r = add_region(in.length(2 * kMaxSeg), false, seed);
    extend(r, 0, r.len);
    b_->set_ubuf(r.mem);
  } else if (type == iov::ITER_IOVEC || type == iov::ITER_KVEC) {
    for (size_t k = 0, nr = nsegs = in.below(kMaxSegs + 1); k < nr; k++) {
      ::iovec v = vec_segment(in, seed + k);
      b_->add_vec(v.iov_base, v.iov_len);
    }
  } else if (type == iov::ITER_BVEC || type == iov::ITER_BVECQ) {
    for (size_t k = 0, nr = nsegs = in.below(kMaxSegs + 1); k < nr; k++) bvec_segment(in, seed + k);
    // BVECQ: segments of mostly 0-4 slots, empty ones too, at either end.
    std::vector<unsigned> split;
    for (size_t k = 0; type == iov::ITER_BVECQ && (k < nsegs || split.empty());) {
      size_t nr = split.size() < 2 * kMaxSegs ? in.below(5) : kMaxSegs;  // the input may have run out
      split.push_back(static_cast<unsigned>(std::min(nr, nsegs - k)));
      k += split.back();
    }
    if (type == iov::ITER_BVECQ) b_->queue_bvecs(split, kMaxSegs);
  } else if (type == iov::ITER_FOLIOQ) {
    // Up to 40 folios of order 0-2, sometimes starting late in the first
    // segment (fillers ahead) or on the slot past its end, so walks cross.
    b_->add_folioq_segment();
    fq_first_slot = in.u8() & 1 ? 27 + static_cast<unsigned>(in.below(5)) : 0;
    for (unsigned k = 0; k < fq_first_slot; k++) b_->add_folio(b_->alloc_folio(0));
    for (size_t k = 0, nr = in.below(41); k < nr; k++) {
      iov::folio* f = b_->alloc_folio(static_cast<unsigned>(in.below(3)));
      region& r = add_filled(static_cast<unsigned char*>(iov::folio_address(f)), iov::folio_size(f), seed + k);
      extend(r, 0, r.len);
      b_->add_folio(f);
    }
    if (fq_first_slot < 31 && !addr.empty()) fq_offset = in.below(regions_.front().len + 1);  // none on slot 31: the kernel's WARN
    addr.erase(addr.begin(), addr.begin() + fq_offset);
    shadow.erase(shadow.begin(), shadow.begin() + fq_offset);
  } else if (type == iov::ITER_XARRAY) {
    unsigned long index = xarray_index(in);
    size_t nr = in.below(6), off = nr ? in.below(iov::PAGE_SIZE) : 0;
    for (size_t k = 0; k < nr; k++) {
      if (in.u8() % 8 == 0) {  // a hole: the walk ends there
        extend_none(iov::PAGE_SIZE);
        continue;
      }
      region& r = add_region(iov::PAGE_SIZE, true, seed + k);
      b_->store_page(index + k, r.mem);
      extend(r, 0, r.len);
    }
    addr.erase(addr.begin(), addr.begin() + off);
    shadow.erase(shadow.begin(), shadow.begin() + off);
    xa_start = (index << iov::PAGE_SHIFT) + off;
  } else {
    dir = iov::ITER_DEST;  // a discard iterator always is
    extend_none(in.length(4 * kMaxSeg));
  }
  cap = addr.size();
  count = in.u8() & 1 ? in.below(cap + 1) : cap;  // sometimes less than the segments hold
  if (type == iov::ITER_UBUF || type == iov::ITER_XARRAY || type == iov::ITER_DISCARD)
    cap = count;  // their extent is the count they were made with
  static const char* const kNames[] = {"UBUF", "IOVEC", "KVEC", "BVEC", "XARRAY", "DISCARD", "BVECQ", "FOLIOQ"};
  trace("layout: %s dir %u segs %zu cap %zu count %zu", kNames[head & 7], dir, nsegs, cap, count);
  b_->set_folioq_start(fq_first_slot, fq_offset);
  b_->set_xarray_start(static_cast<loff_t>(xa_start));
  it = b_->iter((head >> 3) & 1 ? iov::ITER_SOURCE : iov::ITER_DEST, count);
}

}  // namespace fuzz
