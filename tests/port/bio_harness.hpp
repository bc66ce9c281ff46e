// bio_harness.hpp: drives a RAM disk written in the kernel's C style (a
// submit_bio handler over block_shim.hpp's bio) the way the block layer
// would, for the port tests: a request's data split into random bvecs, the
// range requests (discard, write zeroes) with no data.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "port/block_shim.hpp"
#include "support/model.hpp"

namespace port_test {

using bytes = std::vector<unsigned char>;

inline bytes random_bytes(std::mt19937_64& rng, size_t n) {
  bytes out(n);
  for (auto& c : out) c = static_cast<unsigned char>(rng());
  return out;
}

// Entries of an xarray, counted by xa_for_each.
inline size_t xa_count(iov::xarray* xa) {
  size_t n = 0;
  unsigned long idx;
  struct iov::page* page;
  xa_for_each(xa, idx, page) n++;
  return n;
}

class bio_harness {
 public:
  bio_harness(void* driver, void (*handle)(bio*)) : handle_(handle) { disk_.private_data = driver; }

  // Submits op on [sector, sector + data.size() / 512) with the data split
  // into random bvecs: sector multiples at sector-aligned offsets, as the
  // block layer hands a RAM disk (brd's queue's dma_alignment is 511), some
  // of them over several frames. A READ's data comes back in *data.
  bio submit(blk_opf_t op, iov::sector_t sector, bytes* data, std::mt19937_64& rng) {
    using iov::PAGE_SIZE, iov::SECTOR_SIZE;
    std::vector<iov::bio_vec> bvecs;
    buffer_ = std::make_unique<iov_test::PageRun>(order_for(3 * data->size() + 2 * PAGE_SIZE));  // room for gaps between bvecs
    auto sectors = [&rng](size_t lo, size_t hi) { return SECTOR_SIZE * std::uniform_int_distribution<size_t>(lo, hi)(rng); };
    size_t pos = 0, at = sectors(0, 7);
    while (pos < data->size()) {
      size_t len = std::min(sectors(1, 12), data->size() - pos);
      unsigned char* addr = buffer_->bytes() + at;
      if (op_is_write(op))
        std::memcpy(addr, data->data() + pos, len);
      iov::bio_vec bv;
      iov::bvec_set_virt(&bv, addr, static_cast<unsigned>(len));
      bvecs.push_back(bv);
      pos += len;
      at += len + sectors(0, 1);
    }
    bio b = make(op, sector, static_cast<unsigned>(data->size()));
    b.bi_io_vec = bvecs.data();
    handle_(&b);
    if (!op_is_write(op)) {
      pos = 0;
      for (const auto& bv : bvecs) {
        std::memcpy(data->data() + pos, iov::bvec_virt(&bv), bv.bv_len);
        pos += bv.bv_len;
      }
    }
    return b;
  }

  gendisk* disk() { return &disk_; }

  // A request without data (discard, write zeroes) of nr_bytes at sector.
  bio submit_range(blk_opf_t op, iov::sector_t sector, unsigned nr_bytes) {
    bio b = make(op, sector, nr_bytes);
    handle_(&b);
    return b;
  }

 private:
  bio make(blk_opf_t op, iov::sector_t sector, unsigned size) {
    bio b{};
    b.bi_bdev = &bdev_;
    b.bi_opf = op;
    b.bi_iter = {sector, size, 0, 0};
    return b;
  }

  static unsigned order_for(size_t bytes) {
    unsigned order = 0;
    while ((iov::PAGE_SIZE << order) < bytes) order++;
    return order;
  }

  void (*handle_)(bio*);
  gendisk disk_{};
  block_device bdev_{&disk_};
  std::unique_ptr<iov_test::PageRun> buffer_;  // the bios' memory: bvec_set_virt() names its frames
};

// What the disk should hold: a flat copy of its bytes.
struct flat_disk {
  explicit flat_disk(size_t bytes) : data(bytes, 0) {}
  unsigned char* at(iov::sector_t sector) { return data.data() + sector * iov::SECTOR_SIZE; }
  iov::sector_t capacity() const { return data.size() / iov::SECTOR_SIZE; }
  // A discard promises zeroes only for the whole pages inside its range.
  void discard(iov::sector_t sector, size_t nr) {
    for (iov::sector_t s = (sector + 7) / 8 * 8; s + 8 <= sector + nr; s += 8)
      std::memset(at(s), 0, iov::PAGE_SIZE);
  }
  bytes data;
};

enum class req { write, read, discard, write_zeroes };

// `steps` random requests, of the kinds in `mix` (a kind listed twice comes
// twice as often), up to 80 sectors each, writes with or without
// REQ_NOWAIT, every one checked: it ended without error, a read returned
// the model's bytes, and the bio's own iterator is as submitted
// (bio_for_each_segment() walks a copy). after_each() adds the driver's own
// invariants. Then the whole disk is read back in one bio.
inline void random_requests(bio_harness& h, flat_disk& m, std::mt19937_64& rng, int steps,
                            std::initializer_list<req> mix, const std::function<void()>& after_each = {}) {
  using iov::SECTOR_SIZE;
  const std::vector<req> kinds(mix);
  const iov::sector_t capacity = m.capacity();
  for (int step = 0; step < steps; step++) {
    iov::sector_t sector = std::uniform_int_distribution<iov::sector_t>(0, capacity - 1)(rng);
    size_t nr = std::uniform_int_distribution<size_t>(1, std::min<size_t>(80, capacity - sector))(rng);
    unsigned nr_bytes = static_cast<unsigned>(nr * SECTOR_SIZE);
    bio b;
    switch (kinds[rng() % kinds.size()]) {
      case req::write: {
        bytes data = random_bytes(rng, nr_bytes);
        b = h.submit(REQ_OP_WRITE | ((rng() & 1) ? REQ_NOWAIT : 0), sector, &data, rng);
        std::memcpy(m.at(sector), data.data(), data.size());
        break;
      }
      case req::read: {
        bytes data(nr_bytes, 0xcc);
        b = h.submit(REQ_OP_READ, sector, &data, rng);
        ASSERT_EQ(0, std::memcmp(data.data(), m.at(sector), data.size()))
            << "read of sectors " << sector << "+" << nr << " at step " << step;
        break;
      }
      case req::discard:
        b = h.submit_range(REQ_OP_DISCARD, sector, nr_bytes);
        m.discard(sector, nr);
        break;
      case req::write_zeroes:
        b = h.submit_range(REQ_OP_WRITE_ZEROES, sector, nr_bytes);
        std::memset(m.at(sector), 0, nr_bytes);
        break;
    }
    ASSERT_TRUE(b.bi_ended) << "step " << step;
    ASSERT_EQ(b.bi_status, BLK_STS_OK) << "step " << step;
    EXPECT_EQ(b.bi_iter.bi_size, nr_bytes);
    EXPECT_EQ(b.bi_iter.bi_sector, sector);
    if (after_each) after_each();
    if (::testing::Test::HasFatalFailure()) return;
  }
  bytes all(m.data.size());
  ASSERT_EQ(h.submit(REQ_OP_READ, 0, &all, rng).bi_status, BLK_STS_OK);
  EXPECT_EQ(all, m.data);
}

// A RAM disk of type Disk (members `disk`, `capacity` in sectors, and its
// pages in the xarray `pages`), served by Handle and torn down by Release,
// with the harness that submits its bios and the flat model of its contents.
template <class Disk, void (*Handle)(bio*), void (*Release)(Disk*)>
struct ramdisk_under_test {
  explicit ramdisk_under_test(unsigned long kbytes) : model(kbytes * 1024) {
    rd.disk = harness.disk();
    rd.capacity = kbytes * 2;
  }
  ~ramdisk_under_test() { Release(&rd); }
  ramdisk_under_test(const ramdisk_under_test&) = delete;
  ramdisk_under_test& operator=(const ramdisk_under_test&) = delete;

  bio submit(blk_opf_t op, iov::sector_t sector, bytes* data, std::mt19937_64& rng) {
    return harness.submit(op, sector, data, rng);
  }
  size_t pages_present() { return xa_count(&rd.pages); }

  Disk rd{};
  bio_harness harness{&rd, Handle};
  flat_disk model;
};

// On a 64 KiB disk (128 sectors): a two-sector WRITE that runs one sector
// past the end fails and stores nothing; the last two sectors take one page.
// stored() is the driver's count of its pages.
template <class Disk, class Stored>
void bio_past_the_end_fails(Disk& d, Stored stored) {
  std::mt19937_64 rng(11);
  bytes data = random_bytes(rng, 2 * iov::SECTOR_SIZE);
  bio b = d.submit(REQ_OP_WRITE, 127, &data, rng);
  EXPECT_TRUE(b.bi_ended);
  EXPECT_EQ(b.bi_status, BLK_STS_IOERR);
  EXPECT_EQ(stored(), 0u);
  b = d.submit(REQ_OP_WRITE, 126, &data, rng);
  EXPECT_EQ(b.bi_status, BLK_STS_OK);
  EXPECT_EQ(stored(), 1u);
}

}  // namespace port_test
