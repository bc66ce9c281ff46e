// Tests of null_blk without zones (src/drivers/iov_drivers/null_blk.hpp):
// random request sequences against a flat model (tests/support/disk_model.hpp)
// for block sizes 512 and 4096, with and without the write-back cache, for
// each request iterator type and copy form; the cache's FUA, PREFLUSH, flush
// and per-block flush rules; discard per block; the device that stores
// nothing; rejected requests that must change nothing; and the settings.
//
//   ctest -R null_blk_test       IOV_TEST_SEED=7 build/.../null_blk_test
#include "iov_drivers/null_blk.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "iov/iov.hpp"
#include "iov_drivers/parse_size.hpp"
#include "support/blkdev_fixture.hpp"
#include "support/disk_model.hpp"
#include "support/model.hpp"

namespace {

using iov_test::blk_extents;
using iov_test::blk_no_data;
using iov_test::blk_read;
using iov_test::blk_read_all;
using iov_test::blk_write;
using iov_test::Kind;
using iov_test::make_nullb;
using iov_test::ModelExtent;
using iov_test::NullBlkModel;
using ::testing::HasSubstr;
using ::testing::NotNull;

constexpr size_t kPage = 4096;
using iov_test::kMiB;

NullBlkModel model_of(const iov::null_blk_config& c) {
  return NullBlkModel({.size = c.size, .blocksize = c.blocksize});
}

// --- Random sequences against the model ---------------------------------------

class NullBlkRandom : public ::testing::TestWithParam<iov_test::NullBlkRandomParam> {};

TEST_P(NullBlkRandom, MatchesModel) {
  const auto [bs, cache, kind] = GetParam();
  const iov::null_blk_config c{.size = 3 * kMiB, .blocksize = bs, .memory_backed = true,
                               .cache_size = cache ? 1ul : 0ul, .discard = true};
  for (uint64_t seed : iov_test::test_seeds({1})) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed * 17 + bs + cache * 3 + static_cast<int>(kind));
    auto dev = make_nullb(c);
    NullBlkModel model = model_of(c);
    const uint64_t step = bs / 512, blocks = dev->get_capacity() / step;
    for (int i = 0; i < 80; i++) {
      SCOPED_TRACE(i);
      iov_test::set_copy_form(*dev, i);
      const uint64_t block = i == 0 ? 0 : rng() % blocks;
      // The first request is a write larger than the cache, so that it must flush.
      const uint64_t nr_blocks =
          i == 0 ? blocks * 2 / 3
                 : std::min<uint64_t>(rng() % 4 == 0 ? 1 + rng() % (128 * 1024 / bs) : 1 + rng() % 9, blocks - block);
      const uint64_t sector = block * step, nr = nr_blocks * step;
      const size_t len = nr * 512;
      switch (i == 0 ? 0 : rng() % 10) {
        case 0: case 1: case 2: case 3: case 4: {
          std::vector<unsigned char> data = iov_test::random_blocks(len, rng);
          const iov::blk_opf_t flags = (rng() % 4 == 0 ? iov::REQ_FUA : 0) | (rng() % 8 == 0 ? iov::REQ_PREFLUSH : 0);
          ASSERT_EQ(blk_write(*dev, kind, sector, data, rng, flags), 0);
          uint64_t where;
          model.write(sector, data.data(), len, false, &where);
          break;
        }
        case 5: case 6: case 7: {
          std::vector<unsigned char> got;
          ASSERT_EQ(blk_read(*dev, kind, sector, len, &got, rng), 0);
          ASSERT_EQ(got, model.read(sector * 512, len));
          break;
        }
        case 8:
          ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_DISCARD, sector, nr), 0);
          model.discard(sector, nr);
          break;
        default: {
          ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_FLUSH), 0);
          EXPECT_EQ(dev->cache_bytes(), 0u);
          uint32_t crc = static_cast<uint32_t>(rng()), want = model.crc32c(crc, sector * 512, len);
          ASSERT_EQ(dev->crc32c(sector, nr, &crc), 0);
          EXPECT_EQ(crc, want);
        }
      }
      EXPECT_LE(dev->cache_bytes(), c.cache_size * kMiB);
      if (!cache) {
        ASSERT_EQ(dev->nr_pages(), model.stored_pages());
      }
      if (i % 20 == 19) {
        ASSERT_EQ(blk_read_all(*dev), model.read(0, c.size));
        ASSERT_EQ(blk_extents(*dev, 0, dev->get_capacity()), model.extents(0, dev->get_capacity()));
        ASSERT_EQ(blk_extents(*dev, 0, dev->get_capacity(), iov::BLK_MAP_ALLOCATION),
                  model.extents(0, dev->get_capacity(), true));
      }
    }
    ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_FLUSH), 0);
    EXPECT_EQ(dev->cache_bytes(), 0u);
    EXPECT_EQ(dev->nr_pages(), model.stored_pages());  // the cache flushed, only data pages stay
    EXPECT_EQ(blk_read_all(*dev), model.read(0, c.size));
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, NullBlkRandom, iov_test::null_blk_random_params(),
                         iov_test::null_blk_random_name);

// --- The write-back cache ---------------------------------------------------

TEST(NullBlkCache, WritesLandInTheCacheAndFlushMovesThem) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1});
  std::mt19937_64 rng(1);
  std::vector<unsigned char> data = iov_test::random_blocks(2 * kPage, rng);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 8, data, rng), 0);
  EXPECT_EQ(dev->cache_bytes(), 2 * kPage);
  EXPECT_EQ(dev->nr_pages(), 2u);
  ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_FLUSH), 0);
  EXPECT_EQ(dev->cache_bytes(), 0u);
  EXPECT_EQ(dev->nr_pages(), 2u);  // now in the data tree
  std::vector<unsigned char> got;
  ASSERT_EQ(blk_read(*dev, Kind::iovec, 8, data.size(), &got, rng), 0);
  EXPECT_EQ(got, data);
  EXPECT_TRUE(dev->limits().features & iov::BLK_FEAT_WRITE_CACHE);
  EXPECT_TRUE(dev->limits().features & iov::BLK_FEAT_FUA);
}

TEST(NullBlkCache, FuaBypassesTheCache) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1});
  std::mt19937_64 rng(2);
  ASSERT_EQ(blk_write(*dev, Kind::kvec, 0, std::vector<unsigned char>(kPage, 7), rng, iov::REQ_FUA), 0);
  EXPECT_EQ(dev->cache_bytes(), 0u);
  EXPECT_EQ(dev->nr_pages(), 1u);
}

TEST(NullBlkCache, FuaWithoutDeviceFuaIsAWriteAndAFlush) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1, .fua = false});
  EXPECT_FALSE(dev->limits().features & iov::BLK_FEAT_FUA);
  std::mt19937_64 rng(3);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, std::vector<unsigned char>(3 * kPage, 7), rng), 0);
  ASSERT_EQ(dev->cache_bytes(), 3 * kPage);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 64, std::vector<unsigned char>(kPage, 8), rng, iov::REQ_FUA), 0);
  EXPECT_EQ(dev->cache_bytes(), 0u);  // the write went to the cache, then all of it was flushed
  EXPECT_EQ(dev->nr_pages(), 4u);
}

TEST(NullBlkCache, PreflushEmptiesTheCacheBeforeTheWrite) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1});
  std::mt19937_64 rng(4);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, std::vector<unsigned char>(3 * kPage, 7), rng), 0);
  ASSERT_EQ(blk_write(*dev, Kind::bvec, 64, std::vector<unsigned char>(kPage, 8), rng, iov::REQ_PREFLUSH), 0);
  EXPECT_EQ(dev->cache_bytes(), kPage);  // only the new write is cached
}

TEST(NullBlkCache, TheCacheStaysWithinItsSize) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1});
  std::mt19937_64 rng(5);
  std::vector<unsigned char> data = iov_test::random_blocks(3 * kMiB, rng);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, data, rng), 0);
  EXPECT_LT(dev->cache_bytes(), kMiB);
  std::vector<unsigned char> got;
  ASSERT_EQ(blk_read(*dev, Kind::ubuf, 0, data.size(), &got, rng), 0);
  EXPECT_EQ(got, data);
}

// null_flush_cache_page copies only the blocks set in the cache page: a block
// written with FUA into the data page after the cache page was made must not
// be overwritten by the cache page's stale copy of it.
TEST(NullBlkCache, FlushCopiesOnlyTheBlocksSetInTheCachePage) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1});
  std::mt19937_64 rng(6);
  std::vector<unsigned char> a(512, 0xaa), b(512, 0xbb), c(512, 0xcc);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, a, rng), 0);                 // cache page, block 0
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 1, b, rng), 0);                 // cache page, block 1
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, c, rng, iov::REQ_FUA), 0);   // data page, block 0; cache's block 0 cleared
  EXPECT_EQ(dev->nr_pages(), 2u);
  ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_FLUSH), 0);
  EXPECT_EQ(dev->nr_pages(), 1u);
  std::vector<unsigned char> got;
  ASSERT_EQ(blk_read(*dev, Kind::ubuf, 0, 1024, &got, rng), 0);
  std::vector<unsigned char> want = c;
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_EQ(got, want);
}

TEST(NullBlkCache, DiscardClearsBlocksInBothTrees) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1, .discard = true});
  std::mt19937_64 rng(7);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, std::vector<unsigned char>(kPage, 1), rng, iov::REQ_FUA), 0);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 8, std::vector<unsigned char>(kPage, 2), rng), 0);
  ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_DISCARD, 0, 16), 0);
  EXPECT_EQ(dev->nr_pages(), 0u);
  EXPECT_EQ(dev->cache_bytes(), 0u);
  EXPECT_EQ(blk_read_all(*dev), std::vector<unsigned char>(4 * kMiB, 0));
}

// --- Blocks -------------------------------------------------------------------

TEST(NullBlk, DiscardWorksPerBlockAndFreesEmptyPages) {
  auto dev = make_nullb({.size = kMiB, .blocksize = 1024, .memory_backed = true, .discard = true});
  std::mt19937_64 rng(8);
  std::vector<unsigned char> data(kPage, 0x11);
  ASSERT_EQ(blk_write(*dev, Kind::iovec, 0, data, rng), 0);
  ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_DISCARD, 2, 4), 0);  // blocks 1 and 2 of 4
  EXPECT_EQ(dev->nr_pages(), 1u);
  EXPECT_EQ(blk_extents(*dev, 0, 8),
            (std::vector<ModelExtent>{{0, 2, 0}, {2, 4, iov_test::kHole | iov_test::kZero}, {6, 2, 0}}));
  ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_DISCARD, 0, 8), 0);
  EXPECT_EQ(dev->nr_pages(), 0u);
}

TEST(NullBlk, NotMemoryBackedCompletesWithoutData) {
  auto dev = make_nullb({.size = 4 * kMiB, .cache_size = 1, .discard = true});
  EXPECT_EQ(dev->config().cache_size, 0u);  // meaningless without memory
  EXPECT_FALSE(dev->config().discard);
  std::vector<unsigned char> buf(8192, 0x3c);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, buf.data(), buf.size());
  iov::blk_request rq{.op = iov::REQ_OP_READ, .sector = 16, .iter = &it};
  ASSERT_EQ(dev->submit(rq), 0);
  EXPECT_EQ(iov::iov_iter_count(&it), 0u);
  EXPECT_EQ(buf, std::vector<unsigned char>(8192, 0x3c));  // untouched
  iov::iov_iter_ubuf(&it, iov::ITER_SOURCE, buf.data(), buf.size());
  iov::blk_request wr{.op = iov::REQ_OP_WRITE, .sector = 16, .iter = &it};
  ASSERT_EQ(dev->submit(wr), 0);
  EXPECT_EQ(dev->nr_pages(), 0u);
  uint32_t crc = 0;
  EXPECT_EQ(dev->crc32c(0, 8, &crc), -EOPNOTSUPP);
  std::vector<iov::blk_extent> map;
  EXPECT_EQ(dev->map_extents(0, 8, &map), -EOPNOTSUPP);
  EXPECT_EQ(blk_no_data(*dev, iov::REQ_OP_DISCARD, 0, 8), -EOPNOTSUPP);
  EXPECT_EQ(blk_no_data(*dev, iov::REQ_OP_FLUSH), 0);
}

// WRITE_ZEROES (not in the kernel's null_blk): without REQ_NOUNMAP the
// blocks are unstored, as by a discard, and a page left empty is freed; with
// it zeros are stored, over a hole too. The range reads as zeros either way,
// with or without the cache, and nothing else changes.
TEST(NullBlk, WriteZeroesUnstoresUnlessNoUnmap) {
  for (unsigned long cache : {0ul, 1ul}) {
    SCOPED_TRACE(cache ? "with a cache" : "without a cache");
    auto dev = make_nullb({.size = kMiB, .blocksize = 1024, .memory_backed = true, .cache_size = cache});
    EXPECT_GT(dev->limits().max_write_zeroes_sectors, 0u);
    std::mt19937_64 rng(12);
    std::vector<unsigned char> want = iov_test::random_blocks(4 * kPage, rng);  // pages 0..3
    ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, want, rng), 0);
    ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_WRITE_ZEROES, 2, 4), 0);   // blocks 1, 2 of page 0
    ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_WRITE_ZEROES, 8, 8), 0);   // page 1 whole: freed
    ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_WRITE_ZEROES, 16, 8, iov::REQ_NOUNMAP), 0);  // page 2
    ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_WRITE_ZEROES, 40, 8, iov::REQ_NOUNMAP), 0);  // a hole: page 5
    std::fill(want.begin() + 2 * 512, want.begin() + 6 * 512, 0);
    std::fill(want.begin() + 8 * 512, want.begin() + 24 * 512, 0);
    std::vector<unsigned char> got = blk_read_all(*dev);
    want.resize(got.size(), 0);
    EXPECT_EQ(got, want);
    const unsigned hole = iov_test::kHole | iov_test::kZero, zero = iov_test::kZero;
    EXPECT_EQ(blk_extents(*dev, 0, 56), (std::vector<ModelExtent>{{0, 2, 0},
                                                                  {2, 4, hole},
                                                                  {6, 2, 0},
                                                                  {8, 8, hole},
                                                                  {16, 8, zero},
                                                                  {24, 8, 0},
                                                                  {32, 8, hole},
                                                                  {40, 8, zero},
                                                                  {48, 8, hole}}));
    EXPECT_EQ(dev->nr_pages(), 4u);  // pages 0, 2, 3 and 5
  }
  auto bare = make_nullb({.size = kMiB});  // not memory backed: nothing to store or unstore
  EXPECT_EQ(blk_no_data(*bare, iov::REQ_OP_WRITE_ZEROES, 0, 8, iov::REQ_NOUNMAP), 0);
  EXPECT_EQ(blk_no_data(*bare, iov::REQ_OP_WRITE_ZEROES, 0, 8), 0);
  EXPECT_EQ(bare->nr_pages(), 0u);
}

// Without memory backing a READ moves no data, and lend_pages lends zeros:
// what a server sends instead of its own buffer's old contents.
TEST(NullBlk, NotMemoryBackedLendsZeros) {
  auto dev = make_nullb({.size = kMiB});
  iov::blk_lease lease;
  ASSERT_EQ(dev->lend_pages(8, 24, &lease), 0);
  size_t total = 0;
  for (const iov::bio_vec& bv : lease.pieces()) {
    const char* p = iov::bvec_virt(&bv);
    EXPECT_EQ(std::count(p, p + bv.bv_len, 0), static_cast<long>(bv.bv_len));
    total += bv.bv_len;
  }
  EXPECT_EQ(total, 24u * 512);
  lease.release();
  auto backed = make_nullb({.size = kMiB, .memory_backed = true});
  const char* why = nullptr;
  EXPECT_EQ(backed->lend_pages(0, 8, &lease, &why), -EOPNOTSUPP);
  EXPECT_NE(why, nullptr);
  EXPECT_TRUE(lease.pieces().empty());
}

TEST(NullBlk, BlocksizeTwoKilobytes) {
  auto dev = make_nullb({.size = kMiB, .blocksize = 2048, .memory_backed = true, .discard = true});
  NullBlkModel model({.size = kMiB, .blocksize = 2048});
  std::mt19937_64 rng(9);
  for (int i = 0; i < 40; i++) {
    uint64_t sector = rng() % 500 * 4, nr = 4 * (1 + rng() % 6);
    std::vector<unsigned char> data = iov_test::random_blocks(nr * 512, rng);
    uint64_t where;
    ASSERT_EQ(blk_write(*dev, Kind::kvec, sector, data, rng), 0);
    model.write(sector, data.data(), data.size(), false, &where);
    if (i % 3 == 0) {
      ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_DISCARD, sector + 4, 4), 0);
      model.discard(sector + 4, 4);
    }
  }
  EXPECT_EQ(blk_read_all(*dev), model.read(0, kMiB));
  EXPECT_EQ(blk_extents(*dev, 0, 2048), model.extents(0, 2048));
  EXPECT_EQ(dev->nr_pages(), model.stored_pages());
}

// --- Rejected requests change nothing ---------------------------------------

TEST(NullBlk, BadRequestsChangeNothing) {
  auto dev = make_nullb({.size = 64 * kPage, .blocksize = 4096, .memory_backed = true, .max_pages = 6});
  std::mt19937_64 rng(10);
  std::vector<unsigned char> data = iov_test::random_blocks(5 * kPage, rng);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, data, rng), 0);
  const uint64_t cap = dev->get_capacity();
  std::vector<unsigned char> buf(3 * kPage, 0xcd);
  const std::vector<iov_test::BadRequest> cases = {
      {"sector inside a block", iov::REQ_OP_WRITE, 1, 0, kPage, iov::ITER_SOURCE, -EINVAL},
      {"length of part of a block", iov::REQ_OP_WRITE, 8, 0, 512, iov::ITER_SOURCE, -EINVAL},
      {"read of part of a block", iov::REQ_OP_READ, 8, 0, 1024, iov::ITER_DEST, -EINVAL},
      {"read past the end", iov::REQ_OP_READ, cap - 8, 0, 2 * kPage, iov::ITER_DEST, -EIO},
      {"write from ITER_DEST", iov::REQ_OP_WRITE, 0, 0, kPage, iov::ITER_DEST, -EINVAL},
      {"write past max_pages", iov::REQ_OP_WRITE, 32, 0, 3 * kPage, iov::ITER_SOURCE, -ENOSPC},
      {"discard when discard=0", iov::REQ_OP_DISCARD, 0, 8, 0, 0, -EOPNOTSUPP},
      {"write zeroes past the end", iov::REQ_OP_WRITE_ZEROES, cap - 8, 16, 0, 0, -EIO},
      {"write zeroes inside a block", iov::REQ_OP_WRITE_ZEROES, 4, 8, 0, 0, -EINVAL},
      {"stored zeros past max_pages", iov::REQ_OP_WRITE_ZEROES, 32, 24, 0, 0, -ENOSPC, iov::REQ_NOUNMAP},
      {"zone append", iov::REQ_OP_ZONE_APPEND, 0, 0, kPage, iov::ITER_SOURCE, -EOPNOTSUPP},
      {"zone finish", iov::REQ_OP_ZONE_FINISH, 0, 0, 0, 0, -EOPNOTSUPP},
  };
  ASSERT_NO_FATAL_FAILURE(iov_test::expect_refused_unchanged(*dev, cases, buf));
  EXPECT_EQ(buf, std::vector<unsigned char>(3 * kPage, 0xcd));
  // One more page fits the budget.
  EXPECT_EQ(blk_write(*dev, Kind::ubuf, 32, std::vector<unsigned char>(2 * kPage, 1), rng), 0);
  EXPECT_EQ(dev->nr_pages(), 6u);
  uint32_t crc = 0;
  EXPECT_EQ(dev->crc32c(1, 8, &crc), -EINVAL);
  EXPECT_EQ(dev->crc32c(0, 9, &crc), -EINVAL);
}

// --- Settings -----------------------------------------------------------------

TEST(NullBlk, ConfigurationIsValidated) {
  EXPECT_FALSE(iov::nullb_device::create({.blocksize = 3000}).ok());
  EXPECT_FALSE(iov::nullb_device::create({.blocksize = 8192}).ok());
  EXPECT_FALSE(iov::nullb_device::create({.blocksize = 256}).ok());
  EXPECT_FALSE(iov::nullb_device::create({.size = 1000}).ok());
  EXPECT_FALSE(iov::nullb_device::create({.size = 4 * kMiB, .zoned = true, .zone_size = 3}).ok());
  EXPECT_FALSE(iov::nullb_device::create({.size = 4 * kMiB, .zoned = true, .zone_size = 8}).ok());
  EXPECT_FALSE(iov::nullb_device::create({.size = 4 * kMiB, .zoned = true, .zone_size = 1, .zone_capacity = 2}).ok());
  auto ok = iov::nullb_device::create({.size = 4 * kMiB, .blocksize = 1024});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->limits().logical_block_size, 1024u);
  EXPECT_STREQ((*ok)->name(), "null_blk");
}

TEST(NullBlk, CreateFromSettings) {
  auto dev = iov::blkdev_create("null_blk", {{"size", "8m"}, {"blocksize", "4k"}, {"cache_size", "2"}});
  ASSERT_TRUE(dev.ok()) << dev.status();
  auto* nb = dynamic_cast<iov::nullb_device*>(dev->get());
  ASSERT_THAT(nb, NotNull());
  EXPECT_TRUE(nb->config().memory_backed);  // the programs' default
  EXPECT_TRUE(nb->config().discard);
  EXPECT_EQ(nb->config().cache_size, 2u);
  EXPECT_EQ(nb->limits().logical_block_size, 4096u);

  auto zoned = iov::blkdev_create("null_blk", {{"size", "8m"}, {"zoned", "1"}, {"zone_size", "1m"},
                                               {"zone_nr_conv", "2"}, {"memory_backed", "0"}});
  ASSERT_TRUE(zoned.ok()) << zoned.status();
  std::vector<iov::blk_zone> zones;
  EXPECT_EQ((*zoned)->report_zones(0, 100, &zones), 8);
  EXPECT_THAT(std::string(iov::blkdev_create("null_blk", {{"detect_zeroes", "on"}}).status().message()),
              HasSubstr("detect_zeroes does not apply to null_blk"));
  EXPECT_FALSE(iov::blkdev_create("null_blk", {{"zone_size", "1500k"}}).ok());
  EXPECT_FALSE(iov::blkdev_create("null_blk", {{"fua", "perhaps"}}).ok());
}

// One size syntax (iov::parse_size) for the settings and for the programs'
// own options (--size, --bs), so that every size on a command line reads alike.
TEST(NullBlk, SizeSettingsTakeTheProgramsSyntax) {
  for (auto [text, bytes] : std::vector<std::pair<std::string, uint64_t>>{
           {"4194304", 4 * kMiB}, {"4096k", 4 * kMiB}, {"4m", 4 * kMiB}, {"4M", 4 * kMiB},
           {"4mb", 4 * kMiB},     {"4MiB", 4 * kMiB},  {"4194304b", 4 * kMiB}}) {
    SCOPED_TRACE(text);
    absl::StatusOr<uint64_t> parsed = iov::parse_size(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, bytes);
    auto dev = iov::blkdev_create("null_blk", {{"size", text}});
    ASSERT_TRUE(dev.ok()) << dev.status();
    EXPECT_EQ((*dev)->get_capacity(), bytes / 512);
  }
  for (std::string text : {"", "m", "4x", "4mm", "4 m", "-4m", "+4m", "4.5m", "4ib", "18446744073709551616",
                           "16777216t"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(iov::parse_size(text).ok());
    EXPECT_THAT(std::string(iov::blkdev_create("null_blk", {{"size", text}}).status().message()),
                HasSubstr("size=" + text + ": expected a size"));
  }
  // A MiB setting is a plain number of MiB, or a size in bytes.
  auto dev = iov::blkdev_create("null_blk", {{"size", "8m"}, {"blocksize", "4kb"}, {"cache_size", "2MiB"}});
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_EQ((*dev)->limits().logical_block_size, 4096u);
  EXPECT_EQ(dynamic_cast<iov::nullb_device&>(**dev).config().cache_size, 2u);
}

}  // namespace
