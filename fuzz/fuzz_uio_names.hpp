// fuzz_uio_names.hpp: fuzz_iov_iter's operations for the uio.h names that
// ports use besides the walks and copies (get_pages2/_alloc2 with their page
// references, npages_cap, gap_alignment, copy_page_to_iter_nofault,
// copy_mc_to_iter, copy_from_iter_flushcache, copy_from_iter_full_nocache,
// dup_iter), each checked against the layout model of fuzz_model.hpp.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <vector>

#include "fuzz_model.hpp"
#include "iov/copy_nocache.hpp"
#include "iov/extract.hpp"
#include "iov/internal/outofline.hpp"

namespace fuzz::uio {

using iov::iov_iter;

// Runs op on a copy of the iterator through `alt`, checks the memory, then on
// the iterator through `primary`: both return `expect` and end in one place
// (fuzz_iov_iter.cc runs its own operations through it too).
template <class R, class P, class A>
void twins(layout& L, R expect, bool swap, P primary, A alt, const char* name) {
  iov_iter copy = L.it;
  R r_alt = swap ? primary(&copy) : alt(&copy);
  FUZZ_CHECK(r_alt == expect);
  L.check(name);
  R r = swap ? alt(&L.it) : primary(&L.it);
  FUZZ_CHECK(r == expect);
  FUZZ_CHECK(fuzz::same_iter(copy, L.it));
}

// The frames under the next n logical bytes up to the first without memory:
// the frame of the first, and of every byte that starts a frame or a new run.
FUZZ_MODEL inline std::vector<iov::page*> frames_under(const layout& L, size_t n) {
  std::vector<iov::page*> v;
  for (size_t k = 0; k < n && L.addr[L.pos + k]; k++) {
    uintptr_t a = reinterpret_cast<uintptr_t>(L.addr[L.pos + k]);
    if (!k || a % iov::PAGE_SIZE == 0 || L.addr[L.pos + k - 1] + 1 != L.addr[L.pos + k])
      v.push_back(reinterpret_cast<iov::page*>(a & ~(iov::PAGE_SIZE - 1)));
  }
  return v;
}

// iov_iter_get_pages2() / _alloc2(): the pages hold the next bytes, each
// returned page of a kernel-backed iterator holds one more reference (the
// layouts' user buffers are not the allocator's: their count stays), and
// put_page() gives every count back. A frame with no count of its own (a
// later frame of an alloc_pages() without __GFP_COMP, as the BVEC layouts'
// are) cannot be referenced (the kernel's BUG): a call that might meet one is
// not made.
inline void op_get_pages(layout& L, input& in) {
  size_t maxsize = in.length(2 * fuzz::kMaxSeg);
  bool alloc = in.u8() & 1;
  unsigned maxpages = alloc ? ~0U : static_cast<unsigned>(in.below(9));
  size_t limit = maxsize < L.count ? maxsize : L.count;
  size_t span = alloc || maxpages * iov::PAGE_SIZE > limit ? limit : maxpages * iov::PAGE_SIZE;
  std::map<iov::page*, int> before;
  for (iov::page* p : frames_under(L, span)) before[iov::compound_head(p)] = iov::page_ref_count(p);  // one count a compound page
  for (auto [p, c] : before)
    if (!c) {
      fuzz::trace("iov_iter_get_pages2: skipped, a frame without a count");
      return;
    }
  iov::page* array[8];
  iov::page** pages = alloc ? nullptr : array;
  size_t start = SIZE_MAX;
  iov_iter was = L.it;
  ssize_t r = alloc ? iov::iov_iter_get_pages_alloc2(&L.it, &pages, maxsize, &start)
                    : iov::iov_iter_get_pages2(&L.it, pages, maxsize, maxpages, &start);
  fuzz::trace("iov_iter_get_pages%s %zu max %u pages -> %zd (start %zu)", alloc ? "_alloc2" : "2", maxsize, maxpages, r,
              start);
  bool at_empty_bvec = L.type == iov::ITER_BVEC &&
                       std::find(L.empty_bvecs.begin(), L.empty_bvecs.end(), L.pos) != L.empty_bvecs.end();
  if (!limit || !maxpages) {
    FUZZ_CHECK(r == 0);
  } else if (L.type == iov::ITER_KVEC || L.discard() || L.type == iov::ITER_BVECQ) {
    FUZZ_CHECK(r == -EFAULT);
  } else {
    // Progress, but at an XARRAY hole or an empty bio_vec (0, or the kernel's -ENOMEM there).
    FUZZ_CHECK(r > 0 || (r == 0 && !L.addr[L.pos]) || (at_empty_bvec && (r == 0 || r == -ENOMEM)));
  }
  if (r <= 0) {
    FUZZ_CHECK(L.it.count == was.count && (!alloc || pages == nullptr));
    return;
  }
  size_t got = static_cast<size_t>(r), nr = (start + got + iov::PAGE_SIZE - 1) / iov::PAGE_SIZE;
  FUZZ_CHECK(got <= span && start < iov::PAGE_SIZE && (alloc || nr <= maxpages));
  std::map<iov::page*, int> times;
  for (size_t k = 0, n; k < got; k += n) {  // page by page
    size_t at = start + k;
    n = std::min(got - k, iov::PAGE_SIZE - at % iov::PAGE_SIZE);
    FUZZ_CHECK(L.lives_at(k, static_cast<unsigned char*>(iov::page_address(pages[at / iov::PAGE_SIZE])) +
                                 at % iov::PAGE_SIZE, n));
  }
  for (size_t k = 0; k < nr; k++) times[iov::compound_head(pages[k])]++;
  for (auto [p, t] : times) {
    FUZZ_CHECK(before.count(p));
    FUZZ_CHECK(iov::page_ref_count(p) == before[p] + (L.user_backed() ? 0 : t));
  }
  for (size_t k = 0; k < nr; k++) iov::put_page(pages[k]);
  for (auto [p, c] : before) FUZZ_CHECK(iov::page_ref_count(p) == c);
  if (alloc) std::free(pages);
  L.advance(got);
}

// iov_iter_npages_cap(): iov_iter_npages() of a copy truncated to max_bytes,
// and for the types counted by position alone (UBUF, the queues of whole
// folios, XARRAY; DISCARD has none) the page span itself; the iterator is
// left as it was.
inline void op_npages_cap(layout& L, input& in) {
  int maxpages = static_cast<int>(in.below(10));
  size_t max_bytes = in.u8() & 1 ? SIZE_MAX : in.length(2 * fuzz::kMaxSeg);
  size_t c = max_bytes < L.count ? max_bytes : L.count;
  iov_iter copy = L.it, was = L.it;
  iov::iov_iter_truncate(&copy, max_bytes);
  int by_definition = iov::iov_iter_npages(&copy, maxpages);
  int r = iov::iov_iter_npages_cap(&L.it, maxpages, max_bytes);
  fuzz::trace("iov_iter_npages_cap %d pages %zu bytes -> %d", maxpages, max_bytes, r);
  FUZZ_CHECK(r == by_definition && fuzz::same_iter(was, L.it));
  size_t model = SIZE_MAX;
  if (!c || L.discard()) {
    model = 0;
  } else if ((L.type == iov::ITER_UBUF || L.type == iov::ITER_FOLIOQ || L.type == iov::ITER_XARRAY) && L.addr[L.pos]) {
    model = (reinterpret_cast<uintptr_t>(L.addr[L.pos]) % iov::PAGE_SIZE + c + iov::PAGE_SIZE - 1) / iov::PAGE_SIZE;
  }
  if (model != SIZE_MAX) FUZZ_CHECK(static_cast<size_t>(r) == (model < size_t(maxpages) ? model : size_t(maxpages)));
}

// iov_iter_gap_alignment(): the kernel's fold over the iovecs from the
// current one (starts with previous ends, iov_offset ignored); 0 for UBUF,
// the WARN value ~0U for the rest.
inline void op_gap_alignment(layout& L) {
  unsigned long want = 0;
  if (L.type == iov::ITER_IOVEC) {
    size_t size = L.it.count;
    uintptr_t prev_end = 0;
    for (unsigned long k = 0; k < L.it.nr_segs; k++) {
      const ::iovec& v = iov::iter_iov(&L.it)[k];
      if (!v.iov_len) continue;
      uintptr_t b = reinterpret_cast<uintptr_t>(v.iov_base);
      if (prev_end) want |= b | prev_end;
      prev_end = b + v.iov_len;
      if (size <= v.iov_len) break;
      size -= v.iov_len;
    }
  } else if (L.type != iov::ITER_UBUF) {
    want = ~0U;
  }
  fuzz::trace("iov_iter_gap_alignment -> %lx", want);
  FUZZ_CHECK(iov::iov_iter_gap_alignment(&L.it) == want);
}

// copy_page_to_iter_nofault() from a compound run of frames, and
// copy_mc_to_iter(): copy_to_iter()'s model (the layouts' memory is writable).
inline void op_copy_to_variants(layout& L, input& in, bool ool) {
  static iov::page* const run = iov::alloc_pages(iov::GFP_KERNEL | iov::__GFP_COMP, 4);
  constexpr size_t kRun = iov::PAGE_SIZE << 4;
  auto* bytes = reinterpret_cast<unsigned char*>(run);
  bool nofault = in.u8() & 1;
  size_t off = in.below(kRun), n = in.length(kRun - off);
  fuzz::fill(bytes, kRun, in.u8());
  size_t want = L.dir == iov::ITER_DEST ? L.reach(n) : 0;
  fuzz::trace("%s %zu at %zu -> %zu", nofault ? "copy_page_to_iter_nofault" : "copy_mc_to_iter", n, off, want);
  L.put_all(bytes + off, want);
  if (nofault) {
    unsigned o = static_cast<unsigned>(off);
    twins(L, want, ool, [&](iov_iter* i) { return iov::copy_page_to_iter_nofault(run, o, n, i); },
              [&](iov_iter* i) { return iov::internal::outofline::copy_page_to_iter_nofault(run, o, n, i); },
              "copy_page_to_iter_nofault");
  } else {
    twins(L, want, ool, [&](iov_iter* i) { return iov::copy_mc_to_iter(bytes + off, n, i); },
              [&](iov_iter* i) { return iov::internal::outofline::copy_to_iter(bytes + off, n, i); }, "copy_mc_to_iter");
  }
  L.advance(want);
}

// copy_from_iter_flushcache() (copy_from_iter_nocache() here) and the all or
// nothing copy_from_iter_full_nocache().
inline void op_copy_from_variants(layout& L, input& in, bool ool) {
  size_t n = in.length(2 * fuzz::kMaxSeg);
  bool full = in.u8() & 1;
  size_t done = L.dir == iov::ITER_SOURCE ? L.reach(n) : 0;
  std::vector<unsigned char> expect(n, 0xa5), d1(n, 0xa5), d2(n, 0xa5);
  L.get_all(expect.data(), done);
  fuzz::trace("%s %zu -> %zu", full ? "copy_from_iter_full_nocache" : "copy_from_iter_flushcache", n, done);
  if (!full) {
    twins(L, done, ool, [&](iov_iter* i) { return iov::copy_from_iter_flushcache(d1.data(), n, i); },
              [&](iov_iter* i) { return iov::internal::outofline::copy_from_iter_nocache(d2.data(), n, i); },
              "copy_from_iter_flushcache");
    FUZZ_CHECK(d1 == expect && d2 == expect);
    L.advance(done);
    return;
  }
  bool ok = done == n;
  iov_iter copy = L.it;
  FUZZ_CHECK(iov::internal::outofline::copy_from_iter_full_nocache(d2.data(), n, &copy) == ok);
  FUZZ_CHECK(iov::copy_from_iter_full_nocache(d1.data(), n, &L.it) == ok);
  FUZZ_CHECK(copy.count == L.it.count);
  if (ok) {
    FUZZ_CHECK(d1 == expect && d2 == expect);
    L.advance(n);
  }
}

// dup_iter(): BVEC, KVEC and IOVEC get a private copy of their segments (to
// free); the duplicate walks the same bytes, and walking it leaves the
// original where it was. The other types: nullptr and a plain copy.
inline void op_dup(layout& L, input& in) {
  size_t n = in.length(2 * fuzz::kMaxSeg);
  iov_iter d, was = L.it;
  const void* segs = iov::dup_iter(&d, &L.it, iov::GFP_KERNEL);
  bool copies = L.type == iov::ITER_BVEC || L.type == iov::ITER_KVEC || L.type == iov::ITER_IOVEC;
  fuzz::trace("dup_iter, then a walk of %zu on the duplicate", n);
  FUZZ_CHECK((segs != nullptr) == copies && d.count == L.count);
  FUZZ_CHECK(copies ? static_cast<const void*>(d.bvec) == segs && segs != static_cast<const void*>(L.it.bvec)
                    : fuzz::same_iter(d, L.it));
  size_t seen = 0;
  auto step = [&L, &seen](void* base, size_t progress, size_t len, void*, void*) -> size_t {
    FUZZ_CHECK(progress == seen && L.lives_at(progress, base, len));
    seen += len;
    return 0;
  };
  size_t r = iov::iterate_and_advance2(&d, n, nullptr, nullptr, step, step);
  FUZZ_CHECK(r == L.reach(n) && (L.discard() || seen == r));
  FUZZ_CHECK(fuzz::same_iter(was, L.it));
  std::free(const_cast<void*>(segs));
}

}  // namespace fuzz::uio
