// registered_buffers.hpp: registered ("fixed") buffers, imported as ITER_BVEC
// iterators in O(1), as io_uring does with IORING_REGISTER_BUFFERS.
//
// Registering a buffer once precomputes its bio_vec table, so that each I/O
// skips turning a user address into pages (iov_iter_extract_pages and a bvec
// build per request); an import is then arithmetic on the table's uniform
// layout (offset >> shift), never a walk.
//
//   iov::buffer_table table(16);
//   ::iovec bufs[] = {{mem, 1 << 20}};
//   if (absl::Status s = table.register_buffers(bufs); !s.ok()) return s;
//   iov::iov_iter it;
//   absl::StatusOr<iov::buffer_ref> ref = iov::import_fixed(table, 0, addr, 4096, iov::ITER_DEST, &it);
//   // ... read into `it`; *ref keeps the registration alive until it is dropped
//
// Registration checks that the memory is the caller's (every page mapped and
// readable, writable when it may receive data), as the kernel's pinning does;
// an import, which only checks that its range lies inside a registration,
// then never reaches memory that was not.
//
// Lifetimes: lookups take no lock (RCU); each import holds a reference on its
// mapped_ubuf, so unregister and update only drop the table's reference and
// the bvec table (and an mlock) goes away with the last import. The memory
// itself stays the registrant's: keep it mapped while imports are in flight.
#pragma once

#ifdef IOV_HEADER_ONLY
#error "iov/registered_buffers.hpp needs the compiled library: link iov::iov (pkg-config iov), not iov::headers (iov-headers)"
#include "iov: link iov::iov"
#endif

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "iov/iov_iter.hpp"
#include "iov/page.hpp"
#include "iov/bvec.hpp"

namespace iov {

// The kernel's limits: IORING_MAX_REG_BUFFERS slots, buffers of 1 byte to 1 GiB.
inline constexpr unsigned IORING_MAX_REG_BUFFERS = 1U << 14;
inline constexpr size_t IOV_MAX_REG_BUFFER_SIZE = size_t{1} << 30;

// What a registered buffer may be used for: receiving data (reads into it:
// ITER_DEST) and/or supplying it (writes from it: ITER_SOURCE).
enum : unsigned {
  IOV_REG_DEST = 1U << ITER_DEST,
  IOV_REG_SOURCE = 1U << ITER_SOURCE,
  IOV_REG_RW = IOV_REG_DEST | IOV_REG_SOURCE,
};

struct buffer_registration_options {
  unsigned dir = IOV_REG_RW;
  bool lock_memory = false;  // mlock() it; refused by RLIMIT_MEMLOCK with a clear error
  // Contiguous memory is coalesced into bvecs of 1 << folio_shift bytes,
  // aligned in the address space (the kernel's folio_shift; PAGE_SHIFT gives
  // one entry per page, as for memory of unknown physical layout).
  unsigned folio_shift = PAGE_SHIFT;
};

// One registered buffer: the kernel's struct io_mapped_ubuf.
struct mapped_ubuf {
  uint64_t ubuf;       // the user address it starts at
  size_t len;
  unsigned folio_shift;
  unsigned dir;        // IOV_REG_* bits
  bool locked;         // mlock()ed: munlock()ed with the last reference
  std::vector<bio_vec> bvec;  // first (partial) folio, uniform folios, last (partial) folio
  std::atomic<uint32_t> refs{1};
};

// The kernel's io_import_fixed(): positions `iter` over [buf_addr, buf_addr +
// len) of imu by arithmetic on its uniform layout. Returns 0, or -EFAULT for a
// range outside the buffer, a length that overflows or exceeds MAX_RW_COUNT,
// or a direction the buffer was not registered for.
int io_import_fixed(int ddir, iov_iter* iter, const mapped_ubuf* imu, uint64_t buf_addr, size_t len);

// A counted reference on a registered buffer; the registration lives on while
// any exists. Move-only; empty when default-constructed.
class buffer_ref {
 public:
  buffer_ref() = default;
  explicit buffer_ref(mapped_ubuf* imu) : imu_(imu) {}  // adopts one reference
  buffer_ref(buffer_ref&& o) noexcept : imu_(std::exchange(o.imu_, nullptr)) {}
  buffer_ref& operator=(buffer_ref&& o) noexcept {
    if (this != &o) {
      reset();
      imu_ = std::exchange(o.imu_, nullptr);
    }
    return *this;
  }
  ~buffer_ref() { reset(); }
  // Inline while empty: a request loop that resets its unused one after
  // every request pays a test, not a call.
  void reset() {
    if (imu_) put();
  }
  const mapped_ubuf* get() const { return imu_; }
  const mapped_ubuf* operator->() const { return imu_; }
  explicit operator bool() const { return imu_ != nullptr; }

 private:
  void put();  // drops the reference held
  mapped_ubuf* imu_ = nullptr;
};

// The registration table (io_uring's buffer table): a fixed number of slots,
// filled by register_buffers() and update(), read by import_fixed() without a lock.
class buffer_table {
 public:
  explicit buffer_table(unsigned nr_slots);
  ~buffer_table();
  buffer_table(const buffer_table&) = delete;
  buffer_table& operator=(const buffer_table&) = delete;

  unsigned size() const { return static_cast<unsigned>(slots_.size()); }

  // Registers bufs[k] in slot k; a {nullptr, 0} entry leaves a slot empty (a
  // sparse table, as io_uring allows). All or nothing: on error no slot changes.
  // Each buffer must be this process's memory, every page of it mapped,
  // readable, and writable if it may receive data (IOV_REG_DEST): where the
  // kernel cannot pin such pages (-EFAULT) this is InvalidArgument naming the
  // buffer and why. The check faults the pages in, as pinning does.
  absl::Status register_buffers(absl::Span<const ::iovec> bufs, const buffer_registration_options& opts = {});
  // Replaces slot `index` ({nullptr, 0} empties it); imports in flight keep the old one.
  absl::Status update(unsigned index, const ::iovec& buf, const buffer_registration_options& opts = {});
  absl::Status unregister(unsigned index);
  void unregister_all();

  // A counted reference to slot `index`, or an error for an unknown or empty slot.
  absl::StatusOr<buffer_ref> lookup(unsigned index) const;

 private:
  std::vector<std::atomic<mapped_ubuf*>> slots_;
  std::mutex update_lock_;  // serializes writers; readers use RCU
};

namespace internal {
// For tests: check only that the pages are mapped (mincore), as on kernels
// before 5.14, which lack MADV_POPULATE_READ/WRITE.
extern std::atomic<bool> registration_probe_mincore_only;
}  // namespace internal

// Looks up slot `index` and imports [addr, addr + len) as an ITER_BVEC
// iterator in `direction`. The returned reference keeps the buffer registered
// until dropped; every bad request is an error naming what was wrong
// (InvalidArgument, NotFound, OutOfRange, or PermissionDenied for a direction
// the buffer was not registered for), and leaves *iter untouched.
[[nodiscard]] absl::StatusOr<buffer_ref> import_fixed(const buffer_table& table, unsigned index, uint64_t addr,
                                                      size_t len, unsigned direction, iov_iter* iter);

}  // namespace iov
