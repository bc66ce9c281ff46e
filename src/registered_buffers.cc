// registered_buffers.cc: the registration table and io_import_fixed() (the
// kernel's io_uring/rsrc.c, without pinning: user space has no pages to pin).
#include "iov/registered_buffers.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "iov/position.hpp"
#include "iov/rcu.hpp"

namespace iov {

int io_import_fixed(int ddir, iov_iter* iter, const mapped_ubuf* imu, uint64_t buf_addr, size_t len) {
  if (!imu || (ddir != ITER_DEST && ddir != ITER_SOURCE) || !(imu->dir & (1U << ddir)))
    return -EFAULT;
  uint64_t buf_end;
  if (__builtin_add_overflow(buf_addr, uint64_t{len}, &buf_end) || len > MAX_RW_COUNT)
    return -EFAULT;
  if (buf_addr < imu->ubuf || buf_end > imu->ubuf + imu->len)  // not inside the mapped region
    return -EFAULT;

  // The bvecs are uniform folios but for the first and last: find ours by
  // arithmetic rather than iov_iter_advance(), which would walk them all.
  size_t offset = buf_addr - imu->ubuf;
  const bio_vec* bvec = imu->bvec.data();
  iov_iter_bvec(iter, ddir, bvec, imu->bvec.size(), offset + len);
  if (!offset)
    return 0;
  if (offset < bvec->bv_len) {
    iter->count -= offset;
    iter->iov_offset = offset;
  } else {
    offset -= bvec->bv_len;
    unsigned long seg_skip = 1 + (offset >> imu->folio_shift);
    iter->bvec += seg_skip;
    iter->nr_segs -= seg_skip;
    iter->count -= bvec->bv_len + offset;
    iter->iov_offset = offset & ((size_t{1} << imu->folio_shift) - 1);
  }
  return 0;
}

void buffer_ref::put() {
  mapped_ubuf* imu = std::exchange(imu_, nullptr);
  if (imu->refs.fetch_sub(1, std::memory_order_acq_rel) != 1)
    return;
  if (imu->locked)
    munlock(reinterpret_cast<void*>(imu->ubuf & PAGE_MASK),
            ((imu->ubuf + imu->len + PAGE_SIZE - 1) & PAGE_MASK) - (imu->ubuf & PAGE_MASK));
  defer_delete(imu);  // a lookup may still be reading imu->refs in its RCU section
}

namespace internal {
std::atomic<bool> registration_probe_mincore_only{false};
}  // namespace internal

namespace {
std::string rlimit_memlock_text() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
    return "unknown";
  return rl.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : absl::StrCat(rl.rlim_cur, " bytes");
}

std::string range_text(size_t slot, uint64_t base, size_t len) {
  return absl::StrCat("register_buffers: buffer ", slot, " [0x", absl::Hex(base), ", 0x", absl::Hex(base + len), ")");
}

// The first page of [start, end) (page-aligned) that is not mapped, or end.
uint64_t first_unmapped_page(uint64_t start, uint64_t end) {
  unsigned char vec[4096];
  for (uint64_t pos = start; pos < end;) {
    uint64_t n = std::min<uint64_t>((end - pos) >> PAGE_SHIFT, sizeof vec);
    if (mincore(reinterpret_cast<void*>(pos), n << PAGE_SHIFT, vec) == 0) {
      pos += n << PAGE_SHIFT;
      continue;
    }
    if (n == 1)  // mincore says ENOMEM for a range with a hole: find the page
      return pos;
    for (uint64_t page_end = pos + (n << PAGE_SHIFT); pos < page_end; pos += PAGE_SIZE)
      if (mincore(reinterpret_cast<void*>(pos), PAGE_SIZE, vec) != 0)
        return pos;
  }
  return end;
}

// InvalidArgument naming the first page of the buffer that is not mapped, if any.
absl::Status mapping_status(size_t slot, uint64_t base, size_t len, uint64_t start, uint64_t end) {
  uint64_t hole = first_unmapped_page(start, end);
  if (hole == end)
    return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(range_text(slot, base, len), " is not mapped in this process (no page at 0x", absl::Hex(hole), ")"));
}

// Can the kernel pin these pages? io_uring's registration pins them
// (pin_user_pages with FOLL_WRITE) and refuses the buffer with -EFAULT when
// it cannot. MADV_POPULATE_WRITE (READ for a buffer that only supplies data)
// is the same fault-in from user space: it fails on an unmapped page
// (ENOMEM), a mapping without that access (EINVAL: PROT_NONE, read-only,
// VM_IO/VM_PFNMAP), or where an access would raise SIGBUS (EFAULT). Like
// pinning, it populates the pages. Before Linux 5.14 (no MADV_POPULATE_*)
// only the mapping is checked, with mincore().
absl::Status probe_memory(size_t slot, uint64_t base, size_t len, unsigned dir) {
  const uint64_t start = base & PAGE_MASK, end = (base + len + PAGE_SIZE - 1) & PAGE_MASK;
  static char probe_target;  // in .bss: mapped and writable
  static const bool populate_supported =
      madvise(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&probe_target) & PAGE_MASK), PAGE_SIZE,
              MADV_POPULATE_READ) == 0;
  if (!populate_supported || internal::registration_probe_mincore_only.load(std::memory_order_relaxed))
    return mapping_status(slot, base, len, start, end);
  const bool receives = dir & IOV_REG_DEST;
  int err;
  do {
    err = madvise(reinterpret_cast<void*>(start), end - start, receives ? MADV_POPULATE_WRITE : MADV_POPULATE_READ)
              ? errno
              : 0;
  } while (err == EINTR);
  switch (err) {
    case 0:
      return absl::OkStatus();
    case ENOMEM:  // no mapping, or no memory to fault it in
      if (absl::Status st = mapping_status(slot, base, len, start, end); !st.ok())
        return st;
      return absl::ResourceExhaustedError(
          absl::StrCat(range_text(slot, base, len), " could not be faulted in: ", std::strerror(err)));
    case EINVAL:
      if (receives && madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_READ) == 0)
        return absl::InvalidArgumentError(absl::StrCat(
            range_text(slot, base, len), " is read-only memory; a buffer that receives data (IOV_REG_DEST) must be writable"));
      return absl::InvalidArgumentError(
          absl::StrCat(range_text(slot, base, len), " is not accessible memory (PROT_NONE, or a device mapping)"));
    case EFAULT:
      return absl::InvalidArgumentError(absl::StrCat(
          range_text(slot, base, len), " cannot be faulted in: an access would raise SIGBUS (a file mapping past its end?)"));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(range_text(slot, base, len), " cannot be faulted in: ", std::strerror(err)));
  }
}

// Validates one buffer (the kernel's io_buffer_validate, and the pinning of
// io_sqe_buffer_register) and builds its table.
absl::StatusOr<mapped_ubuf*> map_buffer(size_t slot, const ::iovec& buf, const buffer_registration_options& opts) {
  uint64_t base = reinterpret_cast<uintptr_t>(buf.iov_base);
  if (buf.iov_len == 0 || buf.iov_len > IOV_MAX_REG_BUFFER_SIZE)
    return absl::InvalidArgumentError(absl::StrCat("register_buffers: buffer ", slot, " has length ", buf.iov_len,
                                                   "; it must be 1 byte to 1 GiB"));
  uint64_t end;
  if (__builtin_add_overflow(base, uint64_t{buf.iov_len} + PAGE_SIZE, &end))
    return absl::InvalidArgumentError(
        absl::StrCat("register_buffers: buffer ", slot, " wraps around the address space"));
  if (opts.folio_shift < PAGE_SHIFT || opts.folio_shift > 30)
    return absl::InvalidArgumentError(
        absl::StrCat("register_buffers: folio_shift ", opts.folio_shift, " is outside 12..30"));
  if (opts.dir == 0 || (opts.dir & ~unsigned{IOV_REG_RW}))
    return absl::InvalidArgumentError(absl::StrCat("register_buffers: bad direction bits ", opts.dir));

  if (absl::Status st = probe_memory(slot, base, buf.iov_len, opts.dir); !st.ok())
    return st;

  auto imu = std::make_unique<mapped_ubuf>();
  imu->ubuf = base;
  imu->len = buf.iov_len;
  imu->folio_shift = opts.folio_shift;
  imu->dir = opts.dir;
  imu->locked = false;
  const uint64_t folio = uint64_t{1} << opts.folio_shift;
  for (uint64_t pos = base, stop = base + buf.iov_len; pos < stop;) {
    uint64_t folio_left = folio - (pos & (folio - 1));  // never wraps past the top of memory
    uint64_t next = stop - pos <= folio_left ? stop : pos + folio_left;
    char* addr = reinterpret_cast<char*>(pos);
    imu->bvec.push_back(bio_vec{virt_to_page(addr), static_cast<unsigned>(next - pos),
                                static_cast<unsigned>(offset_in_page(addr))});
    pos = next;
  }
  if (opts.lock_memory) {
    uint64_t start = base & PAGE_MASK, lock_end = (base + buf.iov_len + PAGE_SIZE - 1) & PAGE_MASK;
    if (mlock(reinterpret_cast<void*>(start), lock_end - start) != 0) {
      int err = errno;
      return absl::ResourceExhaustedError(absl::StrCat("register_buffers: mlock of buffer ", slot, " (",
                                                       lock_end - start, " bytes) refused: ", std::strerror(err),
                                                       "; RLIMIT_MEMLOCK is ", rlimit_memlock_text()));
    }
    imu->locked = true;
  }
  return imu.release();
}

void drop(mapped_ubuf* imu) { buffer_ref{imu}.reset(); }
}  // namespace

buffer_table::buffer_table(unsigned nr_slots) : slots_(std::min(nr_slots, IORING_MAX_REG_BUFFERS)) {}

buffer_table::~buffer_table() { unregister_all(); }

absl::Status buffer_table::register_buffers(absl::Span<const ::iovec> bufs, const buffer_registration_options& opts) {
  if (bufs.size() > slots_.size())
    return absl::InvalidArgumentError(
        absl::StrCat("register_buffers: ", bufs.size(), " buffers for a table of ", slots_.size(), " slots"));
  std::vector<mapped_ubuf*> mapped(bufs.size(), nullptr);
  for (size_t k = 0; k < bufs.size(); k++) {
    if (bufs[k].iov_base == nullptr && bufs[k].iov_len == 0)
      continue;  // a sparse slot
    if (bufs[k].iov_base == nullptr) {
      for (mapped_ubuf* m : mapped)
        if (m) drop(m);
      return absl::InvalidArgumentError(
          absl::StrCat("register_buffers: buffer ", k, " has a null base with length ", bufs[k].iov_len));
    }
    absl::StatusOr<mapped_ubuf*> m = map_buffer(k, bufs[k], opts);
    if (!m.ok()) {
      for (mapped_ubuf* done : mapped)
        if (done) drop(done);
      return m.status();
    }
    mapped[k] = *m;
  }
  std::lock_guard<std::mutex> lock(update_lock_);
  for (size_t k = 0; k < mapped.size(); k++)
    if (mapped_ubuf* old = slots_[k].exchange(mapped[k], std::memory_order_acq_rel))
      drop(old);
  return absl::OkStatus();
}

absl::Status buffer_table::update(unsigned index, const ::iovec& buf, const buffer_registration_options& opts) {
  if (index >= slots_.size())
    return absl::NotFoundError(
        absl::StrCat("update: buffer index ", index, " is beyond the table's ", slots_.size(), " slots"));
  mapped_ubuf* fresh = nullptr;
  if (buf.iov_base || buf.iov_len) {
    if (!buf.iov_base)
      return absl::InvalidArgumentError(
          absl::StrCat("update: buffer ", index, " has a null base with length ", buf.iov_len));
    absl::StatusOr<mapped_ubuf*> m = map_buffer(index, buf, opts);
    if (!m.ok())
      return m.status();
    fresh = *m;
  }
  std::lock_guard<std::mutex> lock(update_lock_);
  if (mapped_ubuf* old = slots_[index].exchange(fresh, std::memory_order_acq_rel))
    drop(old);
  return absl::OkStatus();
}

absl::Status buffer_table::unregister(unsigned index) {
  if (index >= slots_.size())
    return absl::NotFoundError(
        absl::StrCat("unregister: buffer index ", index, " is beyond the table's ", slots_.size(), " slots"));
  std::lock_guard<std::mutex> lock(update_lock_);
  mapped_ubuf* old = slots_[index].exchange(nullptr, std::memory_order_acq_rel);
  if (!old)
    return absl::NotFoundError(absl::StrCat("unregister: no buffer registered at index ", index));
  drop(old);
  return absl::OkStatus();
}

void buffer_table::unregister_all() {
  std::lock_guard<std::mutex> lock(update_lock_);
  for (auto& slot : slots_)
    if (mapped_ubuf* old = slot.exchange(nullptr, std::memory_order_acq_rel))
      drop(old);
}

absl::StatusOr<buffer_ref> buffer_table::lookup(unsigned index) const {
  if (index >= slots_.size())
    return absl::NotFoundError(absl::StrCat("buffer index ", index, " is beyond the table's ", slots_.size(), " slots"));
  rcu_read_guard rcu;
  mapped_ubuf* imu = slots_[index].load(std::memory_order_acquire);
  uint32_t refs = imu ? imu->refs.load(std::memory_order_relaxed) : 0;
  // The kernel's refcount_inc_not_zero: a buffer at zero is on its way out.
  while (refs && !imu->refs.compare_exchange_weak(refs, refs + 1, std::memory_order_acquire))
    ;
  if (!refs)
    return absl::NotFoundError(absl::StrCat("no buffer registered at index ", index));
  return buffer_ref(imu);
}

absl::StatusOr<buffer_ref> import_fixed(const buffer_table& table, unsigned index, uint64_t addr, size_t len,
                                        unsigned direction, iov_iter* iter) {
  if (direction != ITER_DEST && direction != ITER_SOURCE)
    return absl::InvalidArgumentError(
        absl::StrCat("import_fixed: direction ", direction, " is neither ITER_DEST nor ITER_SOURCE"));
  absl::StatusOr<buffer_ref> ref = table.lookup(index);
  if (!ref.ok())
    return absl::Status(ref.status().code(), absl::StrCat("import_fixed: ", ref.status().message()));
  const mapped_ubuf* imu = ref->get();
  iov_iter it;
  if (io_import_fixed(static_cast<int>(direction), &it, imu, addr, len) == 0) {
    *iter = it;
    return ref;
  }
  // Say which rule the request broke.
  uint64_t end;
  if (__builtin_add_overflow(addr, uint64_t{len}, &end))
    return absl::InvalidArgumentError(absl::StrCat("import_fixed: addr ", addr, " + len ", len, " overflows"));
  if (len > MAX_RW_COUNT)
    return absl::InvalidArgumentError(
        absl::StrCat("import_fixed: len ", len, " is over MAX_RW_COUNT (", MAX_RW_COUNT, ")"));
  if (!(imu->dir & (1U << direction)))
    return absl::PermissionDeniedError(absl::StrCat("import_fixed: buffer ", index, " was not registered for ",
                                                    direction == ITER_DEST ? "ITER_DEST" : "ITER_SOURCE"));
  return absl::OutOfRangeError(absl::StrCat("import_fixed: [", addr, ", ", end, ") is outside buffer ", index,
                                            " [", imu->ubuf, ", ", imu->ubuf + imu->len, ")"));
}

}  // namespace iov
