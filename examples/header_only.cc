// header_only: iov used through iov::headers (pkg-config: iov-headers) alone:
// a user buffer, an iovec array and a bio_vec array over memory of our own,
// copied, zero-filled, reverted and measured by the header-only part, and a
// step of our own walked with iterate_and_advance(). The program links nothing
// of iov (no libiov, no ISA-L, no liburcu): that it links at all is the check.
//
//   cmake -S examples -B /tmp/ex -DCMAKE_PREFIX_PATH=<iov install prefix>
//   cmake --build /tmp/ex && /tmp/ex/header_only   # prints "example: ok"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <iov/copy.hpp>
#include <iov/extract.hpp>
#include <iov/highmem.hpp>
#include <iov/iterate.hpp>
#include <iov/position.hpp>

namespace {
int fail(const char* what) {
  std::fprintf(stderr, "example: FAILED: %s\n", what);
  return 1;
}
}  // namespace

int main() {
  std::vector<char> src(10000), dst(10000, 'x');
  for (size_t k = 0; k < src.size(); k++) src[k] = static_cast<char>(k * 31 + 7);

  // An iovec array: three pieces of dst, one of them empty.
  ::iovec v[] = {{dst.data(), 4000}, {nullptr, 0}, {dst.data() + 4000, 6000}};
  iov::iov_iter it;
  iov::iov_iter_init(&it, iov::ITER_DEST, v, 3, 10000);
  if (iov::copy_to_iter(src.data(), 10000, &it) != 10000 || dst != src) return fail("copy_to_iter over an iovec");
  iov::iov_iter_revert(&it, 6500);
  if (iov::iov_iter_zero(6500, &it) != 6500) return fail("iov_iter_zero");
  for (size_t k = 0; k < dst.size(); k++)
    if (dst[k] != (k < 3500 ? src[k] : 0)) return fail("revert then zero");

  // A bio_vec array over pages of our own memory (virt_to_page names them).
  void* mem = std::aligned_alloc(iov::PAGE_SIZE, 3 * iov::PAGE_SIZE);
  if (!mem) return fail("aligned_alloc");
  iov::bio_vec bv[2];
  iov::bvec_set_virt(&bv[0], static_cast<char*>(mem) + 100, 5000);
  iov::bvec_set_virt(&bv[1], static_cast<char*>(mem) + 2 * iov::PAGE_SIZE, 4096);
  iov::iov_iter_bvec(&it, iov::ITER_SOURCE, bv, 2, 9096);
  if (iov::iov_iter_npages(&it, 100) != 3) return fail("iov_iter_npages");
  iov::memcpy_to_page(bv[0].bv_page, 100, src.data(), 3996);
  size_t sum = 0;
  auto step = [](void*, size_t, size_t len, void* priv, void*) -> size_t {
    *static_cast<size_t*>(priv) += len;
    return 0;
  };
  if (iov::iterate_and_advance(&it, 9096, &sum, step, step) != 9096 || sum != 9096) return fail("iterate");
  ::iovec out[4];
  iov::iov_iter_bvec(&it, iov::ITER_SOURCE, bv, 2, 9096);
  if (iov::iov_iter_to_iovecs(&it, out, 4, SIZE_MAX) != 2 || std::memcmp(out[0].iov_base, src.data(), 3996) != 0)
    return fail("iov_iter_to_iovecs");
  std::free(mem);
  std::puts("example: ok");
  return 0;
}
