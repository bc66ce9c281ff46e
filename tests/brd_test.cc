// Tests of the RAM disk (src/drivers/iov_drivers/brd.hpp): random request
// sequences against a flat model (tests/support/disk_model.hpp) for each zero
// detection mode and request iterator type, switching between the four copy
// forms as they go; the edges of discard, write zeroes and zero detection;
// rejected requests that must change nothing; and the CRC and extent services.
//
//   ctest -R brd_test            IOV_TEST_SEED=7 build/.../brd_test
#include "iov_drivers/brd.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "iov/iov.hpp"
#include "support/blkdev_fixture.hpp"
#include "support/disk_model.hpp"
#include "support/model.hpp"

namespace {

using iov_test::blk_extents;
using iov_test::blk_no_data;
using iov_test::blk_read;
using iov_test::blk_read_all;
using iov_test::blk_write;
using iov_test::BrdModel;
using iov_test::Kind;
using iov_test::Layout;
using iov_test::make_brd;
using iov_test::ModelExtent;
using ::testing::HasSubstr;
using ::testing::NotNull;

constexpr size_t kPage = 4096;

iov_test::ZeroDetect to_model(iov::detect_zeroes dz) {
  return dz == iov::detect_zeroes::off  ? iov_test::ZeroDetect::off
         : dz == iov::detect_zeroes::on ? iov_test::ZeroDetect::on
                                        : iov_test::ZeroDetect::unmap;
}

// --- Random sequences against the model ---------------------------------------

std::string random_name(const ::testing::TestParamInfo<std::tuple<iov::detect_zeroes, Kind>>& info) {
  static const char* const dz[] = {"off", "on", "unmap"};
  return std::string("detect_") + dz[static_cast<int>(std::get<0>(info.param))] + "_" +
         iov_test::kind_name(std::get<1>(info.param));
}

class BrdRandom : public ::testing::TestWithParam<std::tuple<iov::detect_zeroes, Kind>> {};

TEST_P(BrdRandom, MatchesModel) {
  const auto [dz, kind] = GetParam();
  constexpr uint64_t kSize = 48 * kPage + 3 * 512;  // the last page is partial
  for (uint64_t seed : iov_test::test_seeds({1, 2})) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed * 131 + static_cast<int>(dz) * 7 + static_cast<int>(kind));
    auto dev = make_brd({.size = kSize, .detect_zeroes = dz});
    BrdModel model(kSize, to_model(dz));
    const uint64_t cap = dev->get_capacity();
    for (int i = 0; i < 120; i++) {
      SCOPED_TRACE(i);
      iov_test::set_copy_form(*dev, i);
      uint64_t sector, nr;
      if (rng() % 3 == 0) {  // whole pages, where unmap and discard act
        sector = rng() % (cap / 8) * 8;
        nr = std::min<uint64_t>(8 * (1 + rng() % 4), cap - sector);
      } else {
        sector = rng() % cap;
        nr = std::min<uint64_t>(1 + (rng() % 8 == 0 ? rng() % 64 : rng() % 20), cap - sector);
      }
      const size_t len = nr * 512;
      switch (rng() % 10) {
        case 0: case 1: case 2: case 3: {
          std::vector<unsigned char> data = iov_test::random_blocks(len, rng);
          ASSERT_EQ(blk_write(*dev, kind, sector, data, rng), 0);
          model.write(sector * 512, data.data(), len);
          break;
        }
        case 4: case 5: case 6: {
          std::vector<unsigned char> got;
          ASSERT_EQ(blk_read(*dev, kind, sector, len, &got, rng), 0);
          ASSERT_TRUE(std::equal(got.begin(), got.end(), model.bytes().begin() + sector * 512));
          break;
        }
        case 7:
          ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_DISCARD, sector, nr), 0);
          model.discard(sector * 512, len);
          break;
        case 8: {
          bool unmap = rng() % 2;
          ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_WRITE_ZEROES, sector, nr, unmap ? 0 : iov::REQ_NOUNMAP), 0);
          model.write_zeroes(sector * 512, len, unmap);
          break;
        }
        default: {
          ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_FLUSH, 0, 0), 0);
          uint32_t crc = static_cast<uint32_t>(rng()), want = model.crc32c(crc, sector * 512, len);
          ASSERT_EQ(dev->crc32c(sector, nr, &crc), 0);
          EXPECT_EQ(crc, want);
        }
      }
      ASSERT_EQ(dev->nr_pages(), model.stored_pages());
      if (i % 12 == 11) {
        ASSERT_EQ(blk_read_all(*dev), model.bytes());
        ASSERT_EQ(blk_extents(*dev, 0, cap), model.extents(0, cap));
        ASSERT_EQ(blk_extents(*dev, 0, cap, iov::BLK_MAP_ALLOCATION), model.extents(0, cap, true));
      }
    }
    EXPECT_EQ(blk_extents(*dev, 3, cap - 5), model.extents(3, cap - 5));
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, BrdRandom,
    ::testing::Combine(::testing::Values(iov::detect_zeroes::off, iov::detect_zeroes::on, iov::detect_zeroes::unmap),
                       iov_test::request_kinds()),
    random_name);

// --- Edges of the operations ------------------------------------------------

// Every start within two pages and every length up to two pages and a sector,
// across stored pages and a hole, one request at a time and all in one batch
// (brd's submit_reads), in each copy form: the bytes of a flat model, and
// nothing written past a request's count.
TEST(Brd, ReadsAtEveryOffsetAndLengthMatchTheModel) {
  constexpr uint64_t kSectorsPerPage = kPage / 512, kPages = 4;
  auto dev = make_brd({.size = kPages * kPage});
  std::mt19937_64 rng(5);
  std::vector<unsigned char> model(kPages * kPage, 0);
  for (uint64_t pg : {0, 1, 3}) {  // page 2 is a hole
    std::vector<unsigned char> data = iov_test::random_blocks(kPage, rng);
    ASSERT_EQ(blk_write(*dev, Kind::ubuf, pg * kSectorsPerPage, data, rng), 0);
    std::memcpy(model.data() + pg * kPage, data.data(), kPage);
  }
  struct read_at {
    uint64_t sector, nr;
  };
  std::vector<read_at> reads;
  for (uint64_t start = 0; start < 2 * kSectorsPerPage; start++)
    for (uint64_t nr = 1; nr <= 2 * kSectorsPerPage + 1; nr++) reads.push_back({start, nr});
  auto expect_model = [&](const read_at& r, const std::vector<unsigned char>& got) {
    SCOPED_TRACE(testing::Message() << "sector " << r.sector << ", " << r.nr << " sectors");
    ASSERT_GE(got.size(), r.nr * 512);
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + r.nr * 512, model.begin() + r.sector * 512));
    EXPECT_TRUE(std::all_of(got.begin() + r.nr * 512, got.end(), [](unsigned char c) { return c == 0xee; }));
  };
  for (int form = 0; form < 6; form++) {
    SCOPED_TRACE(form);
    iov_test::set_copy_form(*dev, form);
    for (const read_at& r : reads) {
      std::vector<unsigned char> got;
      ASSERT_EQ(blk_read(*dev, Kind::ubuf, r.sector, r.nr * 512, &got, rng), 0);
      expect_model(r, got);
    }
    std::vector<std::vector<unsigned char>> bufs(reads.size());
    std::vector<iov::iov_iter> its(reads.size());
    std::vector<iov::blk_request> rqs(reads.size());
    for (size_t i = 0; i < reads.size(); i++) {
      bufs[i].assign(reads[i].nr * 512 + 64, 0xee);  // 64 bytes beyond the count stay as they are
      iov::iov_iter_ubuf(&its[i], iov::ITER_DEST, bufs[i].data(), reads[i].nr * 512);
      rqs[i] = {.op = iov::REQ_OP_READ, .sector = reads[i].sector, .iter = &its[i]};
    }
    std::vector<int> results(reads.size(), -1);
    ASSERT_EQ(dev->submit_batch(rqs, results), 0);
    for (size_t i = 0; i < reads.size(); i++) {
      EXPECT_EQ(results[i], 0);
      EXPECT_EQ(iov::iov_iter_count(&its[i]), 0u);
      expect_model(reads[i], bufs[i]);
    }
  }
}

TEST(Brd, ReadsOfAbsentPagesAreZeroAndAllocateNothing) {
  auto dev = make_brd({.size = 16 * kPage});
  std::mt19937_64 rng(3);
  std::vector<unsigned char> got;
  ASSERT_EQ(blk_read(*dev, Kind::iovec, 5, 3 * kPage, &got, rng), 0);
  EXPECT_EQ(got, std::vector<unsigned char>(3 * kPage, 0));
  EXPECT_EQ(dev->nr_pages(), 0u);
}

TEST(Brd, DiscardFreesOnlyWholePages) {
  auto dev = make_brd({.size = 16 * kPage});
  std::mt19937_64 rng(4);
  std::vector<unsigned char> data(3 * kPage, 0x77);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, data, rng), 0);
  ASSERT_EQ(dev->nr_pages(), 3u);
  // Sectors 4..19: the second half of page 0, all of page 1, half of page 2.
  ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_DISCARD, 4, 16), 0);
  EXPECT_EQ(dev->nr_pages(), 2u);
  std::vector<unsigned char> got;
  ASSERT_EQ(blk_read(*dev, Kind::kvec, 0, 3 * kPage, &got, rng), 0);
  for (size_t k = 0; k < got.size(); k++) ASSERT_EQ(got[k], k / kPage == 1 ? 0 : 0x77) << k;
}

TEST(Brd, WriteZeroesFreesWholePagesUnlessNoUnmap) {
  std::mt19937_64 rng(5);
  for (bool nounmap : {false, true}) {
    auto dev = make_brd({.size = 16 * kPage});
    ASSERT_EQ(blk_write(*dev, Kind::bvec, 0, std::vector<unsigned char>(4 * kPage, 0x31), rng), 0);
    ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_WRITE_ZEROES, 4, 20, nounmap ? iov::REQ_NOUNMAP : 0), 0);
    EXPECT_EQ(dev->nr_pages(), nounmap ? 4u : 2u);  // pages 1 and 2 lie wholly in sectors 4..23
    std::vector<unsigned char> got = blk_read_all(*dev);
    for (size_t k = 0; k < 4 * kPage; k++) ASSERT_EQ(got[k], k >= 4 * 512 && k < 24 * 512 ? 0 : 0x31) << k;
  }
}

TEST(Brd, ZeroDetectionOnStoresNothingForZerosInAbsentPages) {
  auto dev = make_brd({.size = 16 * kPage, .detect_zeroes = iov::detect_zeroes::on});
  std::mt19937_64 rng(6);
  std::vector<unsigned char> data(2 * kPage, 0);
  data[kPage + 100] = 9;  // the second page has data
  ASSERT_EQ(blk_write(*dev, Kind::iovec, 0, data, rng), 0);
  EXPECT_EQ(dev->nr_pages(), 1u);
  // Zeros over a stored page are written (it stays, now all zero).
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 8, std::vector<unsigned char>(kPage, 0), rng), 0);
  EXPECT_EQ(dev->nr_pages(), 1u);
  EXPECT_EQ(blk_read_all(*dev), std::vector<unsigned char>(16 * kPage, 0));
  EXPECT_EQ(blk_extents(*dev, 0, 24), (std::vector<ModelExtent>{{0, 8, iov_test::kHole | iov_test::kZero},
                                                            {8, 8, iov_test::kZero},
                                                            {16, 8, iov_test::kHole | iov_test::kZero}}));
}

TEST(Brd, ZeroDetectionUnmapFreesPagesAZeroWriteCoversWhole) {
  auto dev = make_brd({.size = 16 * kPage, .detect_zeroes = iov::detect_zeroes::unmap});
  std::mt19937_64 rng(7);
  ASSERT_EQ(blk_write(*dev, Kind::kvec, 0, std::vector<unsigned char>(3 * kPage, 0xee), rng), 0);
  ASSERT_EQ(dev->nr_pages(), 3u);
  // Zeros from sector 4 to 20: page 1 whole (freed), halves of pages 0 and 2 (cleared).
  ASSERT_EQ(blk_write(*dev, Kind::bvec, 4, std::vector<unsigned char>(16 * 512, 0), rng), 0);
  EXPECT_EQ(dev->nr_pages(), 2u);
  std::vector<unsigned char> got = blk_read_all(*dev);
  for (size_t k = 0; k < 3 * kPage; k++) ASSERT_EQ(got[k], k >= 4 * 512 && k < 20 * 512 ? 0 : 0xee) << k;
}

TEST(Brd, DeviceEndingInsideAPage) {
  constexpr uint64_t kSize = 2 * kPage + 1024;
  auto dev = make_brd({.size = kSize, .detect_zeroes = iov::detect_zeroes::unmap});
  std::mt19937_64 rng(8);
  ASSERT_EQ(dev->get_capacity(), kSize / 512);
  ASSERT_EQ(blk_write(*dev, Kind::xarray, 16, std::vector<unsigned char>(1024, 0x42), rng), 0);
  EXPECT_EQ(dev->nr_pages(), 1u);
  ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_DISCARD, 0, dev->get_capacity()), 0);
  EXPECT_EQ(dev->nr_pages(), 1u);  // the partial last page is never whole
  ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_WRITE_ZEROES, 16, 2), 0);
  EXPECT_EQ(blk_read_all(*dev), std::vector<unsigned char>(kSize, 0));
}

TEST(Brd, AnXarrayHoleEndsTheTransferWithEfault) {
  auto dev = make_brd({.size = 16 * kPage});
  auto l = Layout::make_xarray(0, 3 * kPage, {1});
  l->fill(9);
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  iov::blk_request rq{.op = iov::REQ_OP_WRITE, .sector = 0, .iter = &it};
  EXPECT_EQ(dev->submit(rq), -EFAULT);
  EXPECT_THAT(rq.error, NotNull());
}

TEST(Brd, FreeAllPagesEmptiesTheDisk) {
  auto dev = make_brd({.size = 16 * kPage});
  std::mt19937_64 rng(10);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, std::vector<unsigned char>(5 * kPage, 1), rng), 0);
  dev->free_all_pages();
  EXPECT_EQ(dev->nr_pages(), 0u);
  EXPECT_EQ(blk_read_all(*dev), std::vector<unsigned char>(16 * kPage, 0));
}

// --- Rejected requests change nothing ---------------------------------------

TEST(Brd, BadRequestsChangeNothing) {
  constexpr uint64_t kSize = 8 * kPage;
  auto dev = make_brd({.size = kSize, .max_pages = 6});
  std::mt19937_64 rng(11);
  std::vector<unsigned char> data = iov_test::random_blocks(5 * kPage, rng);
  data[100] = 1;  // page 0 has data
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, data, rng), 0);
  const std::vector<unsigned char> before = blk_read_all(*dev);
  const uint64_t cap = dev->get_capacity();
  std::vector<unsigned char> buf(3 * kPage, 0xcd);
  const std::vector<iov_test::BadRequest> cases = {
      {"read past the end", iov::REQ_OP_READ, cap - 1, 0, 1024, iov::ITER_DEST, -EIO},
      {"write at the end", iov::REQ_OP_WRITE, cap, 0, 512, iov::ITER_SOURCE, -EIO},
      {"write from far away", iov::REQ_OP_WRITE, ~uint64_t{0} - 1, 0, 1024, iov::ITER_SOURCE, -EIO},
      {"odd length", iov::REQ_OP_WRITE, 0, 0, 100, iov::ITER_SOURCE, -EINVAL},
      {"write from ITER_DEST", iov::REQ_OP_WRITE, 0, 0, 512, iov::ITER_DEST, -EINVAL},
      {"read into ITER_SOURCE", iov::REQ_OP_READ, 0, 0, 512, iov::ITER_SOURCE, -EINVAL},
      {"write past max_pages", iov::REQ_OP_WRITE, 8 * 4, 0, 3 * kPage, iov::ITER_SOURCE, -ENOSPC},
      {"discard past the end", iov::REQ_OP_DISCARD, 8, cap, 0, 0, -EIO},
      {"discard of 2^64 sectors", iov::REQ_OP_DISCARD, 8, ~uint64_t{0}, 0, 0, -EIO},
      {"write zeroes past the end", iov::REQ_OP_WRITE_ZEROES, cap - 8, 9, 0, 0, -EIO},
      {"zone append", iov::REQ_OP_ZONE_APPEND, 0, 0, 512, iov::ITER_SOURCE, -EOPNOTSUPP},
      {"zone reset", iov::REQ_OP_ZONE_RESET, 0, 0, 0, 0, -EOPNOTSUPP},
  };
  ASSERT_NO_FATAL_FAILURE(iov_test::expect_refused_unchanged(*dev, cases, buf));
  iov::blk_request no_iter{.op = iov::REQ_OP_READ};
  EXPECT_EQ(dev->submit(no_iter), -EINVAL);
  EXPECT_EQ(buf, std::vector<unsigned char>(3 * kPage, 0xcd));  // no rejected read wrote into it
  EXPECT_EQ(blk_read_all(*dev), before);
}

TEST(Brd, BudgetCountsOnlyPagesAWriteAdds) {
  auto dev = make_brd({.size = 16 * kPage, .detect_zeroes = iov::detect_zeroes::on, .max_pages = 2});
  std::mt19937_64 rng(12);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, std::vector<unsigned char>(2 * kPage, 3), rng), 0);
  ASSERT_EQ(dev->nr_pages(), 2u);
  // Overwriting stored pages and writing zeros to absent ones need no page.
  ASSERT_EQ(blk_write(*dev, Kind::iovec, 4, std::vector<unsigned char>(kPage, 4), rng), 0);
  ASSERT_EQ(blk_write(*dev, Kind::kvec, 16, std::vector<unsigned char>(6 * kPage, 0), rng), 0);
  std::vector<unsigned char> one(512, 1);
  EXPECT_EQ(blk_write(*dev, Kind::ubuf, 16, one, rng), -ENOSPC);
  ASSERT_EQ(blk_no_data(*dev, iov::REQ_OP_DISCARD, 0, 8), 0);
  EXPECT_EQ(blk_write(*dev, Kind::ubuf, 16, one, rng), 0);
  EXPECT_EQ(dev->nr_pages(), 2u);
}

// --- Services -----------------------------------------------------------------

TEST(Brd, CrcOfHolesEqualsTheCrcOfZeros) {
  constexpr uint64_t kSize = uint64_t{8} << 20;
  auto dev = make_brd({.size = kSize});
  std::mt19937_64 rng(13);
  std::vector<unsigned char> data = iov_test::random_blocks(3 * kPage, rng);
  data[0] = 1;  // the first page holds data whatever random_blocks chose
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 1001, data, rng), 0);
  std::vector<unsigned char> flat(kSize, 0);
  std::memcpy(&flat[1001 * 512], data.data(), data.size());
  for (uint32_t seed : {0u, ~0u, 0x1234567u}) {
    uint32_t crc = seed;
    ASSERT_EQ(dev->crc32c(0, dev->get_capacity(), &crc), 0);
    EXPECT_EQ(crc, iov_test::model_crc32c(seed, flat.data(), flat.size()));
    crc = seed;
    ASSERT_EQ(dev->crc32c(7, 2000, &crc), 0);
    EXPECT_EQ(crc, iov_test::model_crc32c(seed, &flat[7 * 512], 2000 * 512));
  }
  EXPECT_EQ(dev->nr_pages(), 4u);  // the services allocate nothing
}

TEST(Brd, ServicesRejectRangesBeyondTheEnd) {
  auto dev = make_brd({.size = 16 * kPage});
  uint32_t crc = 5;
  const char* why = nullptr;
  EXPECT_EQ(dev->crc32c(120, 9, &crc, &why), -EIO);
  EXPECT_THAT(why, NotNull());
  EXPECT_EQ(crc, 5u);
  std::vector<iov::blk_extent> map;
  EXPECT_EQ(dev->map_extents(0, 129, &map), -EIO);
  EXPECT_EQ(dev->map_extents(0, ~uint64_t{0}, &map), -EIO);
  EXPECT_TRUE(map.empty());
  std::vector<iov::blk_zone> zones;
  EXPECT_EQ(dev->report_zones(0, 4, &zones), -EOPNOTSUPP);
}

TEST(Brd, LimitsDescribeWhatItAccepts) {
  auto dev = make_brd({.size = 16 * kPage});
  EXPECT_STREQ(dev->name(), "brd");
  // drivers/block/brd.c's: sectors of 512 bytes in pages, a discard frees
  // whole pages, and one DISCARD or WRITE_ZEROES may cover UINT_MAX bytes
  // rounded down to sectors (8388607 sectors, 4 GiB less one sector).
  EXPECT_EQ(dev->limits().logical_block_size, 512u);
  EXPECT_EQ(dev->limits().physical_block_size, kPage);
  EXPECT_EQ(dev->limits().discard_granularity, kPage);
  EXPECT_EQ(dev->limits().max_hw_discard_sectors, 8388607u);
  EXPECT_EQ(dev->limits().max_write_zeroes_sectors, 8388607u);
  EXPECT_EQ(dev->limits().chunk_sectors, 0u);
  EXPECT_EQ(dev->limits().features & iov::BLK_FEAT_ZONED, 0u);
}

TEST(Brd, CreateFromSettings) {
  auto dev = iov::blkdev_create("brd", {{"size", "1m"}, {"detect_zeroes", "unmap"}, {"copy_mode", "legacy"},
                                        {"iteration", "outofline"}, {"max_pages", "10"}});
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_EQ((*dev)->get_capacity(), 2048u);
  EXPECT_EQ((*dev)->get_copy_mode(), iov::copy_mode::legacy);
  EXPECT_EQ((*dev)->get_iteration(), iov::iteration_mode::outofline);
  auto* brd = dynamic_cast<iov::brd_device*>(dev->get());
  ASSERT_THAT(brd, NotNull());
  EXPECT_EQ(brd->config().detect_zeroes, iov::detect_zeroes::unmap);
  EXPECT_EQ(brd->config().max_pages, 10u);

  auto nocache = iov::blkdev_create("brd", {{"size", "1m"}, {"copy_mode", "nocache"}});
  ASSERT_TRUE(nocache.ok()) << nocache.status();
  EXPECT_EQ((*nocache)->get_copy_mode(), iov::copy_mode::nocache);
  auto unknown = iov::blkdev_create("brd", {{"copy_mode", "streaming"}});
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("modern, legacy or nocache"));

  auto bad = iov::blkdev_create("brd", {{"zoned", "1"}});
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("zoned does not apply to brd"));
  EXPECT_THAT(std::string(iov::blkdev_create("brd", {{"size", "12x"}}).status().message()), HasSubstr("size=12x"));
  EXPECT_FALSE(iov::blkdev_create("brd", {{"size", "100"}}).ok());  // not a whole sector
  EXPECT_FALSE(iov::blkdev_create("brd", {{"detect_zeroes", "maybe"}}).ok());
  EXPECT_FALSE(iov::blkdev_create("loop", {}).ok());
}

}  // namespace

namespace {

// lend_pages: the pieces it lends read, in order, exactly what a READ of the
// range returns (stored pages and the shared zero page for absent ones).
TEST(Brd, LentPagesReadAsAReadDoes) {
  iov::brd_config c;
  c.size = 1 << 20;
  auto dev = iov::brd_device::create(c);
  ASSERT_TRUE(dev.ok());
  std::vector<char> data(3 * 4096 + 1024);
  for (size_t k = 0; k < data.size(); k++)
    data[k] = static_cast<char>(k * 13 + 1);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_SOURCE, data.data(), data.size());
  iov::blk_request w;
  w.op = iov::REQ_OP_WRITE;
  w.sector = 10;  // 5 KiB in: pages 1..4 partly
  w.iter = &it;
  ASSERT_EQ((*dev)->submit(w), 0);
  for (auto [sector, nr] : std::vector<std::pair<uint64_t, uint64_t>>{{0, 64}, {9, 3}, {17, 40}, {100, 8}}) {
    std::vector<char> expect(nr * 512);
    iov::iov_iter r;
    iov::iov_iter_ubuf(&r, iov::ITER_DEST, expect.data(), expect.size());
    iov::blk_request rq;
    rq.op = iov::REQ_OP_READ;
    rq.sector = sector;
    rq.iter = &r;
    ASSERT_EQ((*dev)->submit(rq), 0);
    std::vector<char> lent;
    {
      iov::blk_lease lease;
      ASSERT_EQ((*dev)->lend_pages(sector, nr, &lease), 0);
      EXPECT_TRUE(iov::rcu_read_lock_held()) << "the lease holds the read-side section";
      for (const iov::bio_vec& bv : lease.pieces()) {
        EXPECT_LE(bv.bv_offset + bv.bv_len, 4096u) << "a piece lies inside its page";
        const char* p = iov::bvec_virt(&bv);
        lent.insert(lent.end(), p, p + bv.bv_len);
      }
    }
    EXPECT_FALSE(iov::rcu_read_lock_held()) << "the lease ended its section";
    EXPECT_EQ(lent, expect) << "sector " << sector;
  }
  iov::blk_lease none;
  EXPECT_EQ((*dev)->lend_pages(2047, 2, &none), -EIO);  // beyond the end
  EXPECT_TRUE(none.pieces().empty());
  EXPECT_FALSE(none.held());
}

// Pages discarded while lent stay readable until the lease is released (ASan
// would report the pieces' reads as a use after free otherwise); then they go.
TEST(Brd, LeaseKeepsDiscardedPagesUntilReleased) {
  iov::brd_config c;
  c.size = 1 << 20;
  auto dev = iov::brd_device::create(c);
  ASSERT_TRUE(dev.ok());
  std::vector<char> data(4 * 4096, 0x6b);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_SOURCE, data.data(), data.size());
  iov::blk_request w{.op = iov::REQ_OP_WRITE, .sector = 0, .iter = &it};
  ASSERT_EQ((*dev)->submit(w), 0);
  iov::blk_lease lease;
  ASSERT_EQ((*dev)->lend_pages(0, 16, &lease), 0);  // pages 0 and 1
  ASSERT_EQ((*dev)->lend_pages(16, 16, &lease), 0);  // 2 and 3: one lease, one section
  iov::blk_request d{.op = iov::REQ_OP_DISCARD, .sector = 0, .nr_sectors = 32};
  ASSERT_EQ((*dev)->submit(d), 0);
  EXPECT_EQ((*dev)->nr_pages(), 0u);
  std::vector<char> lent;
  for (const iov::bio_vec& bv : lease.pieces()) {
    const char* p = iov::bvec_virt(&bv);
    lent.insert(lent.end(), p, p + bv.bv_len);
  }
  EXPECT_EQ(lent, data);
  lease.release();
  EXPECT_TRUE(lease.pieces().empty());
  EXPECT_FALSE(iov::rcu_read_lock_held());
  iov::rcu_barrier();  // the deferred frees run now that no reader holds the pages
}

}  // namespace
