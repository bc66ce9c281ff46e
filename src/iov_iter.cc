// iov_iter.cc: the position operations of the kernel's lib/iov_iter.c that walk
// segment arrays (revert, reexpand, npages, alignment, extract_pages, restore),
// kept out of line as in the kernel: they are not on a per-byte path.
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "iov/iov.hpp"

namespace iov {

namespace internal {
void bug(const char* what, const char* file, int line) noexcept {
  std::fprintf(stderr, "iov: BUG: %s (%s:%d)\n", what, file, line);
  std::abort();
}

inline size_t seg_len(const ::iovec& v) { return v.iov_len; }
inline size_t seg_len(const kvec& v) { return v.iov_len; }
inline size_t seg_len(const bio_vec& v) { return v.bv_len; }

// Walk back over whole segments; refuses (returns false, nothing changed) when
// the segments behind the current one hold fewer than unroll bytes.
template <class Seg>
bool revert_segs(iov_iter* i, const Seg*& segs, size_t unroll) {
  const Seg* origin = static_cast<const Seg*>(i->segs_origin);
  size_t behind = 0;
  for (const Seg* p = segs; p > origin && behind < unroll;)
    behind += seg_len(*--p);
  if (IOV_BUG_ON(behind < unroll, "iov_iter_revert: past the start of the segments"))
    return false;
  const Seg* p = segs;
  unsigned long nr = i->nr_segs;
  for (;;) {
    size_t n = seg_len(*--p);
    nr++;
    if (unroll <= n) {
      segs = p;
      i->nr_segs = nr;
      i->iov_offset = n - unroll;
      return true;
    }
    unroll -= n;
  }
}

// Bytes the segments hold from the current position on.
template <class Seg>
size_t segs_left(const iov_iter* i, const Seg* segs) {
  size_t total = 0;
  for (unsigned long k = 0; k < i->nr_segs; k++)
    total += seg_len(segs[k]);
  return total - i->iov_offset;
}

size_t capacity_left(const iov_iter* i) {
  switch (i->type) {
    case ITER_IOVEC:
      return segs_left(i, i->iov);
    case ITER_KVEC:
      return segs_left(i, i->kvec);
    case ITER_BVEC:
      return segs_left(i, i->bvec);
    case ITER_DISCARD:
      return SIZE_MAX;
    default:
      return i->orig_count - i->iov_offset;
  }
}
}  // namespace internal

void iov_iter_revert(iov_iter* i, size_t unroll) {
  if (!unroll || unroll > MAX_RW_COUNT)  // the kernel WARNs on the latter
    return;
  if (iov_iter_is_discard(i)) {
    i->count += unroll;
    return;
  }
  if (unroll <= i->iov_offset) {
    i->iov_offset -= unroll;
    i->count += unroll;
    return;
  }
  size_t rest = unroll - i->iov_offset;
  bool ok;
  switch (i->type) {
    case ITER_IOVEC:
      ok = internal::revert_segs(i, i->iov, rest);
      break;
    case ITER_KVEC:
      ok = internal::revert_segs(i, i->kvec, rest);
      break;
    case ITER_BVEC:
      ok = internal::revert_segs(i, i->bvec, rest);
      break;
    default:  // UBUF, XARRAY: never stray before the start of the range
      ok = !IOV_BUG_ON(true, "iov_iter_revert: past the start of the buffer");
      break;
  }
  if (ok)
    i->count += unroll;
}

void iov_iter_reexpand(iov_iter* i, size_t count) {
  if (IOV_BUG_ON(count > internal::capacity_left(i), "iov_iter_reexpand: beyond what the segments hold"))
    return;
  i->count = count;
}

size_t iov_iter_single_seg_count(const iov_iter* i) {
  if (i->nr_segs > 1) {
    if (iter_is_iovec(i))
      return std::min(i->count, i->iov->iov_len - i->iov_offset);
    if (iov_iter_is_kvec(i))
      return std::min(i->count, i->kvec->iov_len - i->iov_offset);
    if (iov_iter_is_bvec(i))
      return std::min(i->count, size_t{i->bvec->bv_len} - i->iov_offset);
  }
  return i->count;
}

namespace {
inline size_t div_round_up(size_t n, size_t d) { return (n + d - 1) / d; }

template <class Seg>
int vec_npages(const iov_iter* i, const Seg* p, int maxpages) {
  size_t skip = i->iov_offset, size = i->count;
  size_t npages = 0;
  for (; size; skip = 0, p++) {
    size_t offs = offset_in_page(static_cast<const char*>(p->iov_base) + skip);
    size_t len = std::min(p->iov_len - skip, size);
    if (len) {
      size -= len;
      npages += div_round_up(offs + len, PAGE_SIZE);
      if (IOV_UNLIKELY(npages > static_cast<size_t>(maxpages)))
        return maxpages;
    }
  }
  return static_cast<int>(npages);
}

int bvec_npages(const iov_iter* i, int maxpages) {
  size_t skip = i->iov_offset, size = i->count;
  size_t npages = 0;
  for (const bio_vec* p = i->bvec; size; skip = 0, p++) {
    size_t offs = (p->bv_offset + skip) % PAGE_SIZE;
    size_t len = std::min(p->bv_len - skip, size);
    size -= len;
    npages += div_round_up(offs + len, PAGE_SIZE);
    if (IOV_UNLIKELY(npages > static_cast<size_t>(maxpages)))
      return maxpages;
  }
  return static_cast<int>(npages);
}

int clamp_pages(size_t npages, int maxpages) {
  return npages < static_cast<size_t>(maxpages) ? static_cast<int>(npages) : maxpages;
}
}  // namespace

int iov_iter_npages(const iov_iter* i, int maxpages) {
  if (IOV_UNLIKELY(!i->count) || maxpages <= 0)
    return 0;
  switch (i->type) {
    case ITER_UBUF:
      return clamp_pages(div_round_up(offset_in_page(static_cast<char*>(i->ubuf) + i->iov_offset) + i->count,
                                      PAGE_SIZE), maxpages);
    case ITER_IOVEC:
      return vec_npages(i, i->iov, maxpages);
    case ITER_KVEC:
      return vec_npages(i, i->kvec, maxpages);
    case ITER_BVEC:
      return bvec_npages(i, maxpages);
    case ITER_XARRAY:
      return clamp_pages(div_round_up(offset_in_page(i->xarray_start + i->iov_offset) + i->count, PAGE_SIZE),
                         maxpages);
    default:
      return 0;
  }
}

namespace {
template <class Seg>
unsigned long vec_alignment(const iov_iter* i, const Seg* p) {
  unsigned long res = 0;
  size_t size = i->count, skip = i->iov_offset;
  if (!i->nr_segs)
    return 0;
  do {
    size_t len = p->iov_len - skip;
    if (len) {
      res |= reinterpret_cast<unsigned long>(p->iov_base) + skip;
      if (len > size)
        len = size;
      res |= len;
      size -= len;
    }
    p++;
    skip = 0;
  } while (size);
  return res;
}

unsigned long bvec_alignment(const iov_iter* i) {
  unsigned long res = 0;
  size_t size = i->count, skip = i->iov_offset;
  if (!i->nr_segs)
    return 0;
  const bio_vec* p = i->bvec;
  do {
    size_t len = p->bv_len - skip;
    res |= p->bv_offset + skip;
    if (len > size)
      len = size;
    res |= len;
    p++;
    size -= len;
    skip = 0;
  } while (size);
  return res;
}
}  // namespace

unsigned long iov_iter_alignment(const iov_iter* i) {
  switch (i->type) {
    case ITER_UBUF:
      return i->count ? (reinterpret_cast<unsigned long>(i->ubuf) + i->iov_offset) | i->count : 0;
    case ITER_IOVEC:
      return vec_alignment(i, i->iov);
    case ITER_KVEC:
      return vec_alignment(i, i->kvec);
    case ITER_BVEC:
      return bvec_alignment(i);
    case ITER_XARRAY:  // whole pages
      return (static_cast<unsigned long>(i->xarray_start) + i->iov_offset) | i->count;
    default:
      return 0;
  }
}

namespace {
template <class Seg>
bool vec_aligned(const iov_iter* i, const Seg* p, unsigned addr_mask, unsigned len_mask) {
  size_t size = i->count, skip = i->iov_offset;
  if (!i->nr_segs)
    return true;
  do {
    size_t len = std::min(p->iov_len - skip, size);
    if (len & len_mask)
      return false;
    if ((reinterpret_cast<unsigned long>(p->iov_base) + skip) & addr_mask)
      return false;
    p++;
    size -= len;
    skip = 0;
  } while (size);
  return true;
}

bool bvec_aligned(const iov_iter* i, unsigned addr_mask, unsigned len_mask) {
  size_t size = i->count, skip = i->iov_offset;
  if (!i->nr_segs)
    return true;
  const bio_vec* p = i->bvec;
  do {
    size_t len = std::min(p->bv_len - skip, size);
    if (len & len_mask)
      return false;
    if ((p->bv_offset + skip) & addr_mask)
      return false;
    p++;
    size -= len;
    skip = 0;
  } while (size);
  return true;
}
}  // namespace

bool iov_iter_is_aligned(const iov_iter* i, unsigned addr_mask, unsigned len_mask) {
  switch (i->type) {
    case ITER_UBUF:
      return !(i->count & len_mask) &&
             !((reinterpret_cast<unsigned long>(i->ubuf) + i->iov_offset) & addr_mask);
    case ITER_IOVEC:
      return vec_aligned(i, i->iov, addr_mask, len_mask);
    case ITER_KVEC:
      return vec_aligned(i, i->kvec, addr_mask, len_mask);
    case ITER_BVEC:
      return bvec_aligned(i, addr_mask, len_mask);
    case ITER_XARRAY:
      return !(i->count & len_mask) &&
             !((static_cast<unsigned long>(i->xarray_start) + i->iov_offset) & addr_mask);
    default:
      return true;
  }
}

void iov_iter_restore(iov_iter* i, const iov_iter_state* state) {
  // nr_segs + the segment pointer is constant; signed, as a state may also
  // have been saved ahead of where the iterator now stands.
  const ptrdiff_t back = static_cast<ptrdiff_t>(state->nr_segs) - static_cast<ptrdiff_t>(i->nr_segs);
  switch (i->type) {
    case ITER_UBUF:
      break;
    case ITER_BVEC:
      i->bvec -= back;
      break;
    case ITER_IOVEC:
      i->iov -= back;
      break;
    case ITER_KVEC:
      i->kvec -= back;
      break;
    default:  // XARRAY, DISCARD: the kernel warns and does nothing
      return;
  }
  i->iov_offset = state->iov_offset;
  i->count = state->count;
  if (!iter_is_ubuf(i))
    i->nr_segs = state->nr_segs;
}

namespace {
// The kernel's want_pages_array(): how many entries to fill, allocating the
// array when the caller passed none.
unsigned want_pages_array(page*** res, size_t size, size_t start, unsigned maxpages) {
  size_t count = div_round_up(size + start, PAGE_SIZE);
  if (count > maxpages)
    count = maxpages;
  if (!*res && count) {
    *res = static_cast<page**>(std::malloc(count * sizeof(page*)));
    if (!*res)
      return 0;
  }
  return static_cast<unsigned>(count);
}

// The tail UBUF, IOVEC and KVEC share: the pages under the `size` bytes of
// contiguous memory at addr (at most maxpages of them), and the advance past
// the bytes those pages hold.
ssize_t extract_contiguous_pages(iov_iter* i, const char* addr, size_t size, page*** pages, unsigned maxpages,
                                 size_t* offset0) {
  size_t offset = offset_in_page(addr);
  *offset0 = offset;
  maxpages = want_pages_array(pages, size, offset, maxpages);
  if (!maxpages)
    return -ENOMEM;
  page* first = virt_to_page(addr);
  for (unsigned k = 0; k < maxpages; k++)
    (*pages)[k] = first + k;
  size = std::min(size, maxpages * PAGE_SIZE - offset);
  iov_iter_advance(i, size);
  return static_cast<ssize_t>(size);
}

// UBUF and IOVEC: the first non-empty segment, as pages of contiguous memory.
ssize_t extract_user_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* offset0) {
  const char* addr;
  if (iter_is_ubuf(i)) {
    addr = static_cast<const char*>(i->ubuf) + i->iov_offset;
  } else {
    addr = nullptr;
    size_t skip = i->iov_offset;
    for (unsigned long k = 0; k < i->nr_segs; k++, skip = 0) {
      size_t len = i->iov[k].iov_len - skip;
      if (!len)
        continue;
      maxsize = std::min(maxsize, len);
      addr = static_cast<const char*>(i->iov[k].iov_base) + skip;
      break;
    }
    if (!addr)
      return 0;
  }
  return extract_contiguous_pages(i, addr, maxsize, pages, maxpages, offset0);
}

ssize_t extract_kvec_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* offset0) {
  size_t skip = i->iov_offset, size;
  for (;;) {
    if (i->nr_segs == 0)
      return 0;
    size = std::min(maxsize, i->kvec->iov_len - skip);
    if (size)
      break;
    i->iov_offset = 0;
    i->nr_segs--;
    i->kvec++;
    skip = 0;
  }
  const char* kaddr = static_cast<const char*>(i->kvec->iov_base) + skip;
  return extract_contiguous_pages(i, kaddr, size, pages, maxpages, offset0);
}

// BVEC: runs of whole pages across bvecs; stops where the next page would not
// start at offset 0, or this one does not end at PAGE_SIZE (a hole).
ssize_t extract_bvec_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* offset0) {
  // Step over a finished or empty bvec (the kernel steps over one finished
  // bvec only, and returns 0 at an empty one: a caller looping on the count
  // would spin).
  while (i->nr_segs && i->iov_offset >= i->bvec->bv_len) {
    i->iov_offset = 0;
    i->nr_segs--;
    i->bvec++;
  }
  if (i->nr_segs == 0)
    return 0;
  size_t skip = i->iov_offset;
  maxpages = want_pages_array(pages, maxsize, skip, maxpages);
  if (!maxpages)
    return -ENOMEM;
  size_t size = 0, left = maxsize, done = skip;
  unsigned long idx = 0;
  unsigned k = 0;
  while (left && idx < i->nr_segs) {
    const bio_vec& seg = i->bvec[idx];
    size_t off = seg.bv_offset + done;
    page* pg = seg.bv_page + off / PAGE_SIZE;
    size_t pg_off = off % PAGE_SIZE;
    size_t len = std::min({left, size_t{seg.bv_len} - done, PAGE_SIZE - pg_off});
    if (k) {
      if (pg_off)
        break;
    } else {
      *offset0 = pg_off;
    }
    (*pages)[k++] = pg;
    size += len;
    if (k >= maxpages || pg_off + len != PAGE_SIZE)
      break;
    left -= len;
    done += len;
    if (done >= seg.bv_len) {
      done = 0;
      idx++;
    }
  }
  iov_iter_advance(i, size);
  return static_cast<ssize_t>(size);
}

// XARRAY: consecutive present indices; a missing index ends the run.
ssize_t extract_xarray_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages, size_t* offset0) {
  size_t pos = static_cast<size_t>(i->xarray_start) + i->iov_offset;
  size_t offset = pos & (PAGE_SIZE - 1);
  *offset0 = offset;
  maxpages = want_pages_array(pages, maxsize, offset, maxpages);
  if (!maxpages)
    return -ENOMEM;
  // One cursor for the run, as the kernel's iter_xarray_populate_pages():
  // a lookup from the root per page would cost more than the page's copy.
  page** out = *pages;  // held in a register: stores through it could alias *pages
  unsigned nr = 0;
  {
    rcu_read_guard rcu;
    XA_STATE(xas, i->xarray, pos >> PAGE_SHIFT);
    for (void* e = xas_load(&xas); e; e = xas_next(&xas)) {
      out[nr++] = static_cast<page*>(e);
      if (nr == maxpages)
        break;
    }
  }
  size_t size = nr ? std::min(nr * PAGE_SIZE - offset, maxsize) : 0;
  iov_iter_advance(i, size);
  return static_cast<ssize_t>(size);
}
}  // namespace

ssize_t iov_iter_extract_pages(iov_iter* i, page*** pages, size_t maxsize, unsigned maxpages,
                               unsigned /*extraction_flags*/, size_t* offset0) {
  maxsize = std::min({maxsize, i->count, MAX_RW_COUNT});
  if (!maxsize || !maxpages)
    return 0;
  switch (i->type) {
    case ITER_UBUF:
    case ITER_IOVEC:
      return extract_user_pages(i, pages, maxsize, maxpages, offset0);
    case ITER_KVEC:
      return extract_kvec_pages(i, pages, maxsize, maxpages, offset0);
    case ITER_BVEC:
      return extract_bvec_pages(i, pages, maxsize, maxpages, offset0);
    case ITER_XARRAY:
      return extract_xarray_pages(i, pages, maxsize, maxpages, offset0);
    default:
      return -EFAULT;
  }
}

}  // namespace iov

namespace iov {

unsigned iov_iter_to_iovecs(const iov_iter* i, ::iovec* vecs, unsigned maxvecs, size_t maxsize, size_t* bytes) {
  struct out_vecs {
    ::iovec* vecs;
    unsigned max, nr;
  } out{vecs, maxvecs, 0};
  size_t covered = 0;
  if (maxvecs && !iov_iter_is_discard(i)) {
    // Walk a copy; a piece that finds no free entry is left unprocessed, which ends the walk.
    auto step = [](void* base, size_t, size_t len, void* priv, void*) -> size_t {
      auto* o = static_cast<out_vecs*>(priv);
      if (!len)
        return 0;
      if (o->nr && static_cast<char*>(o->vecs[o->nr - 1].iov_base) + o->vecs[o->nr - 1].iov_len == base) {
        o->vecs[o->nr - 1].iov_len += len;
        return 0;
      }
      if (o->nr == o->max)
        return len;
      o->vecs[o->nr++] = {base, len};
      return 0;
    };
    iov_iter scratch = *i;
    covered = iterate_and_advance2(&scratch, maxsize, &out, nullptr, step, step);
  }
  if (bytes)
    *bytes = covered;
  return out.nr;
}

}  // namespace iov
