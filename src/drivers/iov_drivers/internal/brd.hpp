// brd.hpp (internal): the state of a RAM disk, the kernel's struct
// brd_device reduced to what the request path uses (brd/brd.cc).
//
//   page* pg = static_cast<page*>(xa_load(&brd->brd_pages, idx));
#pragma once

#include <atomic>
#include <cstdint>

#include "iov/xarray.hpp"
#include "iov_drivers/brd.hpp"

namespace iov::drivers::internal {

struct brd {
  explicit brd(const brd_config& c) : config(c) {}

  const brd_config config;
  xarray brd_pages;                       // page* by sector >> PAGE_SECTORS_SHIFT
  std::atomic<uint64_t> brd_nr_pages{0};  // pages in brd_pages
  std::atomic<uint64_t> committed{0};     // pages in brd_pages or reserved by writes in flight
};

}  // namespace iov::drivers::internal
