// iov_iter.hpp: the iterator over a scatter-gather list, its segment types,
// initializers and type and direction queries (the kernel's
// include/linux/uio.h; bio_vec is in bvec.hpp).
//
// An iov_iter walks one of eight shapes: one user buffer (UBUF), an array of
// ::iovec (IOVEC), of kvec (KVEC), of bio_vec pages (BVEC), a queue of bio_vec
// arrays (BVECQ, bvecq.hpp), a queue of folios (FOLIOQ, folio_queue.hpp), the
// pages of an xarray (XARRAY), or nothing at all (DISCARD, a sink that only
// counts). It is trivially copyable, as kernel code copies it by value to
// look ahead.
//
//   iov::iov_iter it;
//   iov::iov_iter_bvec(&it, iov::ITER_DEST, bvecs, nr, total);
//   size_t n = iov::copy_to_iter(buf, len, &it);   // copy.hpp
//
// Initializers trust their caller as the kernel's do; with IOV_CHECKS on they
// abort on a direction other than ITER_DEST/ITER_SOURCE and on a count beyond
// the segments' total.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "iov/config.hpp"
#include "iov/bvec.hpp"

namespace iov {

struct xarray;
struct bvecq;        // bvecq.hpp
struct folio_queue;  // folio_queue.hpp

// A segment of kernel memory: ::iovec's layout.
struct kvec {
  void* iov_base;
  size_t iov_len;
};
static_assert(sizeof(kvec) == sizeof(::iovec) && offsetof(kvec, iov_len) == offsetof(::iovec, iov_len));

inline constexpr unsigned READ = 0, WRITE = 1;
inline constexpr unsigned ITER_DEST = READ;     // data goes into it
inline constexpr unsigned ITER_SOURCE = WRITE;  // data comes out of it

// In the kernel's order (BVECQ as posted, ahead of FOLIOQ).
enum iter_type : uint8_t {
  ITER_UBUF,
  ITER_IOVEC,
  ITER_BVEC,
  ITER_KVEC,
  ITER_BVECQ,
  ITER_FOLIOQ,
  ITER_XARRAY,
  ITER_DISCARD
};

struct iov_iter {
  uint8_t type;       // the kernel's iter_type (an iter_type value)
  bool data_source;   // ITER_SOURCE: data is read out of the segments
  size_t iov_offset;  // offset into the current segment (UBUF: into the buffer; XARRAY: from xarray_start)
  union {
    void* ubuf;
    const ::iovec* iov;  // the kernel's __iov
    const ::iov::kvec* kvec;
    const ::iov::bio_vec* bvec;
    const ::iov::bvecq* bvecq;
    const ::iov::folio_queue* folioq;
    ::iov::xarray* xarray;
  };
  size_t count;  // bytes left
  union {
    unsigned long nr_segs;  // segments left, counting the current one (1 for UBUF)
    uint16_t bvecq_slot;    // BVECQ: the current slot of *bvecq
    uint8_t folioq_slot;    // FOLIOQ: the current slot of *folioq
    loff_t xarray_start;
  };
  // Not in the kernel: what revert and reexpand need to refuse going past the
  // segments instead of the kernel's BUG(). segs_origin is the first segment
  // given to the initializer; orig_count bounds iov_offset + count for UBUF and
  // XARRAY, whose extent is otherwise unknown.
  const void* segs_origin;
  size_t orig_count;
};
static_assert(std::is_trivially_copyable_v<iov_iter>);

struct iov_iter_state {
  size_t iov_offset;
  size_t count;
  unsigned long nr_segs;
};

inline iter_type iov_iter_type(const iov_iter* i) { return static_cast<iter_type>(i->type); }
inline size_t iov_iter_count(const iov_iter* i) { return i->count; }
inline bool iter_is_ubuf(const iov_iter* i) { return i->type == ITER_UBUF; }
inline bool iter_is_iovec(const iov_iter* i) { return i->type == ITER_IOVEC; }
inline bool iov_iter_is_kvec(const iov_iter* i) { return i->type == ITER_KVEC; }
inline bool iov_iter_is_bvec(const iov_iter* i) { return i->type == ITER_BVEC; }
inline bool iov_iter_is_xarray(const iov_iter* i) { return i->type == ITER_XARRAY; }
inline bool iov_iter_is_discard(const iov_iter* i) { return i->type == ITER_DISCARD; }
inline bool iov_iter_is_bvecq(const iov_iter* i) { return i->type == ITER_BVECQ; }
inline bool iov_iter_is_folioq(const iov_iter* i) { return i->type == ITER_FOLIOQ; }
inline bool user_backed_iter(const iov_iter* i) { return iter_is_ubuf(i) || iter_is_iovec(i); }
inline int iov_iter_rw(const iov_iter* i) { return i->data_source ? ITER_SOURCE : ITER_DEST; }

namespace internal {
// The three segment arrays, IOVEC, KVEC and BVEC, seen alike, so that what
// walks an array (advance, revert, npages, alignment, ...) is written once
// for the three; the kernel writes a pair of each. What differs is here:
//   type         the iterator type of an array of Seg
//   len(s)       the segment's length
//   start(s)     where its bytes start as npages and the alignment queries see
//                it: the address for IOVEC/KVEC, the offset into the first
//                page for BVEC (the kernel's iov_iter_alignment_bvec)
//   skips_empty  an empty segment counts for nothing in npages and alignment
//                (the kernel's iovec versions test `if (len)`, its bvec ones
//                do not; its alignment check skips none)
template <class Seg>
struct seg_traits;
template <>
struct seg_traits<::iovec> {
  static constexpr iter_type type = ITER_IOVEC;
  static constexpr bool skips_empty = true;
  static size_t len(const ::iovec& s) { return s.iov_len; }
  static unsigned long start(const ::iovec& s) { return reinterpret_cast<unsigned long>(s.iov_base); }
};
template <>
struct seg_traits<kvec> {
  static constexpr iter_type type = ITER_KVEC;
  static constexpr bool skips_empty = true;
  static size_t len(const kvec& s) { return s.iov_len; }
  static unsigned long start(const kvec& s) { return reinterpret_cast<unsigned long>(s.iov_base); }
};
template <>
struct seg_traits<bio_vec> {
  static constexpr iter_type type = ITER_BVEC;
  static constexpr bool skips_empty = false;
  static size_t len(const bio_vec& s) { return s.bv_len; }
  static unsigned long start(const bio_vec& s) { return s.bv_offset; }
};

// The iterator's current-segment pointer for an array of Seg.
template <class Seg>
IOV_ALWAYS_INLINE const Seg*& iter_segs(iov_iter* i) {
  if constexpr (std::is_same_v<Seg, ::iovec>)
    return i->iov;
  else if constexpr (std::is_same_v<Seg, kvec>)
    return i->kvec;
  else
    return i->bvec;
}
template <class Seg>
IOV_ALWAYS_INLINE const Seg* iter_segs(const iov_iter* i) {
  return iter_segs<Seg>(const_cast<iov_iter*>(i));
}

inline void check_direction(unsigned direction) {
  (void)IOV_BUG_ON(direction != ITER_DEST && direction != ITER_SOURCE,
                   "iov_iter init: direction must be ITER_DEST or ITER_SOURCE");
}

inline void init_common(iov_iter* i, iter_type type, unsigned direction, size_t count) {
  check_direction(direction);
  *i = iov_iter{};
  i->type = type;
  i->data_source = direction != 0;
  i->count = count;
  i->orig_count = count;
}

// The initializer of an array of Seg; `what` names the caller in the check.
template <class Seg>
inline void init_segs(iov_iter* i, unsigned direction, const Seg* segs, unsigned long nr_segs, size_t count,
                      [[maybe_unused]] const char* what) {
#if IOV_CHECKS
  size_t total = 0;  // saturating
  for (unsigned long k = 0; k < nr_segs; k++) {
    size_t l = seg_traits<Seg>::len(segs[k]);
    total = total + l < total ? SIZE_MAX : total + l;
  }
  (void)IOV_BUG_ON(count > total, what);
#endif
  init_common(i, seg_traits<Seg>::type, direction, count);
  iter_segs<Seg>(i) = segs;
  i->segs_origin = segs;
  i->nr_segs = nr_segs;
}
}  // namespace internal

inline void iov_iter_ubuf(iov_iter* i, unsigned direction, void* buf, size_t count) {
  internal::init_common(i, ITER_UBUF, direction, count);
  i->ubuf = buf;
  i->nr_segs = 1;
}

inline void iov_iter_init(iov_iter* i, unsigned direction, const ::iovec* iov, unsigned long nr_segs,
                          size_t count) {
  internal::init_segs(i, direction, iov, nr_segs, count, "iov_iter_init: count exceeds the segments' total");
}

inline void iov_iter_kvec(iov_iter* i, unsigned direction, const kvec* kv, unsigned long nr_segs,
                          size_t count) {
  internal::init_segs(i, direction, kv, nr_segs, count, "iov_iter_kvec: count exceeds the segments' total");
}

inline void iov_iter_bvec(iov_iter* i, unsigned direction, const bio_vec* bv, unsigned long nr_segs,
                          size_t count) {
  internal::init_segs(i, direction, bv, nr_segs, count, "iov_iter_bvec: count exceeds the segments' total");
}

// Entries are page*, at index = byte offset >> PAGE_SHIFT; a missing index ends the walk.
inline void iov_iter_xarray(iov_iter* i, unsigned direction, xarray* xa, loff_t start, size_t count) {
  internal::init_common(i, ITER_XARRAY, direction, count);
  i->xarray = xa;
  i->xarray_start = start;
}

// A segmented queue of bio_vec arrays (bvecq.hpp), from slot first_slot of
// *bq, offset bytes into that slot's bio_vec. As the kernel's, nothing is
// checked against the queue: the caller keeps its pages alive, and a count
// beyond what the queue holds ends walks early.
inline void iov_iter_bvec_queue(iov_iter* i, unsigned direction, const bvecq* bq, unsigned first_slot,
                                unsigned offset, size_t count) {
  internal::init_common(i, ITER_BVECQ, direction, count);
  i->bvecq = bq;
  i->bvecq_slot = static_cast<uint16_t>(first_slot);
  i->iov_offset = offset;
}

// The folios of a folio queue (folio_queue.hpp), from slot first_slot of
// *folioq, offset bytes into that folio; the same terms as iov_iter_bvec_queue().
inline void iov_iter_folio_queue(iov_iter* i, unsigned direction, const folio_queue* folioq, unsigned first_slot,
                                 unsigned offset, size_t count) {
  internal::init_common(i, ITER_FOLIOQ, direction, count);
  i->folioq = folioq;
  i->folioq_slot = static_cast<uint8_t>(first_slot);
  i->iov_offset = offset;
}

// A discard iterator is always ITER_DEST, whatever direction is passed (as the kernel's).
// ITER_SOURCE is the kernel's BUG_ON(direction != READ): with IOV_CHECKS on it aborts.
inline void iov_iter_discard(iov_iter* i, unsigned direction, size_t count) {
  internal::check_direction(direction);
  (void)IOV_BUG_ON(direction == ITER_SOURCE, "iov_iter_discard: direction must be ITER_DEST (READ)");
  internal::init_common(i, ITER_DISCARD, ITER_DEST, count);
}

// --- The rest of uio.h: the current segment, the imports, fault-in ------------

// The current iovec (IOVEC, or KVEC, which has its layout). For UBUF it is,
// as in the kernel, the iterator's own {ubuf, count} seen as an iovec, so
// iter_iov_len() of a UBUF iterator advanced by n is count - n, not count
// (the kernel's callers use iov_iter_count() for UBUF; so should ports).
static_assert(offsetof(iov_iter, count) == offsetof(iov_iter, ubuf) + sizeof(void*),
              "iter_iov: a UBUF iterator's {ubuf, count} must have ::iovec's layout");
inline const ::iovec* iter_iov(const iov_iter* iter) {
  if (iter->type == ITER_UBUF)
    return reinterpret_cast<const ::iovec*>(&iter->ubuf);
  return iter->iov;
}
inline void* iter_iov_addr(const iov_iter* iter) {
  return static_cast<char*>(iter_iov(iter)->iov_base) + iter->iov_offset;
}
inline size_t iter_iov_len(const iov_iter* iter) { return iter_iov(iter)->iov_len - iter->iov_offset; }

inline ::iovec iov_iter_iovec(const iov_iter* iter) {
  size_t len = iter_iov_len(iter);
  return {iter_iov_addr(iter), iter->count < len ? iter->count : len};
}

// The bytes of nr_segs iovecs; the lengths must already be validated (the
// sum is not checked for overflow, as the kernel's).
inline size_t iov_length(const ::iovec* iov, unsigned long nr_segs) {
  size_t ret = 0;
  for (unsigned long seg = 0; seg < nr_segs; seg++)
    ret += iov[seg].iov_len;
  return ret;
}

// Out of line in src/iov_iter.cc, as in the kernel's lib/iov_iter.c.
//
// "User" memory is this process's: the imports copy the iovec array with
// memcpy and check addresses as the kernel's access_ok() (a range that wraps,
// or ends above the user half of the address space, is -EFAULT). Arrays they
// allocate are malloc()ed: free() them where the kernel kfree()s.

// An ITER_UBUF iterator over buf; len is capped at MAX_RW_COUNT. 0 or -EFAULT.
int import_ubuf(int rw, void* buf, size_t len, iov_iter* i);
// The user's iovec array copied into fast_iov when nr_segs <= fast_segs, else
// into a malloc()ed array; ERR_PTR(-EINVAL) beyond UIO_MAXIOV or for a length
// that is negative as ssize_t, ERR_PTR(-ENOMEM), ERR_PTR(-EFAULT); fast_iov
// for nr_segs == 0. compat: uvec holds a 32-bit process's iovecs
// (compat_iovec: two u32), as the kernel's in_compat_syscall() case.
::iovec* iovec_from_user(const ::iovec* uvec, unsigned long nr_segs, unsigned long fast_segs, ::iovec* fast_iov,
                         bool compat);
// The kernel's import_iovec(): one segment gives ITER_UBUF, more an ITER_IOVEC
// over the copied array, lengths capped so the total stays within
// MAX_RW_COUNT. Returns the total or -errno; *iovp is then the array to free()
// (nullptr when fast_iov, passed in *iovp, was used, or on error).
ssize_t import_iovec(int type, const ::iovec* uvec, unsigned nr_segs, unsigned fast_segs, ::iovec** iovp,
                     iov_iter* i);
// *new_iter = *old, with its segment array (IOVEC, KVEC, BVEC: from the
// current segment on) copied into a malloc()ed array, which is returned (to
// free()); nullptr for the other types, or when the copy cannot be allocated.
const void* dup_iter(iov_iter* new_iter, iov_iter* old, gfp_t flags);

// The bytes of the next size (clamped to the count) that are NOT accessible
// for reading / writing, probed page by page as the kernel's: 0 when all
// are; counted from the first page that is not. Only UBUF and IOVEC have user
// memory to fault in: the others return 0. Readable pages are touched (faulted
// in); writable ones are only probed, never written.
size_t fault_in_iov_iter_readable(const iov_iter* i, size_t size);
size_t fault_in_iov_iter_writeable(const iov_iter* i, size_t size);

}  // namespace iov
