// iter.hpp: the C++ layer over iov_iter — a value type with references, spans,
// Status-returning validated imports and typed walks.
//
//   std::vector<uint8_t> buf(4096);                         // any byte-like range
//   iov::iter dst = iov::iter::ubuf(iov::iter_dir::dest, buf);
//   dst.copy_to(payload);                                   // copy_to_iter
//   absl::StatusOr<iov::iter> src = iov::iter::import_iovec(iov::iter_dir::source, user_iovecs);
//   if (!src.ok()) return src.status();                     // "import_iovec: iovec[3] ..." messages
//   uint32_t crc = 0;
//   src->crc32c_and_copy_from(out, crc);                    // crc32c_and_copy_from_iter
//
// Every method is one call into the kernel-compatible layer, named after it;
// get() hands out the iov_iter* for code ported from the kernel. The typed
// forms (iov::bvec_typed_iter, iov::folioq_typed_iter etc.) are for callers that know their type: their
// iterate() runs iterate_bvec() and friends, with no dispatch on the type.
#pragma once

#ifdef IOV_HEADER_ONLY
#error "iov/cxx/iter.hpp needs the compiled library (the imports, Abseil): link iov::iov (pkg-config iov), not iov::headers (iov-headers)"
#include "iov: link iov::iov"
#endif

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <utility>

#include "absl/status/statusor.h"
#include "iov/copy.hpp"
#include "iov/copy_nocache.hpp"
#include "iov/crc32c.hpp"
#include "iov/cxx/bytes.hpp"
#include "iov/cxx/pieces.hpp"
#include "iov/extract.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"
#include "iov/position.hpp"
#include "iov/zero_scan.hpp"

namespace iov {

// The kernel's cap on an imported iovec array; <sys/uio.h> names it too.
static_assert(UIO_MAXIOV == 1024);

// The direction of an iterator, typed: a plain number (iov::iter::ubuf(7, buf))
// does not compile. dest: data goes into the iterator (ITER_DEST, a read's
// buffer); source: data comes out of it (ITER_SOURCE).
enum class iter_dir : unsigned { dest = ITER_DEST, source = ITER_SOURCE };

class iter {
 public:
  iter() { iov_iter_discard(&raw_, ITER_DEST, 0); }
  explicit iter(const iov_iter& raw) : raw_(raw) {}

  template <byte_sink R>
  static iter ubuf(iter_dir direction, R&& buf) {
    std::span<std::byte> b = as_writable_byte_span(buf);
    return ubuf(direction, b.data(), b.size());
  }
  static iter ubuf(iter_dir direction, void* buf, size_t len) {
    iter it;
    iov_iter_ubuf(&it.raw_, static_cast<unsigned>(direction), buf, len);
    return it;
  }
  // The array must outlive the iterator (it points into it, as the kernel's).
  static iter iovec(iter_dir direction, std::span<const ::iovec> segs) {
    iter it;
    iov_iter_init(&it.raw_, static_cast<unsigned>(direction), segs.data(), segs.size(), total(segs));
    return it;
  }
  static iter kvec(iter_dir direction, std::span<const ::iov::kvec> segs) {
    iter it;
    iov_iter_kvec(&it.raw_, static_cast<unsigned>(direction), segs.data(), segs.size(), total(segs));
    return it;
  }
  static iter bvec(iter_dir direction, std::span<const bio_vec> segs) {
    iter it;
    size_t count = 0;
    for (const bio_vec& bv : segs)
      count += bv.bv_len;
    iov_iter_bvec(&it.raw_, static_cast<unsigned>(direction), segs.data(), segs.size(), count);
    return it;
  }
  static iter xarray(iter_dir direction, ::iov::xarray& xa, loff_t start, size_t count) {
    iter it;
    iov_iter_xarray(&it.raw_, static_cast<unsigned>(direction), &xa, start, count);
    return it;
  }
  // The queues (iov_iter_folio_queue(), iov_iter_bvec_queue()): from slot
  // first_slot of the first segment, offset bytes into it, count bytes. The
  // queue must outlive the iterator.
  static iter folioq(iter_dir direction, const ::iov::folio_queue& fq, unsigned first_slot, unsigned offset,
                     size_t count) {
    iter it;
    iov_iter_folio_queue(&it.raw_, static_cast<unsigned>(direction), &fq, first_slot, offset, count);
    return it;
  }
  static iter bvecq(iter_dir direction, const ::iov::bvecq& bq, unsigned first_slot, unsigned offset,
                    size_t count) {
    iter it;
    iov_iter_bvec_queue(&it.raw_, static_cast<unsigned>(direction), &bq, first_slot, offset, count);
    return it;
  }
  static iter discard(size_t count) {
    iter it;
    iov_iter_discard(&it.raw_, ITER_DEST, count);
    return it;
  }

  // Validated imports of user-supplied memory: exactly the kernel layer's
  // import_iovec() and import_ubuf() (the access_ok() range, at most
  // UIO_MAXIOV segments, no length negative as ssize_t, the total cut at
  // MAX_RW_COUNT, one segment an ITER_UBUF), each refusal an InvalidArgument
  // that names the segment. As there, an address in range is not proved
  // mapped: a null or unmapped base faults when the copy touches it. The
  // array is not copied: an ITER_IOVEC points into it, so it must outlive
  // the iterator.
  static absl::StatusOr<iter> import_iovec(iter_dir direction, std::span<const ::iovec> segs);
  static absl::StatusOr<iter> import_ubuf(iter_dir direction, void* buf, size_t len);

  iov_iter* get() { return &raw_; }
  const iov_iter* get() const { return &raw_; }
  const iov_iter& raw() const { return raw_; }

  size_t count() const { return raw_.count; }
  bool empty() const { return raw_.count == 0; }
  iter_type type() const { return iov_iter_type(&raw_); }
  int rw() const { return iov_iter_rw(&raw_); }
  iter_dir dir() const { return raw_.data_source ? iter_dir::source : iter_dir::dest; }

  void advance(size_t bytes) { iov_iter_advance(&raw_, bytes); }
  void revert(size_t bytes) { iov_iter_revert(&raw_, bytes); }
  void truncate(uint64_t count) { iov_iter_truncate(&raw_, count); }
  void reexpand(size_t count) { iov_iter_reexpand(&raw_, count); }
  iov_iter_state save_state() const {
    iov_iter_state st;
    iov_iter_save_state(&raw_, &st);
    return st;
  }
  void restore(const iov_iter_state& st) { iov_iter_restore(&raw_, &st); }
  int npages(int maxpages) const { return iov_iter_npages(&raw_, maxpages); }
  unsigned long alignment() const { return iov_iter_alignment(&raw_); }

  // Copies: bytes are any byte_source / byte_sink (cxx/bytes.hpp).
  template <byte_source R>
  size_t copy_to(const R& src) {
    return on_bytes<::iov::copy_to_iter>(as_byte_span(src));
  }
  template <byte_sink R>
  size_t copy_from(R&& dst) {
    return on_bytes<::iov::copy_from_iter>(as_writable_byte_span(dst));
  }
  template <byte_source R>
  [[nodiscard]] bool copy_to_full(const R& src) {
    return on_bytes<::iov::copy_to_iter_full>(as_byte_span(src));
  }
  template <byte_sink R>
  [[nodiscard]] bool copy_from_full(R&& dst) {
    return on_bytes<::iov::copy_from_iter_full>(as_writable_byte_span(dst));
  }
  // Non-temporal stores into dst (copy_from_iter_nocache()).
  template <byte_sink R>
  size_t copy_from_nocache(R&& dst) {
    return on_bytes<::iov::copy_from_iter_nocache>(as_writable_byte_span(dst));
  }
  template <byte_sink R>
  [[nodiscard]] bool copy_from_full_nocache(R&& dst) {
    return on_bytes<::iov::copy_from_iter_full_nocache>(as_writable_byte_span(dst));
  }
  size_t zero(size_t bytes) { return iov_iter_zero(bytes, &raw_); }

  // CRC32C, kernel semantics (no inversions): crc is extended over the bytes
  // processed, which are returned. crc32c() reads the iterator's memory
  // whatever its direction (crc32c_iter()); the fused forms copy and extend
  // crc in one pass (crc32c_and_copy_to_iter(), crc32c_and_copy_from_iter()).
  size_t crc32c(size_t bytes, uint32_t& crc) { return crc32c_iter(&raw_, bytes, &crc); }
  template <byte_source R>
  size_t crc32c_and_copy_to(const R& src, uint32_t& crc) {
    return on_bytes<::iov::crc32c_and_copy_to_iter>(as_byte_span(src), &crc);
  }
  template <byte_sink R>
  size_t crc32c_and_copy_from(R&& dst, uint32_t& crc) {
    return on_bytes<::iov::crc32c_and_copy_from_iter>(as_writable_byte_span(dst), &crc);
  }

  // Zero scans: is_zero() does not advance (false if fewer bytes remain);
  // skip_zeroes() advances over the leading zero bytes and returns how many.
  bool is_zero(size_t bytes) const { return iov_iter_is_zero(&raw_, bytes); }
  size_t skip_zeroes(size_t bytes) { return iov_iter_skip_zeroes(&raw_, bytes); }

  // iov_iter_extract_pages() into the caller's array: the pages covering
  // `bytes` bytes from `offset0` into the first, and the iterator advanced by
  // them. A DISCARD iterator has no pages: an error, as the kernel's -EFAULT.
  struct extracted {
    std::span<page*> pages;
    size_t offset0 = 0;
    size_t bytes = 0;
  };
  absl::StatusOr<extracted> extract_pages(std::span<page*> out, size_t maxsize, unsigned extraction_flags = 0) {
    page** array = out.data();
    size_t offset0 = 0;
    const unsigned maxpages = static_cast<unsigned>(std::min<size_t>(out.size(), UINT_MAX));
    ssize_t n = iov_iter_extract_pages(&raw_, &array, maxsize, maxpages, extraction_flags, &offset0);
    if (n < 0)
      return absl::ErrnoToStatus(static_cast<int>(-n), "iov_iter_extract_pages");
    const size_t bytes = static_cast<size_t>(n);
    return extracted{out.first(bytes ? (offset0 + bytes + PAGE_SIZE - 1) / PAGE_SIZE : 0), offset0, bytes};
  }

  // Walks up to len bytes with one callable for every type: step(piece,
  // progress) returns the bytes of piece it did NOT process, as a kernel step.
  template <class Step>
  size_t iterate(size_t len, Step&& step) {
    auto adapter = [&step](void* base, size_t progress, size_t n, void*, void*) -> size_t {
      return step(std::span<std::byte>(static_cast<std::byte*>(base), n), progress);
    };
    return iterate_and_advance2(&raw_, len, nullptr, nullptr, adapter, adapter);
  }

  pieces_view pieces() const { return pieces_view(raw_); }

 protected:
  // The kernel layer's Fn(addr, bytes, args..., iter) over a span of bytes:
  // the shape of every copy and fused CRC above.
  template <auto Fn, class Byte, class... Args>
  auto on_bytes(std::span<Byte> b, Args... args) {
    return Fn(b.data(), b.size(), args..., &raw_);
  }

  template <class Seg>
  static size_t total(std::span<const Seg> segs) {
    size_t sum = 0;
    for (const Seg& s : segs)
      sum += s.iov_len;
    return sum;
  }

  iov_iter raw_;
};

// An iter whose type is known at compile time: iterate() calls the type's walk
// directly (the kernel's iterate_bvec() etc.) and the factories only make that type.
template <iter_type Type>
class typed_iter : public iter {
 public:
  typed_iter() = default;
  template <class... Args>
  static typed_iter make(Args&&... args) {
    typed_iter t;
    static_cast<iter&>(t) = make_base(std::forward<Args>(args)...);
    return t;
  }

  template <class Step>
  size_t iterate(size_t len, Step&& step) {
    auto adapter = [&step](void* base, size_t progress, size_t n, void*, void*) -> size_t {
      return step(std::span<std::byte>(static_cast<std::byte*>(base), n), progress);
    };
    if constexpr (Type == ITER_UBUF)
      return iterate_ubuf(&raw_, len, nullptr, nullptr, adapter);
    else if constexpr (Type == ITER_IOVEC)
      return iterate_iovec(&raw_, len, nullptr, nullptr, adapter);
    else if constexpr (Type == ITER_KVEC)
      return iterate_kvec(&raw_, len, nullptr, nullptr, adapter);
    else if constexpr (Type == ITER_BVEC)
      return iterate_bvec(&raw_, len, nullptr, nullptr, adapter);
    else if constexpr (Type == ITER_BVECQ)
      return iterate_bvecq(&raw_, len, nullptr, nullptr, adapter);
    else if constexpr (Type == ITER_FOLIOQ)
      return iterate_folioq(&raw_, len, nullptr, nullptr, adapter);
    else if constexpr (Type == ITER_XARRAY)
      return iterate_xarray(&raw_, len, nullptr, nullptr, adapter);
    else
      return iterate_discard(&raw_, len, nullptr, nullptr, adapter);
  }

 private:
  template <class... Args>
  static iter make_base(Args&&... args) {
    if constexpr (Type == ITER_UBUF)
      return iter::ubuf(std::forward<Args>(args)...);
    else if constexpr (Type == ITER_IOVEC)
      return iter::iovec(std::forward<Args>(args)...);
    else if constexpr (Type == ITER_KVEC)
      return iter::kvec(std::forward<Args>(args)...);
    else if constexpr (Type == ITER_BVEC)
      return iter::bvec(std::forward<Args>(args)...);
    else if constexpr (Type == ITER_BVECQ)
      return iter::bvecq(std::forward<Args>(args)...);
    else if constexpr (Type == ITER_FOLIOQ)
      return iter::folioq(std::forward<Args>(args)...);
    else if constexpr (Type == ITER_XARRAY)
      return iter::xarray(std::forward<Args>(args)...);
    else
      return iter::discard(std::forward<Args>(args)...);
  }
};

// (Not bvec_iter and the like: the kernel's bvec.h has a struct bvec_iter.)
using ubuf_typed_iter = typed_iter<ITER_UBUF>;
using iovec_typed_iter = typed_iter<ITER_IOVEC>;
using kvec_typed_iter = typed_iter<ITER_KVEC>;
using bvec_typed_iter = typed_iter<ITER_BVEC>;
using bvecq_typed_iter = typed_iter<ITER_BVECQ>;
using folioq_typed_iter = typed_iter<ITER_FOLIOQ>;
using xarray_typed_iter = typed_iter<ITER_XARRAY>;
using discard_typed_iter = typed_iter<ITER_DISCARD>;

}  // namespace iov
