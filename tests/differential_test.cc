// differential_test.cc: random sequences of data and position operations
// (copies, zeroing, nocache copies, CRC32C, zero scans, advance, revert, ...) on
// random iterators of every type, each step checked against the flat model of
// support/model.hpp, and each run a second way (the *_outofline twin, or a
// walk through generic_iterate() on a copy) with identical results. The uio.h
// names that ports use besides (get_pages2/_alloc2 with their page references,
// npages_cap, gap_alignment, the _nofault, _mc, _flushcache and _full_nocache
// copies, dup_iter) are in the same sequences.
//
//   ctest -R differential_test
//   IOV_TEST_SEED=12345 ./differential_test     # one fresh seed instead of the fixed ones
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/internal/outofline.hpp"
#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov_test::Kind;
using iov_test::Layout;
using iov_test::model_pages;
using bytes = std::vector<unsigned char>;

enum class Op { copy_to, copy_from, zero, copy_to_full, copy_from_full, advance, revert, truncate, reexpand, save, restore,
                nocache, crc, is_zero, skip_zeroes, get_pages, npages_cap, gap_alignment, page_nofault, copy_mc,
                flushcache, full_nocache, dup };
constexpr Op kOps[] = {Op::copy_to,    Op::copy_from,    Op::zero,          Op::copy_to_full, Op::copy_from_full,
                       Op::advance,    Op::revert,       Op::truncate,      Op::reexpand,     Op::save,
                       Op::restore,    Op::nocache,      Op::crc,           Op::is_zero,      Op::skip_zeroes,
                       Op::get_pages,  Op::npages_cap,   Op::gap_alignment, Op::page_nofault, Op::copy_mc,
                       Op::flushcache, Op::full_nocache, Op::dup};
const char* op_name(Op op) {
  static const char* const names[] = {"copy_to_iter", "copy_from_iter", "iov_iter_zero", "copy_to_iter_full",
                                      "copy_from_iter_full", "iov_iter_advance", "iov_iter_revert",
                                      "iov_iter_truncate", "iov_iter_reexpand", "iov_iter_save_state",
                                      "iov_iter_restore", "copy_from_iter_nocache", "crc32c_iter",
                                      "iov_iter_is_zero", "iov_iter_skip_zeroes", "iov_iter_get_pages2",
                                      "iov_iter_npages_cap", "iov_iter_gap_alignment",
                                      "copy_page_to_iter_nofault", "copy_mc_to_iter",
                                      "copy_from_iter_flushcache", "copy_from_iter_full_nocache", "dup_iter"};
  static_assert(std::size(names) == std::size(kOps));
  return names[static_cast<int>(op)];
}

// Collects the bytes a walk hands its steps, whatever the direction.
size_t gather_step(void* base, size_t progress, size_t len, void* priv, void*) {
  auto* out = static_cast<bytes*>(priv);
  std::copy_n(static_cast<unsigned char*>(base), len, out->begin() + progress);
  return 0;
}
size_t noop_step(void*, size_t, size_t, void*, void*) { return 0; }

// The bytes under the iterator, read by walking a copy of it.
bytes under(const iov::iov_iter& it, bool outofline, size_t* walked) {
  iov::iov_iter copy = it;
  bytes out(it.count);
  *walked = outofline ? iov::generic_iterate(&copy, it.count, &out, nullptr, gather_step, gather_step)
                      : iov::iterate_and_advance2(&copy, it.count, &out, nullptr, gather_step, gather_step);
  out.resize(*walked);
  return out;
}

// One iterator and its model: the memory (flat), the position and the count.
struct Sim {
  std::unique_ptr<Layout> l;
  bytes flat;
  iov::iov_iter it;
  unsigned dir;
  size_t pos = 0, count = 0;
  struct Saved {
    iov::iov_iter_state st;
    size_t pos, count;
  };
  std::optional<Saved> saved;
};

// The iterator agrees with the model, read inline and through generic_iterate.
void check(const Sim& s) {
  ASSERT_EQ(s.it.count, s.count);
  size_t walked_inline, walked_generic;
  bytes a = under(s.it, false, &walked_inline), b = under(s.it, true, &walked_generic);
  EXPECT_EQ(walked_inline, s.count);
  EXPECT_EQ(walked_generic, s.count);
  if (s.l->kind() != Kind::discard) {
    ASSERT_LE(s.pos + s.count, s.flat.size());
    EXPECT_TRUE(std::equal(a.begin(), a.end(), s.flat.begin() + s.pos, s.flat.begin() + s.pos + s.count))
        << "the bytes under the iterator (inline walk)";
  }
  EXPECT_EQ(a, b) << "inline and generic walks differ";
}

// Runs a data op that writes the iterator's memory both ways from the same
// starting memory, and checks each against the model.
template <class Inline, class Twin>
void write_both_ways(Sim& s, size_t want, Inline&& op, Twin&& twin, const bytes& expect_flat) {
  bytes before = s.l->gather();
  iov::iov_iter tw = s.it;
  EXPECT_EQ(twin(&tw), want) << "outofline";
  EXPECT_EQ(s.l->gather(), expect_flat) << "outofline";
  s.l->scatter(before);
  EXPECT_EQ(op(&s.it), want);
  EXPECT_EQ(s.l->gather(), expect_flat);
  EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it)) << "outofline leaves another state";
}

// A copy into the iterator (copy_to_iter and the names built like it) of
// `src`, n bytes asked: the model writes what fits when the iterator is a
// destination, and nothing otherwise.
template <class Inline, class Twin>
void copy_into(Sim& s, size_t n, const unsigned char* src, Inline&& op, Twin&& twin) {
  size_t fit = std::min(n, s.count);
  bytes expect = s.flat;
  size_t want = s.dir == iov::ITER_DEST ? fit : 0;
  if (s.l->kind() != Kind::discard) std::copy_n(src, want, expect.begin() + s.pos);
  write_both_ways(s, want, op, twin, expect);
  s.flat = expect;
  s.pos += want, s.count -= want;
}

// A copy out of the iterator, n bytes asked, both ways: what fits when the
// iterator is a source, nothing otherwise.
template <class Inline, class Twin>
void copy_out(Sim& s, size_t n, Inline&& op, Twin&& twin) {
  size_t fit = std::min(n, s.count), want = s.dir == iov::ITER_DEST ? 0 : fit;
  bytes d1(fit + 1, 0xee), d2(fit + 1, 0xee), expect(fit + 1, 0xee);
  std::copy_n(s.flat.begin() + s.pos, want, expect.begin());
  iov::iov_iter tw = s.it;
  EXPECT_EQ(twin(d2.data(), &tw), want);
  EXPECT_EQ(op(d1.data(), &s.it), want);
  EXPECT_EQ(d1, expect);
  EXPECT_EQ(d2, expect);
  EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it));
  s.pos += want, s.count -= want;
}

// The bytes from pos to the end of the model's segment that holds byte pos.
size_t rest_of_segment(const Layout& l, size_t pos) {
  for (const iov_test::Chunk& c : l.runs())
    if (c.len && c.flat <= pos && pos < c.flat + c.len) return c.flat + c.len - pos;
  return 0;
}

// iov_iter_get_pages2() or _alloc2(): which bytes, which pages, and one
// reference on each returned page for a kernel-backed iterator (the model's
// user buffers are not the allocator's: their count stays), all dropped again
// by put_page().
void get_pages_step(Sim& s, size_t n, bool alloc, unsigned maxpages) {
  Kind kind = s.l->kind();
  size_t limit = std::min(n, s.count);
  iov_test::IterState before_state = iov_test::state_of(s.it);
  bool nothing = !limit || (!alloc && !maxpages);
  bool efault = kind == Kind::kvec || kind == Kind::discard || kind == Kind::bvecq;
  // The kernel's quirk: a bvec with nothing left gives no pages (0 or -ENOMEM).
  bool spent_bvec = kind == Kind::bvec && s.it.nr_segs && s.it.iov_offset == s.it.bvec->bv_len;
  size_t rest = kind == Kind::folioq || kind == Kind::xarray ? limit : rest_of_segment(*s.l, s.pos);
  size_t start0 = nothing || efault || spent_bvec ? 0 : iov::offset_in_page(s.l->addr(s.pos));
  size_t page_room = alloc ? SIZE_MAX : maxpages * iov::PAGE_SIZE - start0;
  size_t want = nothing || efault || spent_bvec ? 0 : std::min({limit, rest, page_room});
  // A later frame of a bvec run without __GFP_COMP (every other of the
  // builder's runs) has no count: referencing it is the kernel's BUG, so such
  // a call is not made; in a compound run the count is the head's.
  std::vector<iov::page*> pages_want = model_pages(*s.l, s.pos, want);
  std::map<iov::page*, int> before;
  for (iov::page* p : pages_want) before[iov::compound_head(p)] = iov::page_ref_count(p);  // one count a compound page
  for (auto [p, c] : before)
    if (!c) return;
  iov::page* array[8];
  iov::page** pages = alloc ? nullptr : array;
  size_t start = SIZE_MAX;
  ssize_t res = alloc ? iov::iov_iter_get_pages_alloc2(&s.it, &pages, n, &start)
                      : iov::iov_iter_get_pages2(&s.it, pages, n, maxpages, &start);
  if (nothing) {
    EXPECT_EQ(res, 0);
  } else if (efault) {
    EXPECT_EQ(res, -EFAULT);
  } else if (spent_bvec) {
    EXPECT_TRUE(res == 0 || res == -ENOMEM) << res;
  } else {
    EXPECT_EQ(res, static_cast<ssize_t>(want));
  }
  if (res <= 0) {
    EXPECT_EQ(s.it.count, before_state.count);
    if (alloc) {
      EXPECT_EQ(pages, nullptr);
    }
    return;
  }
  EXPECT_EQ(start, start0);
  size_t nr = (static_cast<size_t>(res) + start + iov::PAGE_SIZE - 1) / iov::PAGE_SIZE;
  ASSERT_EQ(nr, pages_want.size());
  EXPECT_EQ(std::vector<iov::page*>(pages, pages + nr), pages_want);
  std::map<iov::page*, int> times;
  for (size_t k = 0; k < nr; k++) times[iov::compound_head(pages[k])]++;
  for (auto [p, t] : times)
    EXPECT_EQ(iov::page_ref_count(p), before[p] + (iov_test::user_backed(kind) ? 0 : t)) << "page " << p;
  for (size_t k = 0; k < nr; k++) iov::put_page(pages[k]);
  for (auto [p, c] : before) EXPECT_EQ(iov::page_ref_count(p), c) << "put_page gave back page " << p;
  if (alloc) std::free(pages);
  s.pos += static_cast<size_t>(res), s.count -= static_cast<size_t>(res);
}

// iov_iter_npages() of the first max_bytes, by the kernel's per-type rules
// where they follow from the model alone (BVEC and BVECQ count per bio_vec,
// so only their definition, npages of a truncated copy, is checked).
void npages_cap_step(Sim& s, int maxpages, size_t max_bytes) {
  Kind kind = s.l->kind();
  size_t c = std::min(s.count, max_bytes);
  iov::iov_iter copy = s.it;
  iov::iov_iter_truncate(&copy, max_bytes);
  int by_definition = iov::iov_iter_npages(&copy, maxpages);
  std::optional<size_t> model;
  if (!c || kind == Kind::discard) {
    model = 0;
  } else if (kind == Kind::folioq || kind == Kind::xarray) {
    size_t off = kind == Kind::xarray ? static_cast<size_t>(s.l->xa_start() + static_cast<loff_t>(s.pos)) % iov::PAGE_SIZE
                                      : iov::offset_in_page(s.l->addr(s.pos));
    model = (off + c + iov::PAGE_SIZE - 1) / iov::PAGE_SIZE;
  } else if (iov_test::user_backed(kind) || kind == Kind::kvec) {  // KVEC counts as IOVEC
    size_t sum = 0;
    for (const iov_test::Chunk& p : s.l->pieces(s.pos, c))
      sum += (iov::offset_in_page(p.base) + p.len + iov::PAGE_SIZE - 1) / iov::PAGE_SIZE;
    model = sum;
  }
  iov_test::IterState before = iov_test::state_of(s.it);
  int got = iov::iov_iter_npages_cap(&s.it, maxpages, max_bytes);
  EXPECT_EQ(got, by_definition);
  if (model) {
    EXPECT_EQ(got, static_cast<int>(std::min<size_t>(*model, static_cast<size_t>(maxpages))));
  }
  EXPECT_EQ(iov_test::state_of(s.it), before) << "npages_cap restores the count";
}

// The OR of each non-empty iovec's start with the previous one's end, from
// the current segment on, over the count (iov_offset ignored, as the kernel's).
void gap_alignment_step(const Sim& s) {
  unsigned long want;
  if (s.l->kind() == Kind::ubuf) {
    want = 0;
  } else if (s.l->kind() != Kind::iovec) {
    want = ~0U;  // the kernel's WARN value
  } else {
    want = 0;
    const std::vector<::iovec>& v = s.l->iovecs();
    size_t size = s.count;
    uintptr_t prev_end = 0;
    for (size_t k = static_cast<size_t>(iov::iter_iov(&s.it) - v.data()); k < v.size(); k++) {
      if (!v[k].iov_len) continue;
      uintptr_t b = reinterpret_cast<uintptr_t>(v[k].iov_base);
      if (prev_end) want |= b | prev_end;
      prev_end = b + v[k].iov_len;
      if (size <= v[k].iov_len) break;
      size -= v[k].iov_len;
    }
  }
  EXPECT_EQ(iov::iov_iter_gap_alignment(&s.it), want);
}

// dup_iter(): an iterator over a private copy of the segments (BVEC, KVEC,
// IOVEC; the copy is returned, to free) that reads the same bytes and moves
// without moving the original; nullptr and a plain copy for the other types.
void dup_step(Sim& s, size_t n) {
  iov::iov_iter d;
  const void* segs = iov::dup_iter(&d, &s.it, iov::GFP_KERNEL);
  Kind kind = s.l->kind();
  bool copies = kind == Kind::bvec || kind == Kind::kvec || kind == Kind::iovec;
  EXPECT_EQ(segs != nullptr, copies);
  EXPECT_EQ(d.count, s.it.count);
  if (copies) {
    EXPECT_NE(static_cast<const void*>(d.bvec), static_cast<const void*>(s.it.bvec));
  } else {
    EXPECT_EQ(iov_test::state_of(d), iov_test::state_of(s.it));
  }
  size_t walked;
  bytes a = under(d, false, &walked);
  EXPECT_EQ(walked, s.count);
  if (kind != Kind::discard) {
    EXPECT_TRUE(std::equal(a.begin(), a.end(), s.flat.begin() + s.pos)) << "the duplicate reads other bytes";
  }
  iov::iov_iter_advance(&d, n);
  EXPECT_EQ(d.count, s.count - std::min(n, s.count));
  std::free(const_cast<void*>(segs));
}

void step(Sim& s, Op op, std::mt19937_64& rng) {
  auto uni = [&](size_t hi) { return std::uniform_int_distribution<size_t>(0, hi)(rng); };
  // Mostly within the count, sometimes past it or huge.
  size_t n = uni(9) == 0 ? SIZE_MAX : uni(s.count + 16);
  size_t fit = std::min(n, s.count);
  bool dest = s.dir == iov::ITER_DEST, data = s.l->kind() != Kind::discard;
  switch (op) {
    case Op::copy_to: {
      bytes src = iov_test::random_bytes(rng(), fit), expect = s.flat;
      size_t want = dest ? fit : 0;
      if (data) std::copy_n(src.begin(), want, expect.begin() + s.pos);
      write_both_ways(
          s, want, [&](iov::iov_iter* i) { return iov::copy_to_iter(src.data(), n, i); },
          [&](iov::iov_iter* i) { return iov::internal::outofline::copy_to_iter(src.data(), n, i); }, expect);
      s.flat = expect;
      s.pos += want, s.count -= want;
      break;
    }
    case Op::zero: {
      bytes expect = s.flat;
      if (data) std::fill_n(expect.begin() + s.pos, fit, 0);
      write_both_ways(
          s, fit, [&](iov::iov_iter* i) { return iov::iov_iter_zero(n, i); },
          [&](iov::iov_iter* i) { return iov::internal::outofline::iov_iter_zero(n, i); }, expect);
      s.flat = expect;
      s.pos += fit, s.count -= fit;
      break;
    }
    case Op::copy_from: {
      size_t want = dest ? 0 : fit;
      bytes d1(fit + 1, 0xee), d2(fit + 1, 0xee), expect(fit + 1, 0xee);
      std::copy_n(s.flat.begin() + s.pos, want, expect.begin());
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::internal::outofline::copy_from_iter(d2.data(), n, &tw), want);
      EXPECT_EQ(iov::copy_from_iter(d1.data(), n, &s.it), want);
      EXPECT_EQ(d1, expect);
      EXPECT_EQ(d2, expect);
      EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it));
      s.pos += want, s.count -= want;
      break;
    }
    case Op::nocache: {
      size_t want = dest ? 0 : fit;
      bytes d1(fit + 1, 0xee), d2(fit + 1, 0xee), expect(fit + 1, 0xee);
      std::copy_n(s.flat.begin() + s.pos, want, expect.begin());
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::internal::outofline::copy_from_iter_nocache(d2.data(), n, &tw), want);
      EXPECT_EQ(iov::copy_from_iter_nocache(d1.data(), n, &s.it), want);
      EXPECT_EQ(d1, expect);
      EXPECT_EQ(d2, expect);
      EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it));
      s.pos += want, s.count -= want;
      break;
    }
    case Op::crc: {  // either direction; DISCARD has no bytes to sum
      size_t want = data ? fit : 0;
      uint32_t c0 = static_cast<uint32_t>(rng()), c1 = c0, c2 = c0;
      uint32_t expect = iov::crc32c(c0, s.flat.data() + s.pos, want);
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::internal::outofline::crc32c_iter(&tw, n, &c2), want);
      EXPECT_EQ(iov::crc32c_iter(&s.it, n, &c1), want);
      EXPECT_EQ(c1, expect);
      EXPECT_EQ(c2, expect);
      EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it));
      s.pos += want, s.count -= want;
      break;
    }
    case Op::is_zero: {
      bool expect = n == 0 || (data && n <= s.count &&
                               std::all_of(s.flat.begin() + s.pos, s.flat.begin() + s.pos + n, [](auto b) { return !b; }));
      EXPECT_EQ(iov::iov_iter_is_zero(&s.it, n), expect);
      EXPECT_EQ(iov::internal::outofline::iov_iter_is_zero(&s.it, n), expect);
      break;
    }
    case Op::skip_zeroes: {
      size_t want = 0;
      while (data && want < fit && !s.flat[s.pos + want]) want++;
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::internal::outofline::iov_iter_skip_zeroes(&tw, n), want);
      EXPECT_EQ(iov::iov_iter_skip_zeroes(&s.it, n), want);
      EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it));
      s.pos += want, s.count -= want;
      break;
    }
    case Op::copy_to_full: {
      bytes src = iov_test::random_bytes(rng(), fit);
      bool ok = n == 0 || (dest && n <= s.count);  // nothing asked is all done
      // A short copy still writes what fit before reverting, as the kernel's.
      if (dest && data) std::copy_n(src.begin(), fit, s.flat.begin() + s.pos);
      EXPECT_EQ(iov::copy_to_iter_full(src.data(), n, &s.it), ok);
      EXPECT_EQ(s.l->gather(), s.flat);
      if (ok) s.pos += n, s.count -= n;
      break;
    }
    case Op::copy_from_full: {
      bytes dst(fit + 1);
      bool ok = n == 0 || (!dest && n <= s.count);
      EXPECT_EQ(iov::copy_from_iter_full(dst.data(), n, &s.it), ok);
      if (ok) {
        EXPECT_TRUE(std::equal(dst.begin(), dst.begin() + n, s.flat.begin() + s.pos));
        s.pos += n, s.count -= n;
      }
      break;
    }
    case Op::advance: {
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::generic_iterate(&tw, n, nullptr, nullptr, noop_step, noop_step), fit);
      iov::iov_iter_advance(&s.it, n);
      EXPECT_EQ(tw.count, s.it.count);
      EXPECT_EQ(iov_test::first_piece(tw), iov_test::first_piece(s.it)) << "advance and an empty walk differ";
      s.pos += fit, s.count -= fit;
      break;
    }
    case Op::revert: {
      size_t back = uni(s.pos);
      iov::iov_iter_revert(&s.it, back);
      s.pos -= back, s.count += back;
      break;
    }
    case Op::truncate: {
      uint64_t c = uni(3) == 0 ? UINT64_MAX : uni(s.count + 10);
      iov::iov_iter_truncate(&s.it, c);
      s.count = std::min<uint64_t>(s.count, c);
      break;
    }
    case Op::reexpand: {
      size_t c = uni(s.l->total() - s.pos);
      iov::iov_iter_reexpand(&s.it, c);
      s.count = c;
      break;
    }
    case Op::save: {
      Sim::Saved sv{{}, s.pos, s.count};
      iov::iov_iter_save_state(&s.it, &sv.st);
      s.saved = sv;
      break;
    }
    case Op::get_pages:
      get_pages_step(s, n, uni(1), static_cast<unsigned>(uni(5)));
      break;
    case Op::npages_cap:
      npages_cap_step(s, static_cast<int>(uni(8)), uni(4) == 0 ? SIZE_MAX : uni(s.count + 16));
      break;
    case Op::gap_alignment:
      gap_alignment_step(s);
      break;
    case Op::page_nofault: {
      // From a compound run of frames (the kernel's page_copy_sane()), any offset.
      static iov::page* const run = iov::alloc_pages(iov::GFP_KERNEL | iov::__GFP_COMP, 4);
      const size_t run_size = iov::PAGE_SIZE << 4;
      size_t off = uni(run_size - std::min(fit, run_size));
      bytes src = iov_test::random_bytes(rng(), run_size);
      std::copy(src.begin(), src.end(), reinterpret_cast<unsigned char*>(run));
      size_t ask = std::min(n, run_size - off);
      copy_into(s, ask, src.data() + off,
                [&](iov::iov_iter* i) { return iov::copy_page_to_iter_nofault(run, static_cast<unsigned>(off), ask, i); },
                [&](iov::iov_iter* i) {
                  return iov::internal::outofline::copy_page_to_iter_nofault(run, static_cast<unsigned>(off), ask, i);
                });
      break;
    }
    case Op::copy_mc: {
      bytes src = iov_test::random_bytes(rng(), fit);
      copy_into(s, n, src.data(), [&](iov::iov_iter* i) { return iov::copy_mc_to_iter(src.data(), n, i); },
                [&](iov::iov_iter* i) { return iov::internal::outofline::copy_to_iter(src.data(), n, i); });
      break;
    }
    case Op::flushcache:
      copy_out(s, n, [&](void* d, iov::iov_iter* i) { return iov::copy_from_iter_flushcache(d, n, i); },
               [&](void* d, iov::iov_iter* i) { return iov::internal::outofline::copy_from_iter_nocache(d, n, i); });
      break;
    case Op::full_nocache: {
      bytes d1(fit + 1), d2(fit + 1);
      bool ok = n == 0 || (!dest && n <= s.count);
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::internal::outofline::copy_from_iter_full_nocache(d2.data(), n, &tw), ok);
      EXPECT_EQ(iov::copy_from_iter_full_nocache(d1.data(), n, &s.it), ok);
      EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it));
      if (ok) {
        EXPECT_TRUE(std::equal(d1.begin(), d1.begin() + n, s.flat.begin() + s.pos));
        EXPECT_TRUE(std::equal(d2.begin(), d2.begin() + n, s.flat.begin() + s.pos));
        s.pos += n, s.count -= n;
      }
      break;
    }
    case Op::dup:
      dup_step(s, n);
      break;
    case Op::restore: {
      if (!s.saved) break;
      iov::iov_iter_restore(&s.it, &s.saved->st);
      // XARRAY, DISCARD and the queues are left alone (the kernel warns)
      if (s.l->kind() != Kind::xarray && s.l->kind() != Kind::discard && !iov_test::queued(s.l->kind()))
        s.pos = s.saved->pos, s.count = s.saved->count;
      break;
    }
  }
}

void run_sequence(uint64_t seed, Kind kind, int ops) {
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(kind));
  Sim s;
  s.l = Layout::random(kind, rng, 4 * iov::PAGE_SIZE);
  s.l->fill(seed);
  s.flat = s.l->gather();
  s.dir = kind == Kind::discard || rng() % 2 ? iov::ITER_DEST : iov::ITER_SOURCE;
  s.it = s.l->iter(s.dir);
  s.count = s.l->total();
  ASSERT_NO_FATAL_FAILURE(check(s));
  for (int k = 0; k < ops; k++) {
    Op op = kOps[rng() % std::size(kOps)];
    SCOPED_TRACE(testing::Message() << "op " << k << " " << op_name(op) << " at pos " << s.pos << " count "
                                    << s.count);
    step(s, op, rng);
    ASSERT_NO_FATAL_FAILURE(check(s));
    if (testing::Test::HasFailure()) return;  // the first divergence is the one to read
  }
  EXPECT_EQ(s.l->gather(), s.flat);
  EXPECT_TRUE(s.l->guards_intact()) << "a write outside the segments";
}

class Differential : public testing::TestWithParam<Kind> {};

TEST_P(Differential, RandomSequencesFollowTheModel) {
  for (uint64_t seed : iov_test::test_seeds({1, 2, 3, 4, 5, 6, 7, 8})) {
    for (int layout = 0; layout < 6; layout++) {
      uint64_t s = seed * 100 + layout;
      SCOPED_TRACE(testing::Message() << "IOV_TEST_SEED=" << seed << " layout " << layout << " ("
                                      << iov_test::kind_name(GetParam()) << ")");
      run_sequence(s, GetParam(), 40);
      if (HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, Differential, testing::ValuesIn(iov_test::kAllKinds),
                         [](const testing::TestParamInfo<Kind>& info) { return iov_test::kind_name(info.param); });

}  // namespace
