// iter.cc: the validated imports of user-supplied memory, reported as
// absl::Status. The verdict is the kernel layer's import_iovec() /
// import_ubuf() (src/iov_iter.cc), so the rules are the same by construction;
// this file only turns its -errno into a message that names the segment.
#include <sys/uio.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "iov/cxx/iter.hpp"

namespace iov {

namespace {

constexpr unsigned kFastSegs = 8;  // the kernel's UIO_FASTIOV

absl::Status bad_direction(const char* what, iter_dir direction) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": direction ", static_cast<unsigned>(direction), " is neither ITER_DEST nor ITER_SOURCE"));
}

// Why the kernel layer refused segs: the first rule it applies that fails.
absl::Status explain_iovec_refusal(ssize_t err, iter_dir direction, std::span<const ::iovec> segs) {
  if (segs.size() > UIO_MAXIOV)
    return absl::InvalidArgumentError(
        absl::StrCat("import_iovec: ", segs.size(), " segments, more than UIO_MAXIOV (", UIO_MAXIOV, ")"));
  for (size_t k = 0; k < segs.size(); k++)
    if (segs[k].iov_len > static_cast<size_t>(SSIZE_MAX))
      return absl::InvalidArgumentError(
          absl::StrCat("import_iovec: iovec[", k, "] length ", segs[k].iov_len, " overflows ssize_t"));
  if (err == -EFAULT)
    for (size_t k = 0; k < segs.size(); k++) {
      // The kernel layer's access_ok() on this segment alone: two segments,
      // the second empty, take import_iovec()'s own path.
      ::iovec pair[2] = {segs[k], {nullptr, 0}}, fast[2];
      ::iovec* iov = fast;
      iov_iter scratch;
      if (::iov::import_iovec(static_cast<int>(direction), pair, 2, 2, &iov, &scratch) == -EFAULT)
        return absl::InvalidArgumentError(absl::StrCat(
            "import_iovec: iovec[", k, "] at ", absl::Hex(reinterpret_cast<uintptr_t>(segs[k].iov_base)),
            " length ", segs[k].iov_len, " wraps around or reaches above the user address space (access_ok)"));
    }
  return absl::InvalidArgumentError(absl::StrCat("import_iovec: refused with errno ", -err));
}

}  // namespace

absl::StatusOr<iter> iter::import_iovec(iter_dir direction, std::span<const ::iovec> segs) {
  if (direction != iter_dir::dest && direction != iter_dir::source)
    return bad_direction("import_iovec", direction);
  // The kernel layer would read a null array (as the kernel would fault on it).
  if (!segs.empty() && segs.data() == nullptr)
    return absl::InvalidArgumentError("import_iovec: null iovec array with segments");
  ::iovec fast[kFastSegs];
  ::iovec* iov = fast;
  iov_iter raw;
  // More than UIO_MAXIOV is refused whatever the number; keep it in unsigned.
  const unsigned nr_segs = static_cast<unsigned>(std::min<size_t>(segs.size(), size_t{UIO_MAXIOV} + 1));
  ssize_t ret = ::iov::import_iovec(static_cast<int>(direction), segs.data(), nr_segs, kFastSegs, &iov, &raw);
  std::free(iov);  // the kernel layer's copy of the array, when it made one
  if (ret < 0)
    return explain_iovec_refusal(ret, direction, segs);
  iter it;
  if (iter_is_ubuf(&raw)) {
    it.raw_ = raw;  // one segment: ITER_UBUF, which holds no array
    return it;
  }
  // The same bytes over the caller's array rather than the freed copy: the
  // count ends the walk where the copy's shortened lengths would.
  iov_iter_init(&it.raw_, static_cast<unsigned>(direction), segs.data(), segs.size(), static_cast<size_t>(ret));
  return it;
}

absl::StatusOr<iter> iter::import_ubuf(iter_dir direction, void* buf, size_t len) {
  if (direction != iter_dir::dest && direction != iter_dir::source)
    return bad_direction("import_ubuf", direction);
  iter it;
  if (::iov::import_ubuf(static_cast<int>(direction), buf, len, &it.raw_) < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("import_ubuf: buffer at ", absl::Hex(reinterpret_cast<uintptr_t>(buf)), " length ",
                     std::min(len, MAX_RW_COUNT),
                     " wraps around or reaches above the user address space (access_ok)"));
  return it;
}

}  // namespace iov
