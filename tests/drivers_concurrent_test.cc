// Concurrency tests of the block drivers, for ThreadSanitizer and
// AddressSanitizer: many threads submitting to one device at once.
//   - brd, disjoint ranges: every byte checked against per-thread models while
//     the xarray grows and shrinks under all of them;
//   - brd, shared pages: threads own interleaved sectors of the same pages, so
//     they race to allocate each page (xa_cmpxchg) without sharing a byte;
//   - brd, frees under readers: discard, write zeroes and unmapping zero
//     writes free pages (free_page_rcu) that readers and the services are
//     copying; each sector must read as its old contents or as zeros;
//   - brd, batched READs while pages come and go alone in their leaves, so
//     that leaves are retired under a batch that found them;
//   - null_blk with a small write-back cache: overlapping writers, readers,
//     discards and flushes (the flusher drops the lock, so NULLB_PAGE_LOCK and
//     NULLB_PAGE_FREE are exercised); each block must hold what one writer wrote;
//   - null_blk zoned: zone appends from several threads, with zone management
//     and reports alongside.
// Iteration counts are fixed (no timing); each test takes well under a second.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "iov/iov.hpp"
#include "iov_drivers/brd.hpp"
#include "iov_drivers/null_blk.hpp"
#include "support/blkdev_fixture.hpp"
#include "support/disk_model.hpp"

namespace {

using iov_test::blk_no_data;
using iov_test::make_brd;

constexpr size_t kPage = 4096;
using iov_test::kMiB;

int rw(iov::blkdev& dev, iov::req_op op, uint64_t sector, void* buf, size_t len, iov::blk_opf_t flags = 0,
       uint64_t* where = nullptr) {
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, op == iov::REQ_OP_READ ? iov::ITER_DEST : iov::ITER_SOURCE, buf, len);
  iov::blk_request rq{.op = op, .flags = flags, .sector = sector, .iter = &it};
  int err = dev.submit(rq);
  if (where) *where = rq.sector;
  return err;
}

// A vectored read, so that the iterator walk itself runs concurrently too.
int readv(iov::blkdev& dev, uint64_t sector, unsigned char* buf, size_t len) {
  iov::kvec kv[2] = {{buf, len / 2}, {buf + len / 2, len - len / 2}};
  iov::iov_iter it;
  iov::iov_iter_kvec(&it, iov::ITER_DEST, kv, 2, len);
  iov::blk_request rq{.op = iov::REQ_OP_READ, .sector = sector, .iter = &it};
  return dev.submit(rq);
}

template <class F>
void run_threads(int n, F&& f) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; t++) threads.emplace_back(f, t);
  for (std::thread& th : threads) th.join();
}

// A sector that says who wrote it: writer, sequence number and its own
// sector number in a header, and a fill byte derived from them.
struct SectorHeader {
  uint32_t magic, writer;
  uint64_t seq, sector;
};
constexpr uint32_t kMagic = 0x6e756c6c;
unsigned char fill_of(const SectorHeader& h) { return static_cast<unsigned char>(h.writer * 31 + h.seq * 7) | 1; }
void stamp(unsigned char* p, uint32_t writer, uint64_t seq, uint64_t sector) {
  SectorHeader h{kMagic, writer, seq, sector};
  std::memcpy(p, &h, sizeof h);
  std::memset(p + sizeof h, fill_of(h), 512 - sizeof h);
}
// All zero (never written, or discarded), or one writer's whole sector.
bool sector_ok(const unsigned char* p, uint64_t sector) {
  if (iov_test::all_zero(p, 512)) return true;
  SectorHeader h;
  std::memcpy(&h, p, sizeof h);
  if (h.magic != kMagic || h.sector != sector) return false;
  for (size_t k = sizeof h; k < 512; k++)
    if (p[k] != fill_of(h)) return false;
  return true;
}

// --- brd ------------------------------------------------------------------------

TEST(DriversConcurrent, BrdDisjointRangesMatchTheirModels) {
  constexpr int kThreads = 4;
  constexpr uint64_t kSlice = 64 * kPage, kSize = kThreads * kSlice;
  auto dev = make_brd({.size = kSize, .detect_zeroes = iov::detect_zeroes::unmap});
  std::vector<std::unique_ptr<iov_test::BrdModel>> models;
  for (int t = 0; t < kThreads; t++)
    models.push_back(std::make_unique<iov_test::BrdModel>(kSize, iov_test::ZeroDetect::unmap));
  std::atomic<bool> failed{false};
  run_threads(kThreads, [&](int t) {
    std::mt19937_64 rng(t + 1);
    iov_test::BrdModel& model = *models[t];
    const uint64_t base = t * kSlice / 512, slice_sectors = kSlice / 512;
    std::vector<unsigned char> buf;
    for (int i = 0; i < 150 && !failed; i++) {
      if (t == 0) {  // the settings change under everyone's feet: each request reads them once
        iov_test::set_copy_form(*dev, i);
      }
      const bool whole = rng() % 3 == 0;
      uint64_t off = whole ? rng() % (slice_sectors / 8) * 8 : rng() % slice_sectors;
      uint64_t nr = std::min<uint64_t>(whole ? 8 * (1 + rng() % 3) : 1 + rng() % 24, slice_sectors - off);
      const uint64_t sector = base + off;
      const size_t len = nr * 512;
      switch (rng() % 6) {
        case 0: case 1: {
          std::vector<unsigned char> data = iov_test::random_blocks(len, rng);
          if (rw(*dev, iov::REQ_OP_WRITE, sector, data.data(), len)) failed = true;
          model.write(sector * 512, data.data(), len);
          break;
        }
        case 2: case 3:
          buf.assign(len, 0xee);
          if (readv(*dev, sector, buf.data(), len) ||
              !std::equal(buf.begin(), buf.end(), model.bytes().begin() + sector * 512))
            failed = true;
          break;
        case 4:
          if (rng() % 2) {
            if (blk_no_data(*dev, iov::REQ_OP_DISCARD, sector, nr)) failed = true;
            model.discard(sector * 512, len);
          } else {
            if (blk_no_data(*dev, iov::REQ_OP_WRITE_ZEROES, sector, nr)) failed = true;
            model.write_zeroes(sector * 512, len, true);
          }
          break;
        default: {
          uint32_t crc = 0;
          if (dev->crc32c(sector, nr, &crc) || crc != model.crc32c(0, sector * 512, len)) failed = true;
          std::vector<iov::blk_extent> map;
          if (dev->map_extents(sector, nr, &map)) failed = true;
        }
      }
    }
  });
  ASSERT_FALSE(failed);
  // Each slice against its model, and the pages against their sum.
  std::vector<unsigned char> all(kSize);
  ASSERT_EQ(rw(*dev, iov::REQ_OP_READ, 0, all.data(), kSize), 0);
  size_t pages = 0;
  for (int t = 0; t < kThreads; t++) {
    EXPECT_TRUE(std::equal(all.begin() + t * kSlice, all.begin() + (t + 1) * kSlice,
                           models[t]->bytes().begin() + t * kSlice));
    for (size_t p = t * kSlice / kPage; p < (t + 1) * kSlice / kPage; p++) pages += models[t]->stored(p);
  }
  EXPECT_EQ(dev->nr_pages(), pages);
}

TEST(DriversConcurrent, BrdThreadsRaceToAllocateSharedPages) {
  constexpr int kThreads = 4;
  constexpr uint64_t kSize = 32 * kPage, kSectors = kSize / 512;
  auto dev = make_brd({.size = kSize, .detect_zeroes = iov::detect_zeroes::on});
  std::vector<std::vector<unsigned char>> mine(kThreads, std::vector<unsigned char>(kSize));
  std::vector<std::vector<bool>> allocated(kThreads, std::vector<bool>(kSize / kPage));
  std::atomic<bool> failed{false};
  run_threads(kThreads, [&](int t) {
    std::mt19937_64 rng(t + 11);
    unsigned char sector_buf[512];
    for (int i = 0; i < 300 && !failed; i++) {
      // Thread t owns the sectors s with s % kThreads == t: every page is shared.
      const uint64_t s = rng() % (kSectors / kThreads) * kThreads + t;
      if (rng() % 3) {
        const bool zero = rng() % 4 == 0;
        if (zero) std::memset(sector_buf, 0, 512);
        else stamp(sector_buf, t, i, s);
        if (rw(*dev, iov::REQ_OP_WRITE, s, sector_buf, 512)) failed = true;
        std::memcpy(&mine[t][s * 512], sector_buf, 512);
        if (!zero) allocated[t][s * 512 / kPage] = true;
      } else {
        if (rw(*dev, iov::REQ_OP_READ, s, sector_buf, 512) || std::memcmp(sector_buf, &mine[t][s * 512], 512))
          failed = true;
      }
    }
  });
  ASSERT_FALSE(failed);
  std::vector<unsigned char> all(kSize);
  ASSERT_EQ(rw(*dev, iov::REQ_OP_READ, 0, all.data(), kSize), 0);
  size_t pages = 0;
  for (uint64_t s = 0; s < kSectors; s++)
    ASSERT_EQ(std::memcmp(&all[s * 512], &mine[s % kThreads][s * 512], 512), 0) << s;
  for (size_t p = 0; p < kSize / kPage; p++) {
    bool any = false;
    for (int t = 0; t < kThreads; t++) any = any || allocated[t][p];
    pages += any;
  }
  EXPECT_EQ(dev->nr_pages(), pages);  // one page per index, whoever won each race
}

TEST(DriversConcurrent, BrdPagesFreedUnderReadersStayValid) {
  constexpr uint64_t kSize = 64 * kPage, kSectors = kSize / 512;
  auto dev = make_brd({.size = kSize, .detect_zeroes = iov::detect_zeroes::unmap});
  auto pattern = [](uint64_t s) { return static_cast<unsigned char>(s % 251 + 1); };
  std::vector<unsigned char> prefill(kSize);
  for (uint64_t s = 0; s < kSectors; s++) std::memset(&prefill[s * 512], pattern(s), 512);
  ASSERT_EQ(rw(*dev, iov::REQ_OP_WRITE, 0, prefill.data(), kSize), 0);
  std::atomic<bool> failed{false};
  run_threads(6, [&](int t) {
    std::mt19937_64 rng(t + 21);
    std::vector<unsigned char> buf(16 * kPage), zeros(2 * kPage, 0);
    for (int i = 0; i < 200 && !failed; i++) {
      const uint64_t page = rng() % (kSize / kPage - 2), npages = 1 + rng() % 2;
      switch (t) {
        case 0: case 1: {  // readers: old contents or zeros, a whole sector at a time
          const uint64_t s = rng() % kSectors, nr = std::min<uint64_t>(1 + rng() % 64, kSectors - s);
          if (readv(*dev, s, buf.data(), nr * 512)) failed = true;
          for (uint64_t k = 0; k < nr; k++) {
            const unsigned char* p = &buf[k * 512];
            if (!iov_test::all_zero(p, 512) && std::count(p, p + 512, pattern(s + k)) != 512) failed = true;
          }
          break;
        }
        case 2:  // discard
          if (blk_no_data(*dev, iov::REQ_OP_DISCARD, page * 8, npages * 8)) failed = true;
          break;
        case 3:  // unmapping write zeroes, and zero writes that unmap
          if (i % 2 ? blk_no_data(*dev, iov::REQ_OP_WRITE_ZEROES, page * 8, npages * 8)
                    : rw(*dev, iov::REQ_OP_WRITE, page * 8, zeros.data(), npages * kPage))
            failed = true;
          break;
        case 4: {  // batches: the prefetch pass walks the xarray while pages go
          iov::iov_iter its[16];
          iov::blk_request rqs[16];
          int results[16];
          uint64_t at[16];
          for (int k = 0; k < 16; k++) {
            at[k] = rng() % kSectors;
            iov::iov_iter_ubuf(&its[k], iov::ITER_DEST, &buf[k * kPage], 512);
            rqs[k] = {.op = iov::REQ_OP_READ, .sector = at[k], .iter = &its[k]};
          }
          if (dev->submit_batch(rqs, results)) failed = true;
          for (int k = 0; k < 16; k++) {
            const unsigned char* p = &buf[k * kPage];
            if (!iov_test::all_zero(p, 512) && std::count(p, p + 512, pattern(at[k])) != 512) failed = true;
          }
          break;
        }
        default: {  // the services read pages too
          uint32_t crc = 0;
          std::vector<iov::blk_extent> map;
          if (dev->crc32c(page * 8, npages * 8, &crc) || dev->map_extents(0, kSectors, &map)) failed = true;
        }
      }
    }
  });
  EXPECT_FALSE(failed);
  iov::rcu_barrier();  // every deferred free has run
  std::vector<unsigned char> all(kSize);
  ASSERT_EQ(rw(*dev, iov::REQ_OP_READ, 0, all.data(), kSize), 0);
  size_t stored = 0;
  for (size_t p = 0; p < kSize / kPage; p++) stored += all[p * kPage] != 0;
  EXPECT_EQ(dev->nr_pages(), stored);
}

// Batched READs while whole leaves of the xarray come and go: a writer
// stores a page alone in its leaf (64 pages a leaf) and discards the one it
// stored before, so that pages are freed under the readers and leaves are
// retired, the tree shrinking and growing, while readers hand
// over batches of those pages (brd's submit_reads finds a run's leaves, then
// loads their slots). The page is handed over whole (replace_pages), filled
// before any reader can find it, so that each page must read as zeros or as
// its whole pattern (a WRITE's copy would race the readers' bytes).
TEST(DriversConcurrent, BrdBatchedReadsWhileLeavesComeAndGo) {
  constexpr uint64_t kLeaves = 8, kPages = kLeaves * 64;
  auto dev = make_brd({.size = kPages * kPage});
  auto pattern = [](uint64_t page) { return static_cast<unsigned char>(page % 251 + 1); };
  auto pick = [](std::mt19937_64& rng, uint64_t leaf) { return leaf * 64 + rng() % 2; };
  std::atomic<bool> failed{false};
  std::atomic<int> readers_done{0};
  run_threads(4, [&](int t) {
    std::mt19937_64 rng(t + 31);
    std::vector<unsigned char> buf(16 * kPage);
    if (t < 2) {  // writer t: stores a page, then discards the one before, until the readers are done
      auto discard = [&](uint64_t p) { return blk_no_data(*dev, iov::REQ_OP_DISCARD, p * 8, 8); };
      uint64_t stored = kPages;  // in one of the leaves of t's parity
      for (int i = 0; i < 1000000 && readers_done < 2 && !failed; i++) {
        const uint64_t page = pick(rng, rng() % (kLeaves / 2) * 2 + t);
        iov::page* pg = iov::alloc_page(iov::GFP_KERNEL);
        std::memset(iov::page_address(pg), pattern(page), kPage);
        if (dev->replace_pages(page, &pg, 1) || (stored != kPages && stored != page && discard(stored))) failed = true;
        stored = page;
      }
      if (stored != kPages && discard(stored)) failed = true;
      return;
    }
    for (int i = 0; i < 300 && !failed; i++) {
      iov::iov_iter its[16];
      iov::blk_request rqs[16];
      int results[16];
      uint64_t at[16];
      for (int k = 0; k < 16; k++) {
        at[k] = pick(rng, rng() % kLeaves);
        iov::iov_iter_ubuf(&its[k], iov::ITER_DEST, &buf[k * kPage], kPage);
        rqs[k] = {.op = iov::REQ_OP_READ, .sector = at[k] * 8, .iter = &its[k]};
      }
      if (dev->submit_batch(rqs, results)) failed = true;
      for (int k = 0; k < 16; k++) {
        const unsigned char* p = &buf[k * kPage];
        if (!iov_test::all_zero(p, kPage) && std::count(p, p + kPage, pattern(at[k])) != kPage) failed = true;
      }
    }
    readers_done++;
  });
  EXPECT_FALSE(failed);
  iov::rcu_barrier();
  EXPECT_EQ(dev->nr_pages(), 0u);
}

// --- null_blk -----------------------------------------------------------------------

TEST(DriversConcurrent, NullBlkCacheOverlappingWritersReadersDiscardsFlushes) {
  auto made = iov::nullb_device::create(
      {.size = 2 * kMiB, .memory_backed = true, .cache_size = 1, .discard = true});
  ASSERT_TRUE(made.ok());
  iov::nullb_device& dev = **made;
  constexpr uint64_t kSectors = 2 * kMiB / 512;
  std::atomic<bool> failed{false};
  run_threads(6, [&](int t) {
    std::mt19937_64 rng(t + 31);
    std::vector<unsigned char> buf(64 * 512);
    for (int i = 0; i < 120 && !failed; i++) {
      const uint64_t s = rng() % kSectors, nr = std::min<uint64_t>(1 + rng() % 64, kSectors - s);
      switch (t) {
        case 0: case 1: case 2: {  // writers over the whole device, FUA now and then
          for (uint64_t k = 0; k < nr; k++) stamp(&buf[k * 512], t, i, s + k);
          if (rw(dev, iov::REQ_OP_WRITE, s, buf.data(), nr * 512, rng() % 5 ? 0 : iov::REQ_FUA)) failed = true;
          break;
        }
        case 3: case 4:  // readers
          if (readv(dev, s, buf.data(), nr * 512)) failed = true;
          for (uint64_t k = 0; k < nr; k++)
            if (!sector_ok(&buf[k * 512], s + k)) failed = true;
          break;
        default:  // discards and flushes
          if (blk_no_data(dev, i % 3 ? iov::REQ_OP_DISCARD : iov::REQ_OP_FLUSH, s, i % 3 ? nr : 0)) failed = true;
      }
    }
  });
  EXPECT_FALSE(failed);
  std::vector<unsigned char> all(2 * kMiB);
  ASSERT_EQ(rw(dev, iov::REQ_OP_READ, 0, all.data(), all.size()), 0);
  for (uint64_t s = 0; s < kSectors; s++) ASSERT_TRUE(sector_ok(&all[s * 512], s)) << s;
  ASSERT_EQ(blk_no_data(dev, iov::REQ_OP_FLUSH), 0);
  EXPECT_EQ(dev.cache_bytes(), 0u);
  std::vector<unsigned char> after(2 * kMiB);
  ASSERT_EQ(rw(dev, iov::REQ_OP_READ, 0, after.data(), after.size()), 0);
  EXPECT_EQ(after, all);  // flushing changes no byte
}

TEST(DriversConcurrent, NullBlkZonedAppendsFromManyThreads) {
  auto made = iov::nullb_device::create({.size = 8 * kMiB, .blocksize = 4096, .memory_backed = true,
                                         .cache_size = 1, .zoned = true, .zone_size = 1, .zone_nr_conv = 1});
  ASSERT_TRUE(made.ok());
  iov::nullb_device& dev = **made;
  constexpr uint64_t Z = 2048;
  constexpr int kAppenders = 3;
  std::atomic<bool> failed{false};
  std::vector<uint64_t> appended(kAppenders);
  run_threads(kAppenders + 2, [&](int t) {
    std::mt19937_64 rng(t + 41);
    std::vector<unsigned char> buf(16 * 512), back(16 * 512);
    for (int i = 0; i < 60 && !failed; i++) {
      if (t < kAppenders) {  // zones 1 and 2, shared by all appenders
        const uint64_t zone = 1 + t % 2, nr = 8 * (1 + rng() % 2);
        uint64_t where = 0;
        for (uint64_t k = 0; k < nr; k++) stamp(&buf[k * 512], t, i, k);  // where it lands is not known yet
        int err = rw(dev, iov::REQ_OP_ZONE_APPEND, zone * Z, buf.data(), nr * 512, 0, &where);
        if (err == -EIO) break;  // the zone is full
        if (err || where < zone * Z || where + nr > (zone + 1) * Z) {
          failed = true;
          break;
        }
        appended[t] += nr;
        if (readv(dev, where, back.data(), nr * 512) || std::memcmp(back.data(), buf.data(), nr * 512))
          failed = true;
      } else if (t == kAppenders) {  // zone management on zones the appenders leave alone
        const uint64_t zone = 3 + rng() % 4;
        iov::req_op ops[] = {iov::REQ_OP_ZONE_OPEN, iov::REQ_OP_ZONE_CLOSE, iov::REQ_OP_ZONE_FINISH,
                             iov::REQ_OP_ZONE_RESET};
        blk_no_data(dev, ops[rng() % 4], zone * Z);  // errors are legitimate here
        std::memset(buf.data(), 0x5c, 8 * 512);
        rw(dev, iov::REQ_OP_WRITE, zone * Z, buf.data(), 8 * 512);
      } else {  // reports and services alongside
        std::vector<iov::blk_zone> zones;
        if (dev.report_zones(0, 16, &zones) != 8) failed = true;
        uint32_t crc = 0;
        std::vector<iov::blk_extent> map;
        if (dev.crc32c(0, 8 * Z, &crc) || dev.map_extents(Z, 2 * Z, &map)) failed = true;
        if (blk_no_data(dev, iov::REQ_OP_FLUSH)) failed = true;
      }
    }
  });
  EXPECT_FALSE(failed);
  std::vector<iov::blk_zone> zones;
  ASSERT_EQ(dev.report_zones(Z, 2, &zones), 2);
  uint64_t total = 0;
  for (uint64_t n : appended) total += n;
  EXPECT_EQ((zones[0].wp - zones[0].start) + (zones[1].wp - zones[1].start), total);
}

}  // namespace
