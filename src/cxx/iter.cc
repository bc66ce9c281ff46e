// iter.cc: validated imports of user-supplied arrays (the kernel's
// import_iovec()/import_ubuf() rules), reported as absl::Status.
#include <climits>

#include "absl/strings/str_cat.h"
#include "iov/cxx/iter.hpp"

namespace iov {

absl::StatusOr<iter> iter::import_iovec(unsigned direction, absl::Span<const ::iovec> segs) {
  if (direction != ITER_DEST && direction != ITER_SOURCE)
    return absl::InvalidArgumentError(absl::StrCat("import_iovec: direction ", direction,
                                                   " is neither ITER_DEST nor ITER_SOURCE"));
  if (segs.size() > UIO_MAXIOV)
    return absl::InvalidArgumentError(
        absl::StrCat("import_iovec: ", segs.size(), " segments, more than UIO_MAXIOV (", UIO_MAXIOV, ")"));
  if (!segs.empty() && segs.data() == nullptr)
    return absl::InvalidArgumentError("import_iovec: null iovec array with segments");
  size_t total = 0;
  for (size_t k = 0; k < segs.size(); k++) {
    size_t len = segs[k].iov_len;
    if (len > static_cast<size_t>(SSIZE_MAX))
      return absl::InvalidArgumentError(
          absl::StrCat("import_iovec: iovec[", k, "] length ", len, " overflows ssize_t"));
    if (len && segs[k].iov_base == nullptr)
      return absl::InvalidArgumentError(
          absl::StrCat("import_iovec: iovec[", k, "] has a null base with length ", len));
    if (len && reinterpret_cast<uintptr_t>(segs[k].iov_base) + len < reinterpret_cast<uintptr_t>(segs[k].iov_base))
      return absl::InvalidArgumentError(
          absl::StrCat("import_iovec: iovec[", k, "] wraps around the address space"));
    total += std::min(len, MAX_RW_COUNT - total);  // the kernel cuts the total at MAX_RW_COUNT
  }
  iter it;
  iov_iter_init(&it.raw_, direction, segs.data(), segs.size(), total);
  return it;
}

absl::StatusOr<iter> iter::import_ubuf(unsigned direction, void* buf, size_t len) {
  if (direction != ITER_DEST && direction != ITER_SOURCE)
    return absl::InvalidArgumentError(absl::StrCat("import_ubuf: direction ", direction,
                                                   " is neither ITER_DEST nor ITER_SOURCE"));
  if (len && buf == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("import_ubuf: null buffer with length ", len));
  if (len > MAX_RW_COUNT)
    len = MAX_RW_COUNT;
  if (len && reinterpret_cast<uintptr_t>(buf) + len < reinterpret_cast<uintptr_t>(buf))
    return absl::InvalidArgumentError("import_ubuf: buffer wraps around the address space");
  return ubuf(direction, buf, len);
}

}  // namespace iov
