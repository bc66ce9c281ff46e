// iov_iter.hpp: the iterator over a scatter-gather list, its initializers and
// its type and direction queries (the kernel's include/linux/uio.h).
//
// An iov_iter walks one of six shapes: one user buffer (UBUF), an array of
// ::iovec (IOVEC), of kvec (KVEC), of bio_vec pages (BVEC), the pages of an
// xarray (XARRAY), or nothing at all (DISCARD, a sink that only counts). It is
// trivially copyable, as kernel code copies it by value to look ahead.
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
#include "iov/segments.hpp"

namespace iov {

struct xarray;

inline constexpr unsigned READ = 0, WRITE = 1;
inline constexpr unsigned ITER_DEST = READ;     // data goes into it
inline constexpr unsigned ITER_SOURCE = WRITE;  // data comes out of it

enum iter_type : uint8_t { ITER_UBUF, ITER_IOVEC, ITER_BVEC, ITER_KVEC, ITER_XARRAY, ITER_DISCARD };

struct iov_iter {
  uint8_t type;      // the kernel's iter_type (an iter_type value)
  bool nofault;      // kept for layout parity; user space never faults in
  bool data_source;  // ITER_SOURCE: data is read out of the segments
  size_t iov_offset;  // offset into the current segment (UBUF: into the buffer; XARRAY: from xarray_start)
  union {
    void* ubuf;
    const ::iovec* iov;  // the kernel's __iov
    const ::iov::kvec* kvec;
    const ::iov::bio_vec* bvec;
    ::iov::xarray* xarray;
  };
  size_t count;  // bytes left
  union {
    unsigned long nr_segs;  // segments left, counting the current one (1 for UBUF)
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
inline bool user_backed_iter(const iov_iter* i) { return iter_is_ubuf(i) || iter_is_iovec(i); }
inline int iov_iter_rw(const iov_iter* i) { return i->data_source ? ITER_SOURCE : ITER_DEST; }

namespace internal {
inline void check_direction(unsigned direction) {
  (void)IOV_BUG_ON(direction != ITER_DEST && direction != ITER_SOURCE,
             "iov_iter init: direction must be ITER_DEST or ITER_SOURCE");
}
// Sum of segment lengths, saturating, for the count check of the initializers.
template <class Seg, class Len>
inline size_t segments_total(const Seg* segs, unsigned long nr, Len len_of) {
  size_t total = 0;
  for (unsigned long k = 0; k < nr; k++) {
    size_t l = len_of(segs[k]);
    total = total + l < total ? SIZE_MAX : total + l;
  }
  return total;
}
inline void init_common(iov_iter* i, iter_type type, unsigned direction, size_t count) {
  check_direction(direction);
  *i = iov_iter{};
  i->type = type;
  i->data_source = direction != 0;
  i->count = count;
  i->orig_count = count;
}
}  // namespace internal

inline void iov_iter_ubuf(iov_iter* i, unsigned direction, void* buf, size_t count) {
  internal::init_common(i, ITER_UBUF, direction, count);
  i->ubuf = buf;
  i->nr_segs = 1;
}

inline void iov_iter_init(iov_iter* i, unsigned direction, const ::iovec* iov, unsigned long nr_segs,
                          size_t count) {
#if IOV_CHECKS
  (void)IOV_BUG_ON(count > internal::segments_total(iov, nr_segs, [](const ::iovec& v) { return v.iov_len; }),
             "iov_iter_init: count exceeds the segments' total");
#endif
  internal::init_common(i, ITER_IOVEC, direction, count);
  i->iov = iov;
  i->segs_origin = iov;
  i->nr_segs = nr_segs;
}

inline void iov_iter_kvec(iov_iter* i, unsigned direction, const kvec* kv, unsigned long nr_segs,
                          size_t count) {
#if IOV_CHECKS
  (void)IOV_BUG_ON(count > internal::segments_total(kv, nr_segs, [](const kvec& v) { return v.iov_len; }),
             "iov_iter_kvec: count exceeds the segments' total");
#endif
  internal::init_common(i, ITER_KVEC, direction, count);
  i->kvec = kv;
  i->segs_origin = kv;
  i->nr_segs = nr_segs;
}

inline void iov_iter_bvec(iov_iter* i, unsigned direction, const bio_vec* bv, unsigned long nr_segs,
                          size_t count) {
#if IOV_CHECKS
  (void)IOV_BUG_ON(count > internal::segments_total(bv, nr_segs, [](const bio_vec& v) { return size_t{v.bv_len}; }),
             "iov_iter_bvec: count exceeds the segments' total");
#endif
  internal::init_common(i, ITER_BVEC, direction, count);
  i->bvec = bv;
  i->segs_origin = bv;
  i->nr_segs = nr_segs;
}

// Entries are page*, at index = byte offset >> PAGE_SHIFT; a missing index ends the walk.
inline void iov_iter_xarray(iov_iter* i, unsigned direction, xarray* xa, loff_t start, size_t count) {
  internal::init_common(i, ITER_XARRAY, direction, count);
  i->xarray = xa;
  i->xarray_start = start;
}

// A discard iterator is always ITER_DEST, whatever direction is passed (as the kernel's).
inline void iov_iter_discard(iov_iter* i, unsigned direction, size_t count) {
  internal::check_direction(direction);
  internal::init_common(i, ITER_DISCARD, ITER_DEST, count);
}

}  // namespace iov
