// programming_error: one program built twice, against iov::iov (pkg-config
// iov) and against iov::iov_checked (pkg-config iov-checked). It reverts a
// user buffer's iterator past its start, which the kernel calls a BUG():
//
//   programming_error           # release: the revert changes nothing, prints
//                               # "example: ok (checks off: ...)", exits 0
//   programming_error_checked   # checked: aborts with
//                               # "iov: BUG: iov_iter_revert: past the start of the buffer"
//
// A consumer's debug build links iov::iov_checked to have such mistakes
// stop the program where they happen, with no rebuild of iov.
#include <cstdio>

#include <iov/copy.hpp>
#include <iov/position.hpp>

int main() {
  char buf[16] = {};
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, buf, sizeof buf);
  iov::iov_iter_revert(&it, 1);  // nothing was advanced: a programming error
  if (it.count != sizeof buf || iov::iov_iter_zero(sizeof buf, &it) != sizeof buf) {
    std::fprintf(stderr, "example: FAILED: the refused revert changed the iterator\n");
    return 1;
  }
  std::printf("example: ok (checks off: the revert past the start changed nothing)\n");
  return 0;
}
