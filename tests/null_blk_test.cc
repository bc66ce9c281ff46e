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

#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "iov/iov.hpp"
#include "support/disk_model.hpp"
#include "support/model.hpp"

namespace {

using iov_test::Kind;
using iov_test::Layout;
using iov_test::ModelExtent;
using iov_test::NullBlkModel;
using ::testing::HasSubstr;
using ::testing::NotNull;

constexpr size_t kPage = 4096;
constexpr uint64_t kMiB = 1 << 20;

// The request's buffer, of a given iterator type, cut at random.
std::unique_ptr<Layout> make_layout(Kind kind, size_t len, std::mt19937_64& rng) {
  std::vector<iov_test::SegSpec> segs;
  auto cut = [&](size_t max_offset) {
    for (iov_test::Segment s : iov_test::random_segments(len, rng, max_offset)) segs.push_back({s.len, s.offset});
  };
  switch (kind) {
    case Kind::ubuf: return Layout::make_ubuf(len, rng() % 2 ? 0 : rng() % kPage);
    case Kind::xarray: {
      const size_t start = rng() % 3 * kPage + (rng() % 2 ? 0 : rng() % kPage);
      return Layout::make_xarray(static_cast<loff_t>(start), len);
    }
    case Kind::iovec: cut(kPage - 1); return Layout::make_iovec(segs);
    case Kind::kvec: cut(kPage - 1); return Layout::make_kvec(segs);
    default: cut(3 * kPage); return Layout::make_bvec(segs);
  }
}

int write(iov::blkdev& dev, Kind kind, uint64_t sector, const std::vector<unsigned char>& data, std::mt19937_64& rng,
          iov::blk_opf_t flags = 0) {
  auto l = make_layout(kind, data.size(), rng);
  l->scatter(data);
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  iov::blk_request rq{.op = iov::REQ_OP_WRITE, .flags = flags, .sector = sector, .iter = &it};
  int err = dev.submit(rq);
  if (!err) {
    EXPECT_EQ(iov::iov_iter_count(&it), 0u);
  }
  return err;
}

int read(iov::blkdev& dev, Kind kind, uint64_t sector, size_t len, std::vector<unsigned char>* out,
         std::mt19937_64& rng) {
  auto l = make_layout(kind, len, rng);
  iov::iov_iter it = l->iter(iov::ITER_DEST);
  iov::blk_request rq{.op = iov::REQ_OP_READ, .sector = sector, .iter = &it};
  int err = dev.submit(rq);
  if (!err) {
    EXPECT_EQ(iov::iov_iter_count(&it), 0u);
  }
  EXPECT_TRUE(l->guards_intact());
  *out = l->gather();
  return err;
}

std::vector<unsigned char> read_all(iov::blkdev& dev) {
  std::vector<unsigned char> buf(dev.get_capacity() * 512, 0x5a);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, buf.data(), buf.size());
  iov::blk_request rq{.op = iov::REQ_OP_READ, .sector = 0, .iter = &it};
  EXPECT_EQ(dev.submit(rq), 0);
  return buf;
}

int no_data(iov::blkdev& dev, iov::req_op op, uint64_t sector = 0, uint64_t nr = 0) {
  iov::blk_request rq{.op = op, .sector = sector, .nr_sectors = nr};
  return dev.submit(rq);
}

std::vector<ModelExtent> extents(iov::blkdev& dev, uint64_t sector, uint64_t nr) {
  std::vector<iov::blk_extent> map;
  EXPECT_EQ(dev.map_extents(sector, nr, &map), 0);
  std::vector<ModelExtent> out;
  for (const iov::blk_extent& e : map) out.push_back({e.sector, e.nr_sectors, e.flags});
  return out;
}

std::unique_ptr<iov::nullb_device> make_nullb(const iov::null_blk_config& c) {
  auto dev = iov::nullb_device::create(c);
  EXPECT_TRUE(dev.ok()) << dev.status();
  return std::move(*dev);
}

NullBlkModel model_of(const iov::null_blk_config& c) {
  return NullBlkModel({.size = c.size, .blocksize = c.blocksize});
}

// --- Random sequences against the model ---------------------------------------

using RandomParam = std::tuple<unsigned /*blocksize*/, bool /*cache*/, Kind>;

std::string random_name(const ::testing::TestParamInfo<RandomParam>& info) {
  return "bs" + std::to_string(std::get<0>(info.param)) + (std::get<1>(info.param) ? "_cache_" : "_nocache_") +
         iov_test::kind_name(std::get<2>(info.param));
}

class NullBlkRandom : public ::testing::TestWithParam<RandomParam> {};

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
      dev->set_copy_mode(i & 1 ? iov::copy_mode::legacy : iov::copy_mode::modern);
      dev->set_iteration(i & 2 ? iov::iteration_mode::outofline : iov::iteration_mode::inlined);
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
          ASSERT_EQ(write(*dev, kind, sector, data, rng, flags), 0);
          uint64_t where;
          model.write(sector, data.data(), len, false, &where);
          break;
        }
        case 5: case 6: case 7: {
          std::vector<unsigned char> got;
          ASSERT_EQ(read(*dev, kind, sector, len, &got, rng), 0);
          ASSERT_EQ(got, model.read(sector * 512, len));
          break;
        }
        case 8:
          ASSERT_EQ(no_data(*dev, iov::REQ_OP_DISCARD, sector, nr), 0);
          model.discard(sector, nr);
          break;
        default: {
          ASSERT_EQ(no_data(*dev, iov::REQ_OP_FLUSH), 0);
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
        ASSERT_EQ(read_all(*dev), model.read(0, c.size));
        ASSERT_EQ(extents(*dev, 0, dev->get_capacity()), model.extents(0, dev->get_capacity()));
      }
    }
    ASSERT_EQ(no_data(*dev, iov::REQ_OP_FLUSH), 0);
    EXPECT_EQ(dev->cache_bytes(), 0u);
    EXPECT_EQ(dev->nr_pages(), model.stored_pages());  // the cache flushed, only data pages stay
    EXPECT_EQ(read_all(*dev), model.read(0, c.size));
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, NullBlkRandom,
                         ::testing::Combine(::testing::Values(512u, 4096u), ::testing::Bool(),
                                            ::testing::Values(Kind::ubuf, Kind::iovec, Kind::kvec, Kind::bvec,
                                                              Kind::xarray)),
                         random_name);

// --- The write-back cache ---------------------------------------------------

TEST(NullBlkCache, WritesLandInTheCacheAndFlushMovesThem) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1});
  std::mt19937_64 rng(1);
  std::vector<unsigned char> data = iov_test::random_blocks(2 * kPage, rng);
  ASSERT_EQ(write(*dev, Kind::ubuf, 8, data, rng), 0);
  EXPECT_EQ(dev->cache_bytes(), 2 * kPage);
  EXPECT_EQ(dev->nr_pages(), 2u);
  ASSERT_EQ(no_data(*dev, iov::REQ_OP_FLUSH), 0);
  EXPECT_EQ(dev->cache_bytes(), 0u);
  EXPECT_EQ(dev->nr_pages(), 2u);  // now in the data tree
  std::vector<unsigned char> got;
  ASSERT_EQ(read(*dev, Kind::iovec, 8, data.size(), &got, rng), 0);
  EXPECT_EQ(got, data);
  EXPECT_TRUE(dev->limits().features & iov::BLK_FEAT_WRITE_CACHE);
  EXPECT_TRUE(dev->limits().features & iov::BLK_FEAT_FUA);
}

TEST(NullBlkCache, FuaBypassesTheCache) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1});
  std::mt19937_64 rng(2);
  ASSERT_EQ(write(*dev, Kind::kvec, 0, std::vector<unsigned char>(kPage, 7), rng, iov::REQ_FUA), 0);
  EXPECT_EQ(dev->cache_bytes(), 0u);
  EXPECT_EQ(dev->nr_pages(), 1u);
}

TEST(NullBlkCache, FuaWithoutDeviceFuaIsAWriteAndAFlush) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1, .fua = false});
  EXPECT_FALSE(dev->limits().features & iov::BLK_FEAT_FUA);
  std::mt19937_64 rng(3);
  ASSERT_EQ(write(*dev, Kind::ubuf, 0, std::vector<unsigned char>(3 * kPage, 7), rng), 0);
  ASSERT_EQ(dev->cache_bytes(), 3 * kPage);
  ASSERT_EQ(write(*dev, Kind::ubuf, 64, std::vector<unsigned char>(kPage, 8), rng, iov::REQ_FUA), 0);
  EXPECT_EQ(dev->cache_bytes(), 0u);  // the write went to the cache, then all of it was flushed
  EXPECT_EQ(dev->nr_pages(), 4u);
}

TEST(NullBlkCache, PreflushEmptiesTheCacheBeforeTheWrite) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1});
  std::mt19937_64 rng(4);
  ASSERT_EQ(write(*dev, Kind::ubuf, 0, std::vector<unsigned char>(3 * kPage, 7), rng), 0);
  ASSERT_EQ(write(*dev, Kind::bvec, 64, std::vector<unsigned char>(kPage, 8), rng, iov::REQ_PREFLUSH), 0);
  EXPECT_EQ(dev->cache_bytes(), kPage);  // only the new write is cached
}

TEST(NullBlkCache, TheCacheStaysWithinItsSize) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1});
  std::mt19937_64 rng(5);
  std::vector<unsigned char> data = iov_test::random_blocks(3 * kMiB, rng);
  ASSERT_EQ(write(*dev, Kind::ubuf, 0, data, rng), 0);
  EXPECT_LT(dev->cache_bytes(), kMiB);
  std::vector<unsigned char> got;
  ASSERT_EQ(read(*dev, Kind::ubuf, 0, data.size(), &got, rng), 0);
  EXPECT_EQ(got, data);
}

// null_flush_cache_page copies only the blocks set in the cache page: a block
// written with FUA into the data page after the cache page was made must not
// be overwritten by the cache page's stale copy of it.
TEST(NullBlkCache, FlushCopiesOnlyTheBlocksSetInTheCachePage) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1});
  std::mt19937_64 rng(6);
  std::vector<unsigned char> a(512, 0xaa), b(512, 0xbb), c(512, 0xcc);
  ASSERT_EQ(write(*dev, Kind::ubuf, 0, a, rng), 0);                 // cache page, block 0
  ASSERT_EQ(write(*dev, Kind::ubuf, 1, b, rng), 0);                 // cache page, block 1
  ASSERT_EQ(write(*dev, Kind::ubuf, 0, c, rng, iov::REQ_FUA), 0);   // data page, block 0; cache's block 0 cleared
  EXPECT_EQ(dev->nr_pages(), 2u);
  ASSERT_EQ(no_data(*dev, iov::REQ_OP_FLUSH), 0);
  EXPECT_EQ(dev->nr_pages(), 1u);
  std::vector<unsigned char> got;
  ASSERT_EQ(read(*dev, Kind::ubuf, 0, 1024, &got, rng), 0);
  std::vector<unsigned char> want = c;
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_EQ(got, want);
}

TEST(NullBlkCache, DiscardClearsBlocksInBothTrees) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .cache_size = 1, .discard = true});
  std::mt19937_64 rng(7);
  ASSERT_EQ(write(*dev, Kind::ubuf, 0, std::vector<unsigned char>(kPage, 1), rng, iov::REQ_FUA), 0);
  ASSERT_EQ(write(*dev, Kind::ubuf, 8, std::vector<unsigned char>(kPage, 2), rng), 0);
  ASSERT_EQ(no_data(*dev, iov::REQ_OP_DISCARD, 0, 16), 0);
  EXPECT_EQ(dev->nr_pages(), 0u);
  EXPECT_EQ(dev->cache_bytes(), 0u);
  EXPECT_EQ(read_all(*dev), std::vector<unsigned char>(4 * kMiB, 0));
}

// --- Blocks -------------------------------------------------------------------

TEST(NullBlk, DiscardWorksPerBlockAndFreesEmptyPages) {
  auto dev = make_nullb({.size = kMiB, .blocksize = 1024, .memory_backed = true, .discard = true});
  std::mt19937_64 rng(8);
  std::vector<unsigned char> data(kPage, 0x11);
  ASSERT_EQ(write(*dev, Kind::iovec, 0, data, rng), 0);
  ASSERT_EQ(no_data(*dev, iov::REQ_OP_DISCARD, 2, 4), 0);  // blocks 1 and 2 of 4
  EXPECT_EQ(dev->nr_pages(), 1u);
  EXPECT_EQ(extents(*dev, 0, 8),
            (std::vector<ModelExtent>{{0, 2, 0}, {2, 4, iov_test::kHole | iov_test::kZero}, {6, 2, 0}}));
  ASSERT_EQ(no_data(*dev, iov::REQ_OP_DISCARD, 0, 8), 0);
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
  EXPECT_EQ(no_data(*dev, iov::REQ_OP_DISCARD, 0, 8), -EOPNOTSUPP);
  EXPECT_EQ(no_data(*dev, iov::REQ_OP_FLUSH), 0);
}

TEST(NullBlk, BlocksizeTwoKilobytes) {
  auto dev = make_nullb({.size = kMiB, .blocksize = 2048, .memory_backed = true, .discard = true});
  NullBlkModel model({.size = kMiB, .blocksize = 2048});
  std::mt19937_64 rng(9);
  for (int i = 0; i < 40; i++) {
    uint64_t sector = rng() % 500 * 4, nr = 4 * (1 + rng() % 6);
    std::vector<unsigned char> data = iov_test::random_blocks(nr * 512, rng);
    uint64_t where;
    ASSERT_EQ(write(*dev, Kind::kvec, sector, data, rng), 0);
    model.write(sector, data.data(), data.size(), false, &where);
    if (i % 3 == 0) {
      ASSERT_EQ(no_data(*dev, iov::REQ_OP_DISCARD, sector + 4, 4), 0);
      model.discard(sector + 4, 4);
    }
  }
  EXPECT_EQ(read_all(*dev), model.read(0, kMiB));
  EXPECT_EQ(extents(*dev, 0, 2048), model.extents(0, 2048));
  EXPECT_EQ(dev->nr_pages(), model.stored_pages());
}

// --- Rejected requests change nothing ---------------------------------------

TEST(NullBlk, BadRequestsChangeNothing) {
  auto dev = make_nullb({.size = 64 * kPage, .blocksize = 4096, .memory_backed = true, .max_pages = 6});
  std::mt19937_64 rng(10);
  std::vector<unsigned char> data = iov_test::random_blocks(5 * kPage, rng);
  ASSERT_EQ(write(*dev, Kind::ubuf, 0, data, rng), 0);
  const std::vector<unsigned char> before = read_all(*dev);
  const uint64_t pages = dev->nr_pages(), cap = dev->get_capacity();
  std::vector<unsigned char> buf(3 * kPage, 0xcd);
  struct Bad {
    const char* what;
    iov::req_op op;
    uint64_t sector, nr;
    size_t len;
    unsigned dir;
    int err;
  };
  const Bad cases[] = {
      {"sector inside a block", iov::REQ_OP_WRITE, 1, 0, kPage, iov::ITER_SOURCE, -EINVAL},
      {"length of part of a block", iov::REQ_OP_WRITE, 8, 0, 512, iov::ITER_SOURCE, -EINVAL},
      {"read of part of a block", iov::REQ_OP_READ, 8, 0, 1024, iov::ITER_DEST, -EINVAL},
      {"read past the end", iov::REQ_OP_READ, cap - 8, 0, 2 * kPage, iov::ITER_DEST, -EIO},
      {"write from ITER_DEST", iov::REQ_OP_WRITE, 0, 0, kPage, iov::ITER_DEST, -EINVAL},
      {"write past max_pages", iov::REQ_OP_WRITE, 32, 0, 3 * kPage, iov::ITER_SOURCE, -ENOSPC},
      {"discard when discard=0", iov::REQ_OP_DISCARD, 0, 8, 0, 0, -EOPNOTSUPP},
      {"write zeroes", iov::REQ_OP_WRITE_ZEROES, 0, 8, 0, 0, -EOPNOTSUPP},
      {"zone append", iov::REQ_OP_ZONE_APPEND, 0, 0, kPage, iov::ITER_SOURCE, -EOPNOTSUPP},
      {"zone finish", iov::REQ_OP_ZONE_FINISH, 0, 0, 0, 0, -EOPNOTSUPP},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.what);
    iov::iov_iter it;
    iov::iov_iter_ubuf(&it, b.dir, buf.data(), b.len);
    iov::blk_request rq{.op = b.op, .sector = b.sector, .nr_sectors = b.nr, .iter = b.len ? &it : nullptr};
    EXPECT_EQ(dev->submit(rq), b.err);
    EXPECT_THAT(rq.error, NotNull());
    EXPECT_EQ(iov::iov_iter_count(&it), b.len);
    EXPECT_EQ(dev->nr_pages(), pages);
    ASSERT_EQ(read_all(*dev), before);
  }
  EXPECT_EQ(buf, std::vector<unsigned char>(3 * kPage, 0xcd));
  // One more page fits the budget.
  EXPECT_EQ(write(*dev, Kind::ubuf, 32, std::vector<unsigned char>(2 * kPage, 1), rng), 0);
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

}  // namespace
