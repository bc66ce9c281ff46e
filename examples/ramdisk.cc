// ramdisk: a consumer of the installed drivers component. A 4 MiB brd and a
// memory-backed null_blk created by name, each written through a bvec
// iterator over two pages, read back through an iovec iterator, and checked
// byte for byte and by the device's own CRC32C against a flat CRC of the same
// bytes; then a discard, after which the range must read as zeros:
//
//   find_package(iov CONFIG REQUIRED COMPONENTS drivers)
//   target_link_libraries(ramdisk PRIVATE iov::drivers)
//   /tmp/ex/ramdisk      # prints "ramdisk: ok"
#include <sys/uio.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <iov/crc32c.hpp>
#include <iov/iov.hpp>
#include <iov_drivers/blkdev.hpp>

namespace {

int fail(const char* dev, const char* what) {
  std::fprintf(stderr, "ramdisk: %s: %s\n", dev, what);
  return 1;
}

int exercise(const char* driver, const iov::blkdev_settings& params) {
  auto dev = iov::blkdev_create(driver, params);
  if (!dev.ok()) return fail(driver, std::string(dev.status().message()).c_str());

  constexpr size_t kLen = 2 * iov::PAGE_SIZE;
  iov::page* pages = iov::alloc_pages(iov::GFP_KERNEL, 1);
  if (!pages) return fail(driver, "alloc_pages");
  auto* src = static_cast<unsigned char*>(iov::page_address(pages));
  for (size_t k = 0; k < kLen; ++k) src[k] = static_cast<unsigned char>(k * 31 + 7);

  iov::bio_vec bv[2];
  iov::bvec_set_page(&bv[0], pages, iov::PAGE_SIZE, 0);
  iov::bvec_set_page(&bv[1], pages + 1, iov::PAGE_SIZE, 0);
  iov::iov_iter in;
  iov::iov_iter_bvec(&in, iov::ITER_SOURCE, bv, 2, kLen);
  iov::blk_request wr{.op = iov::REQ_OP_WRITE, .sector = 64, .iter = &in};
  if ((*dev)->submit(wr) != 0) return fail(driver, wr.error ? wr.error : "write");

  std::vector<unsigned char> back(kLen);
  ::iovec iov[2] = {{back.data(), 100}, {back.data() + 100, kLen - 100}};
  iov::iov_iter out;
  iov::iov_iter_init(&out, iov::ITER_DEST, iov, 2, kLen);
  iov::blk_request rd{.op = iov::REQ_OP_READ, .sector = 64, .iter = &out};
  if ((*dev)->submit(rd) != 0) return fail(driver, rd.error ? rd.error : "read");
  if (std::memcmp(back.data(), src, kLen) != 0) return fail(driver, "read back differs");

  uint32_t crc = ~0u;
  if ((*dev)->crc32c(64, kLen >> iov::SECTOR_SHIFT, &crc) != 0) return fail(driver, "crc32c");
  if (crc != iov::crc32c(~0u, src, kLen)) return fail(driver, "device CRC differs from the flat CRC");

  iov::blk_request dis{.op = iov::REQ_OP_DISCARD, .sector = 64, .nr_sectors = kLen >> iov::SECTOR_SHIFT};
  if ((*dev)->submit(dis) != 0) return fail(driver, dis.error ? dis.error : "discard");
  iov::iov_iter_init(&out, iov::ITER_DEST, iov, 2, kLen);
  iov::blk_request rd2{.op = iov::REQ_OP_READ, .sector = 64, .iter = &out};
  if ((*dev)->submit(rd2) != 0) return fail(driver, "read after discard");
  for (unsigned char c : back)
    if (c != 0) return fail(driver, "discarded range does not read as zeros");

  iov::free_pages(pages, 1);
  return 0;
}

}  // namespace

int main() {
  if (exercise("brd", {{"size", "4m"}}) != 0) return 1;
  if (exercise("null_blk", {{"size", "4m"}, {"memory_backed", "1"}, {"discard", "1"}}) != 0) return 1;
  std::puts("ramdisk: ok");
  return 0;
}
