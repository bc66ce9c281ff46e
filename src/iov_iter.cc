// iov_iter.cc: the out-of-line names of iov_iter.hpp (the kernel's
// lib/iov_iter.c): the imports from "user" iovec arrays, dup_iter(), and
// the fault-in probes.
#include "iov/iov_iter.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "iov/err.hpp"
#include "iov/position.hpp"

namespace iov {

namespace {

// The kernel's access_ok(): the range neither wraps nor reaches above the
// user half of the address space (x86-64 with 4-level paging: TASK_SIZE_MAX,
// 2^47 - 4096; elsewhere only the wrap is checked).
bool access_ok(const void* addr, size_t size) {
  uintptr_t start = reinterpret_cast<uintptr_t>(addr), end;
  if (__builtin_add_overflow(start, size, &end))
    return false;
#if defined(__x86_64__)
  constexpr uintptr_t task_size_max = (uintptr_t{1} << 47) - PAGE_SIZE;
  return end <= task_size_max;
#else
  return true;
#endif
}

// A 32-bit process's iovec (the kernel's struct compat_iovec).
struct compat_iovec {
  uint32_t iov_base;
  uint32_t iov_len;
};

// The kernel's copy_iovec_from_user() / copy_compat_iovec_from_user(): a
// length that is negative as (compat_)ssize_t is -EINVAL.
int copy_iovec_from_user(::iovec* iov, const ::iovec* uvec, unsigned long nr_segs) {
  if (!access_ok(uvec, nr_segs * sizeof(*uvec)))
    return -EFAULT;
  for (unsigned long k = 0; k < nr_segs; k++) {
    ::iovec v;
    std::memcpy(&v, &uvec[k], sizeof(v));
    if (static_cast<ssize_t>(v.iov_len) < 0)
      return -EINVAL;
    iov[k] = v;
  }
  return 0;
}

int copy_compat_iovec_from_user(::iovec* iov, const ::iovec* uvec, unsigned long nr_segs) {
  auto* cvec = reinterpret_cast<const compat_iovec*>(uvec);
  if (!access_ok(cvec, nr_segs * sizeof(*cvec)))
    return -EFAULT;
  for (unsigned long k = 0; k < nr_segs; k++) {
    compat_iovec v;
    std::memcpy(&v, &cvec[k], sizeof(v));
    if (static_cast<int32_t>(v.iov_len) < 0)
      return -EINVAL;
    iov[k] = {reinterpret_cast<void*>(uintptr_t{v.iov_base}), v.iov_len};
  }
  return 0;
}

// The kernel's __import_iovec_ubuf(): one segment, copied into the caller's
// fast array, as a UBUF iterator.
ssize_t import_iovec_ubuf(int type, const ::iovec* uvec, ::iovec** iovp, iov_iter* i) {
  ::iovec* iov = *iovp;
  *iovp = nullptr;
  int ret = copy_iovec_from_user(iov, uvec, 1);
  if (IOV_UNLIKELY(ret))
    return ret;
  ret = import_ubuf(type, iov->iov_base, iov->iov_len, i);
  if (IOV_UNLIKELY(ret))
    return ret;
  return static_cast<ssize_t>(i->count);
}

// The bytes from addr on, up to size, that lie in mappings with the access
// wanted (a walk over /proc/self/maps, which lists them in address order).
// Mappings are whole pages, so a shortfall ends at a page boundary, as the
// kernel's page-by-page probe stops at one.
size_t accessible_prefix(const void* addr, size_t size, bool write) {
  uintptr_t pos = reinterpret_cast<uintptr_t>(addr), end;
  if (__builtin_add_overflow(pos, size, &end))
    end = UINTPTR_MAX;
  const uintptr_t start = pos;
  int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  char buf[8192];
  size_t have = 0;
  bool done = false;
  while (!done) {
    ssize_t n = ::read(fd, buf + have, sizeof(buf) - 1 - have);
    if (n <= 0)
      break;
    have += static_cast<size_t>(n);
    buf[have] = '\0';
    char* line = buf;
    for (char* nl; !done && (nl = std::strchr(line, '\n')); line = nl + 1) {
      *nl = '\0';
      char* rest;
      uintptr_t lo = std::strtoul(line, &rest, 16);
      uintptr_t hi = std::strtoul(rest + 1, &rest, 16);
      const char* perms = rest + 1;
      if (hi <= pos)
        continue;
      if (lo > pos || perms[write ? 1 : 0] != (write ? 'w' : 'r')) {
        done = true;  // a hole, or a mapping without the access
        break;
      }
      pos = hi;
      done = pos >= end;
    }
    have = static_cast<size_t>(buf + have - line);
    std::memmove(buf, line, have);
  }
  ::close(fd);
  return pos >= end ? size : pos - start;
}

// The kernel's fault_in_readable() / fault_in_safe_writeable(): the bytes not
// faulted in.
size_t fault_in(const void* addr, size_t size, bool write) {
  if (size == 0)
    return 0;
  if (!access_ok(addr, size))
    return size;
  size_t ok = accessible_prefix(addr, size, write);
  if (!write) {
    // Touch each readable page, as the kernel's probe does.
    const volatile char* p = static_cast<const char*>(addr);
    for (size_t off = 0; off < ok; off = (off | (PAGE_SIZE - 1)) + 1)
      (void)p[off];
  }
  return size - ok;
}

template <bool Write>
size_t fault_in_iov_iter(const iov_iter* i, size_t size) {
  if (iter_is_ubuf(i)) {
    size_t n = std::min(size, iov_iter_count(i));
    n -= fault_in(static_cast<char*>(i->ubuf) + i->iov_offset, n, Write);
    return size - n;
  }
  if (iter_is_iovec(i)) {
    size_t count = std::min(size, iov_iter_count(i));
    size -= count;
    const ::iovec* p = iter_iov(i);
    for (size_t skip = i->iov_offset; count; p++, skip = 0) {
      size_t len = std::min(count, p->iov_len - skip);
      if (IOV_UNLIKELY(!len))
        continue;
      size_t ret = fault_in(static_cast<char*>(p->iov_base) + skip, len, Write);
      count -= len - ret;
      if (ret)
        break;
    }
    return count + size;
  }
  return 0;
}

}  // namespace

int import_ubuf(int rw, void* buf, size_t len, iov_iter* i) {
  if (len > MAX_RW_COUNT)
    len = MAX_RW_COUNT;
  if (IOV_UNLIKELY(!access_ok(buf, len)))
    return -EFAULT;
  iov_iter_ubuf(i, static_cast<unsigned>(rw), buf, len);
  return 0;
}

::iovec* iovec_from_user(const ::iovec* uvec, unsigned long nr_segs, unsigned long fast_segs, ::iovec* fast_iov,
                         bool compat) {
  ::iovec* iov = fast_iov;
  // Linux has traditionally returned zero for zero segments.
  if (nr_segs == 0)
    return iov;
  if (nr_segs > UIO_MAXIOV)
    return ERR_PTR(-EINVAL);
  if (nr_segs > fast_segs) {
    iov = static_cast<::iovec*>(std::malloc(nr_segs * sizeof(::iovec)));
    if (!iov)
      return ERR_PTR(-ENOMEM);
  }
  int ret = compat ? copy_compat_iovec_from_user(iov, uvec, nr_segs) : copy_iovec_from_user(iov, uvec, nr_segs);
  if (ret) {
    if (iov != fast_iov)
      std::free(iov);
    return ERR_PTR(ret);
  }
  return iov;
}

ssize_t import_iovec(int type, const ::iovec* uvec, unsigned nr_segs, unsigned fast_segs, ::iovec** iovp,
                     iov_iter* i) {
  if (nr_segs == 1)
    return import_iovec_ubuf(type, uvec, iovp, i);
  ::iovec* iov = iovec_from_user(uvec, nr_segs, fast_segs, *iovp, false);
  if (IS_ERR(iov)) {
    *iovp = nullptr;
    return PTR_ERR(iov);
  }
  // SUS wants EINVAL for a total beyond ssize_t; Linux caps every read and
  // write at MAX_RW_COUNT instead, shortening the segment that crosses it.
  ssize_t total_len = 0;
  for (unsigned long seg = 0; seg < nr_segs; seg++) {
    ssize_t len = static_cast<ssize_t>(iov[seg].iov_len);
    if (!access_ok(iov[seg].iov_base, static_cast<size_t>(len))) {
      if (iov != *iovp)
        std::free(iov);
      *iovp = nullptr;
      return -EFAULT;
    }
    if (len > static_cast<ssize_t>(MAX_RW_COUNT) - total_len) {
      len = static_cast<ssize_t>(MAX_RW_COUNT) - total_len;
      iov[seg].iov_len = static_cast<size_t>(len);
    }
    total_len += len;
  }
  iov_iter_init(i, static_cast<unsigned>(type), iov, nr_segs, static_cast<size_t>(total_len));
  *iovp = iov == *iovp ? nullptr : iov;
  return total_len;
}

const void* dup_iter(iov_iter* new_iter, iov_iter* old, gfp_t) {
  *new_iter = *old;
  size_t seg_size;
  if (iov_iter_is_bvec(new_iter))
    seg_size = sizeof(bio_vec);
  else if (iov_iter_is_kvec(new_iter) || iter_is_iovec(new_iter))
    seg_size = sizeof(::iovec);  // iovec and kvec have one layout
  else
    return nullptr;
  const void* segs = new_iter->bvec;  // the current segment, whichever member is live
  void* copy = std::malloc(new_iter->nr_segs * seg_size);
  new_iter->bvec = static_cast<const bio_vec*>(copy);  // nullptr when it failed, as the kernel's
  if (!copy)
    return nullptr;
  if (new_iter->nr_segs)  // an iterator with no segments may have no array: memcpy() wants one
    std::memcpy(copy, segs, new_iter->nr_segs * seg_size);
  new_iter->segs_origin = copy;  // the copy starts at the current segment: no reverting before it
  return copy;
}

size_t fault_in_iov_iter_readable(const iov_iter* i, size_t size) { return fault_in_iov_iter<false>(i, size); }
size_t fault_in_iov_iter_writeable(const iov_iter* i, size_t size) { return fault_in_iov_iter<true>(i, size); }

}  // namespace iov
