// copy_bvec: the smallest complete use of iov. Two pages described by a
// bio_vec array, filled through one iterator with copy_to_iter(), read back
// through a second with copy_from_iter(), then walked once more with the
// out-of-line generic_iterate() and a function-pointer step; every result is
// checked against the pattern itself:
//
//   cmake -S examples -B /tmp/ex -DCMAKE_PREFIX_PATH=<iov install prefix>
//   cmake --build /tmp/ex && /tmp/ex/copy_bvec      # prints "example: ok"
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <iov/iov.hpp>

namespace {

struct fold {
  uint64_t sum = 0;    // a position-weighted sum, so misplaced bytes show
  size_t pieces = 0;
};

// A step as the kernel's: base and length of one contiguous piece, the bytes
// already done in this call; returns the bytes it did NOT process.
size_t fold_step(void* iter_base, size_t progress, size_t len, void* priv, void*) {
  auto* f = static_cast<fold*>(priv);
  const auto* p = static_cast<const unsigned char*>(iter_base);
  for (size_t k = 0; k < len; ++k)
    f->sum += (progress + k + 1) * p[k];
  ++f->pieces;
  return 0;
}

int fail(const char* what) {
  std::fprintf(stderr, "example: FAILED: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  iov::page* pages[2] = {iov::alloc_page(), iov::alloc_page()};
  if (!pages[0] || !pages[1])
    return fail("alloc_page");

  // The tail of the first page and the head of the second: one copy spans both.
  iov::bio_vec bvec[2];
  iov::bvec_set_page(&bvec[0], pages[0], 3000, 1096);
  iov::bvec_set_page(&bvec[1], pages[1], 2500, 0);
  const size_t total = 3000 + 2500;

  std::vector<unsigned char> pattern(total), readback(total, 0);
  for (size_t k = 0; k < total; ++k)
    pattern[k] = static_cast<unsigned char>((k * 7 + 3) % 251);

  iov::iov_iter dst;
  iov::iov_iter_bvec(&dst, iov::ITER_DEST, bvec, 2, total);
  if (iov::copy_to_iter(pattern.data(), total, &dst) != total || iov::iov_iter_count(&dst) != 0)
    return fail("copy_to_iter copied short");
  // Check the pages themselves, not only through the library.
  if (std::memcmp(static_cast<char*>(iov::page_address(pages[0])) + 1096, pattern.data(), 3000) != 0 ||
      std::memcmp(iov::page_address(pages[1]), pattern.data() + 3000, 2500) != 0)
    return fail("the pages do not hold the pattern");

  iov::iov_iter src;
  iov::iov_iter_bvec(&src, iov::ITER_SOURCE, bvec, 2, total);
  if (iov::copy_from_iter(readback.data(), total, &src) != total || readback != pattern)
    return fail("copy_from_iter read back something else");

  fold expected, walked;
  fold_step(pattern.data(), 0, total, &expected, nullptr);
  iov::iov_iter walk;
  iov::iov_iter_bvec(&walk, iov::ITER_SOURCE, bvec, 2, total);
  if (iov::generic_iterate(&walk, total, &walked, nullptr, fold_step, fold_step) != total ||
      iov::iov_iter_count(&walk) != 0 || walked.sum != expected.sum || walked.pieces != 2)
    return fail("generic_iterate saw other bytes");

  iov::free_page(pages[0]);
  iov::free_page(pages[1]);
  std::printf("example: ok\n");
  return 0;
}
