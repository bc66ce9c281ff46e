// Tests of null_blk's zoned mode (src/drivers/null_blk/zoned.cc): the zone
// state machine's transitions and errors as the kernel's zoned.c has them,
// the open and active limits, zone capacity, zone append, reads past the
// write pointer, and random request sequences against the flat model of
// tests/support/disk_model.hpp for both block sizes, with and without the
// cache, for each request iterator type; rejected requests change nothing.
//
//   ctest -R null_blk_zoned_test
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "iov/iov.hpp"
#include "iov_drivers/null_blk.hpp"
#include "support/blkdev_fixture.hpp"
#include "support/disk_model.hpp"
#include "support/model.hpp"

namespace {

using iov_test::blk_extents;
using iov_test::blk_no_data;
using iov_test::blk_read;
using iov_test::blk_write;
using iov_test::blk_zone_append;
using iov_test::Kind;
using iov_test::make_nullb;
using iov_test::NullBlkModel;
using iov_test::ZoneOp;

using iov_test::kMiB;
constexpr uint64_t Z = 2048;  // sectors in a 1 MiB zone

// A WRITE, or a ZONE_APPEND whose sector *where gets, of nr sectors of `byte`.
int write_fill(iov::blkdev& dev, uint64_t sector, uint64_t nr, unsigned char byte, uint64_t* where = nullptr,
               bool append = false) {
  std::mt19937_64 rng(sector);
  const std::vector<unsigned char> data(nr * 512, byte);
  return append ? blk_zone_append(dev, Kind::ubuf, sector, data, rng, where)
                : blk_write(dev, Kind::ubuf, sector, data, rng);
}

std::vector<unsigned char> read(iov::blkdev& dev, Kind kind, uint64_t sector, size_t len, std::mt19937_64& rng) {
  std::vector<unsigned char> out;
  EXPECT_EQ(blk_read(dev, kind, sector, len, &out, rng), 0);
  return out;
}

std::vector<unsigned char> read_range(iov::blkdev& dev, uint64_t sector, uint64_t nr) {
  std::mt19937_64 rng(sector);
  return read(dev, Kind::ubuf, sector, nr * 512, rng);
}

iov::req_op op_of(ZoneOp op) {
  switch (op) {
    case ZoneOp::open: return iov::REQ_OP_ZONE_OPEN;
    case ZoneOp::close: return iov::REQ_OP_ZONE_CLOSE;
    case ZoneOp::finish: return iov::REQ_OP_ZONE_FINISH;
    case ZoneOp::reset: return iov::REQ_OP_ZONE_RESET;
    default: return iov::REQ_OP_ZONE_RESET_ALL;
  }
}

int mgmt(iov::blkdev& dev, ZoneOp op, uint64_t sector) { return blk_no_data(dev, op_of(op), sector); }

iov::blk_zone zone(iov::blkdev& dev, unsigned n) {
  std::vector<iov::blk_zone> zones;
  EXPECT_EQ(dev.report_zones(n * dev.limits().chunk_sectors, 1, &zones), 1);
  return zones.at(0);
}

// The device's zones against the model's.
void expect_zones(iov::blkdev& dev, const NullBlkModel& model) {
  std::vector<iov::blk_zone> zones;
  ASSERT_EQ(dev.report_zones(0, 1000, &zones), static_cast<int>(model.zones().size()));
  for (size_t n = 0; n < zones.size(); n++) {
    SCOPED_TRACE(n);
    const iov_test::ModelZone& m = model.zones()[n];
    EXPECT_EQ(zones[n].start, m.start);
    EXPECT_EQ(zones[n].len, m.len);
    EXPECT_EQ(zones[n].capacity, m.capacity);
    EXPECT_EQ(zones[n].wp, m.wp);
    EXPECT_EQ(zones[n].cond, static_cast<iov::blk_zone_cond>(m.cond)) << iov::blk_zone_cond_name(zones[n].cond);
    EXPECT_EQ(zones[n].type, m.conventional ? iov::BLK_ZONE_TYPE_CONVENTIONAL : iov::BLK_ZONE_TYPE_SEQWRITE_REQ);
  }
}

NullBlkModel model_of(const iov::nullb_device& dev) {
  const iov::null_blk_config& c = dev.config();  // after the device's adjustments
  return NullBlkModel({.size = c.size, .blocksize = c.blocksize, .zoned = true, .zone_sectors = c.zone_size * Z,
                       .zone_capacity_sectors = c.zone_capacity * Z, .nr_conv = c.zone_nr_conv,
                       .max_open = c.zone_max_open, .max_active = c.zone_max_active});
}

std::vector<unsigned char> filled_bytes(size_t n, unsigned char b) { return std::vector<unsigned char>(n, b); }

// --- The state machine ----------------------------------------------------------

TEST(NullBlkZoned, InitialZones) {
  auto dev = make_nullb({.size = 8 * kMiB, .memory_backed = true, .zoned = true, .zone_size = 1, .zone_nr_conv = 2});
  EXPECT_EQ(dev->nr_zones(), 8u);
  EXPECT_TRUE(dev->limits().features & iov::BLK_FEAT_ZONED);
  EXPECT_EQ(dev->limits().chunk_sectors, Z);
  EXPECT_EQ(zone(*dev, 0), (iov::blk_zone{0, Z, Z, iov::BLK_ZONE_TYPE_CONVENTIONAL, iov::BLK_ZONE_COND_NOT_WP, Z}));
  EXPECT_EQ(zone(*dev, 2),
            (iov::blk_zone{2 * Z, Z, 2 * Z, iov::BLK_ZONE_TYPE_SEQWRITE_REQ, iov::BLK_ZONE_COND_EMPTY, Z}));
  std::vector<iov::blk_zone> zones;
  EXPECT_EQ(dev->report_zones(3 * Z + 5, 3, &zones), 3);  // from the zone holding the sector
  EXPECT_EQ(zones.front().start, 3 * Z);
  zones.clear();
  EXPECT_EQ(dev->report_zones(7 * Z, 5, &zones), 1);
  EXPECT_EQ(dev->report_zones(8 * Z, 5, &zones), 0);
  EXPECT_FALSE(dev->config().discard);  // ignored in zoned mode
}

TEST(NullBlkZoned, TransitionsAndErrors) {
  auto dev = make_nullb({.size = 8 * kMiB, .memory_backed = true, .zoned = true, .zone_size = 1, .zone_nr_conv = 2});
  const uint64_t z2 = 2 * Z, z3 = 3 * Z;
  ASSERT_EQ(write_fill(*dev, z2, 8, 0x21), 0);
  EXPECT_EQ(zone(*dev, 2).cond, iov::BLK_ZONE_COND_IMP_OPEN);
  EXPECT_EQ(zone(*dev, 2).wp, z2 + 8);
  EXPECT_EQ(write_fill(*dev, z2, 8, 0x22), -EIO);      // behind the write pointer
  EXPECT_EQ(write_fill(*dev, z2 + 16, 8, 0x22), -EIO);  // ahead of it
  EXPECT_EQ(zone(*dev, 2).wp, z2 + 8);

  EXPECT_EQ(mgmt(*dev, ZoneOp::close, z2), 0);
  EXPECT_EQ(zone(*dev, 2).cond, iov::BLK_ZONE_COND_CLOSED);
  EXPECT_EQ(mgmt(*dev, ZoneOp::close, z2), 0);  // closing a closed zone is no error
  ASSERT_EQ(write_fill(*dev, z2 + 8, 8, 0x23), 0);
  EXPECT_EQ(zone(*dev, 2).cond, iov::BLK_ZONE_COND_IMP_OPEN);
  EXPECT_EQ(mgmt(*dev, ZoneOp::open, z2), 0);
  EXPECT_EQ(zone(*dev, 2).cond, iov::BLK_ZONE_COND_EXP_OPEN);
  EXPECT_EQ(mgmt(*dev, ZoneOp::open, z2), 0);

  EXPECT_EQ(mgmt(*dev, ZoneOp::finish, z2), 0);
  EXPECT_EQ(zone(*dev, 2).cond, iov::BLK_ZONE_COND_FULL);
  EXPECT_EQ(zone(*dev, 2).wp, z2 + Z);
  EXPECT_EQ(mgmt(*dev, ZoneOp::finish, z2), 0);
  EXPECT_EQ(mgmt(*dev, ZoneOp::open, z2), -EIO);
  EXPECT_EQ(mgmt(*dev, ZoneOp::close, z2), -EIO);
  EXPECT_EQ(write_fill(*dev, z2, 8, 0, nullptr, true), -EIO);  // append to a full zone
  // Below the finished zone's write pointer, what was never written reads as zeros.
  std::vector<unsigned char> want = filled_bytes(8 * 512, 0x21);
  for (unsigned char b : filled_bytes(8 * 512, 0x23)) want.push_back(b);
  for (unsigned char b : filled_bytes(16 * 512, 0)) want.push_back(b);
  EXPECT_EQ(read_range(*dev, z2, 32), want);

  EXPECT_EQ(mgmt(*dev, ZoneOp::reset, z2), 0);
  EXPECT_EQ(zone(*dev, 2).cond, iov::BLK_ZONE_COND_EMPTY);
  EXPECT_EQ(zone(*dev, 2).wp, z2);
  EXPECT_EQ(read_range(*dev, z2, 16), filled_bytes(16 * 512, 0xff));
  EXPECT_EQ(mgmt(*dev, ZoneOp::reset, z2), 0);
  EXPECT_EQ(dev->nr_pages(), 0u);  // the reset discarded the zone's blocks

  EXPECT_EQ(mgmt(*dev, ZoneOp::close, z3), -EIO);  // an empty zone is not open
  EXPECT_EQ(mgmt(*dev, ZoneOp::open, z3), 0);
  EXPECT_EQ(mgmt(*dev, ZoneOp::close, z3), 0);
  EXPECT_EQ(zone(*dev, 3).cond, iov::BLK_ZONE_COND_EMPTY);  // nothing was written

  for (ZoneOp op : {ZoneOp::open, ZoneOp::close, ZoneOp::finish, ZoneOp::reset})
    EXPECT_EQ(mgmt(*dev, op, Z), -EIO);  // conventional
  EXPECT_EQ(write_fill(*dev, 0, 8, 1, nullptr, true), -EIO);
  EXPECT_EQ(mgmt(*dev, ZoneOp::open, z3 + 8), -EINVAL);
  EXPECT_EQ(mgmt(*dev, ZoneOp::open, 8 * Z), -EINVAL);
}

TEST(NullBlkZoned, AppendReturnsWhereTheDataWent) {
  auto dev = make_nullb({.size = 8 * kMiB, .memory_backed = true, .zoned = true, .zone_size = 1, .zone_nr_conv = 2});
  uint64_t where = 0;
  ASSERT_EQ(write_fill(*dev, 4 * Z, 16, 0x41, &where, true), 0);
  EXPECT_EQ(where, 4 * Z);
  ASSERT_EQ(write_fill(*dev, 4 * Z, 8, 0x42, &where, true), 0);
  EXPECT_EQ(where, 4 * Z + 16);
  EXPECT_EQ(zone(*dev, 4).wp, 4 * Z + 24);
  EXPECT_EQ(write_fill(*dev, 4 * Z + 8, 8, 0, nullptr, true), -EIO);  // not a zone's start
  std::vector<unsigned char> want = filled_bytes(16 * 512, 0x41);
  for (unsigned char b : filled_bytes(8 * 512, 0x42)) want.push_back(b);
  for (unsigned char b : filled_bytes(8 * 512, 0xff)) want.push_back(b);
  EXPECT_EQ(read_range(*dev, 4 * Z, 32), want);
  EXPECT_EQ(mgmt(*dev, ZoneOp::reset_all, 0), 0);
  EXPECT_EQ(zone(*dev, 4).cond, iov::BLK_ZONE_COND_EMPTY);
  EXPECT_EQ(read_range(*dev, 4 * Z, 8), filled_bytes(8 * 512, 0xff));
}

TEST(NullBlkZoned, WritesAcrossZones) {
  auto dev = make_nullb({.size = 8 * kMiB, .memory_backed = true, .zoned = true, .zone_size = 1, .zone_nr_conv = 2});
  EXPECT_EQ(write_fill(*dev, Z - 8, 16, 7), 0);        // conventional into conventional
  EXPECT_EQ(write_fill(*dev, 2 * Z - 8, 16, 7), -EINVAL);  // conventional into sequential
  EXPECT_EQ(write_fill(*dev, 2 * Z, Z + 8, 7), -EIO);     // past the zone's capacity
  EXPECT_EQ(zone(*dev, 2).cond, iov::BLK_ZONE_COND_EMPTY);
  ASSERT_EQ(write_fill(*dev, 2 * Z, 8, 9), 0);
  // A read over conventional, written, unwritten and another zone's sectors.
  std::vector<unsigned char> got = read_range(*dev, 2 * Z - 16, 40);
  std::vector<unsigned char> want = filled_bytes(16 * 512, 0);  // the refused write left nothing
  for (unsigned char b : filled_bytes(8 * 512, 9)) want.push_back(b);
  for (unsigned char b : filled_bytes(16 * 512, 0xff)) want.push_back(b);
  EXPECT_EQ(got, want);
}

TEST(NullBlkZoned, ZoneCapacityBelowZoneSize) {
  // 2 MiB zones holding 1 MiB each; the last zone is 1 MiB long.
  auto dev = make_nullb({.size = 5 * kMiB, .blocksize = 4096, .memory_backed = true, .zoned = true,
                         .zone_size = 2, .zone_capacity = 1});
  EXPECT_EQ(dev->nr_zones(), 3u);
  EXPECT_EQ(zone(*dev, 2).len, Z);
  EXPECT_EQ(zone(*dev, 0).capacity, Z);
  ASSERT_EQ(write_fill(*dev, 0, Z, 0x55), 0);
  EXPECT_EQ(zone(*dev, 0).cond, iov::BLK_ZONE_COND_FULL);
  EXPECT_EQ(zone(*dev, 0).wp, Z);
  EXPECT_EQ(read_range(*dev, Z, 8), filled_bytes(8 * 512, 0xff));  // past the capacity
  EXPECT_EQ(write_fill(*dev, Z, 8, 1), -EIO);
  ASSERT_EQ(write_fill(*dev, 2 * Z, Z - 8, 0x66), 0);
  EXPECT_EQ(write_fill(*dev, 3 * Z - 8, 16, 1), -EIO);
  EXPECT_EQ(mgmt(*dev, ZoneOp::finish, 2 * Z), 0);
  EXPECT_EQ(zone(*dev, 1).wp, 4 * Z);  // start + len, not start + capacity
  EXPECT_EQ(read_range(*dev, 3 * Z - 8, 16), filled_bytes(16 * 512, 0));
}

// --- Open and active limits (ZBC / ZNS resource management) ---------------------

TEST(NullBlkZoned, OpenLimitClosesImplicitlyOpenZonesRoundRobin) {
  auto dev = make_nullb({.size = 8 * kMiB, .zoned = true, .zone_size = 1, .zone_max_open = 2});
  NullBlkModel model = model_of(*dev);
  uint64_t where;
  auto both_write = [&](unsigned z) {
    int err = write_fill(*dev, zone(*dev, z).wp, 8, 1);
    std::vector<unsigned char> data(8 * 512, 1);
    EXPECT_EQ(model.write(model.zones()[z].wp, data.data(), data.size(), false, &where), err);
    return err;
  };
  auto both_mgmt = [&](ZoneOp op, unsigned z) {
    int err = mgmt(*dev, op, z * Z);
    EXPECT_EQ(model.zone_mgmt(op, z * Z), err);
    return err;
  };
  auto cond = [&](unsigned z) { return zone(*dev, z).cond; };
  EXPECT_EQ(both_write(0), 0);
  EXPECT_EQ(both_write(1), 0);
  EXPECT_EQ(both_write(2), 0);  // closes zone 0, the first implicitly open one
  EXPECT_EQ(cond(0), iov::BLK_ZONE_COND_CLOSED);
  EXPECT_EQ(both_mgmt(ZoneOp::open, 3), 0);  // closes zone 1, the next
  EXPECT_EQ(cond(1), iov::BLK_ZONE_COND_CLOSED);
  EXPECT_EQ(cond(3), iov::BLK_ZONE_COND_EXP_OPEN);
  EXPECT_EQ(both_mgmt(ZoneOp::open, 4), 0);  // closes zone 2
  EXPECT_EQ(cond(2), iov::BLK_ZONE_COND_CLOSED);
  EXPECT_EQ(both_mgmt(ZoneOp::open, 5), -ETOOMANYREFS);  // two explicitly open: nothing to close
  EXPECT_EQ(cond(5), iov::BLK_ZONE_COND_EMPTY);
  EXPECT_EQ(both_write(0), -ETOOMANYREFS);
  EXPECT_EQ(cond(0), iov::BLK_ZONE_COND_CLOSED);
  EXPECT_EQ(both_mgmt(ZoneOp::close, 3), 0);
  EXPECT_EQ(cond(3), iov::BLK_ZONE_COND_EMPTY);  // nothing written: empty again
  EXPECT_EQ(both_write(0), 0);
  EXPECT_EQ(both_mgmt(ZoneOp::finish, 5), 0);  // from EMPTY: needs room, closes zone 0
  EXPECT_EQ(cond(0), iov::BLK_ZONE_COND_CLOSED);
  EXPECT_EQ(cond(5), iov::BLK_ZONE_COND_FULL);
  expect_zones(*dev, model);
}

TEST(NullBlkZoned, ActiveLimit) {
  auto dev = make_nullb({.size = 8 * kMiB, .zoned = true, .zone_size = 1, .zone_max_active = 3});
  EXPECT_EQ(dev->config().zone_max_open, 0u);
  for (unsigned z : {0u, 1u, 2u}) ASSERT_EQ(write_fill(*dev, z * Z, 8, 1), 0);
  EXPECT_EQ(write_fill(*dev, 3 * Z, 8, 1), -EOVERFLOW);
  EXPECT_EQ(mgmt(*dev, ZoneOp::close, 0), 0);
  EXPECT_EQ(write_fill(*dev, 3 * Z, 8, 1), -EOVERFLOW);  // closed zones are active too
  EXPECT_EQ(mgmt(*dev, ZoneOp::finish, 0), 0);
  EXPECT_EQ(write_fill(*dev, 3 * Z, 8, 1), 0);
  EXPECT_EQ(mgmt(*dev, ZoneOp::open, 4 * Z), -EOVERFLOW);
  EXPECT_EQ(mgmt(*dev, ZoneOp::reset, Z), 0);
  EXPECT_EQ(mgmt(*dev, ZoneOp::open, 4 * Z), 0);
}

TEST(NullBlkZoned, LimitsAreAdjustedAsTheKernelDoes) {
  auto a = make_nullb({.size = 8 * kMiB, .zoned = true, .zone_size = 1, .zone_nr_conv = 9,
                       .zone_max_open = 5, .zone_max_active = 3});
  EXPECT_EQ(a->config().zone_nr_conv, 7u);       // at least one sequential zone
  EXPECT_EQ(a->config().zone_max_active, 0u);    // >= the sequential zones: no limit
  EXPECT_EQ(a->config().zone_max_open, 0u);
  auto b = make_nullb({.size = 8 * kMiB, .zoned = true, .zone_size = 1, .zone_max_open = 5, .zone_max_active = 3});
  EXPECT_EQ(b->config().zone_max_open, 3u);  // no more open than active
}

// --- Rejected requests change nothing -----------------------------------------

TEST(NullBlkZoned, BadRequestsChangeNothing) {
  auto dev = make_nullb({.size = 4 * kMiB, .memory_backed = true, .zoned = true, .zone_size = 1,
                         .zone_nr_conv = 1, .max_pages = 40});
  std::mt19937_64 rng(3);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, 0, iov_test::random_blocks(64 * 512, rng), rng), 0);
  ASSERT_EQ(blk_write(*dev, Kind::ubuf, Z, iov_test::random_blocks(64 * 512, rng), rng), 0);
  ASSERT_EQ(mgmt(*dev, ZoneOp::finish, 3 * Z), 0);
  const std::vector<unsigned char> before = read_range(*dev, 0, dev->get_capacity());
  std::vector<iov::blk_zone> zones_before;
  dev->report_zones(0, 100, &zones_before);
  auto check = [&](const char* what, int got, int want) {
    SCOPED_TRACE(what);
    EXPECT_EQ(got, want);
    std::vector<iov::blk_zone> zones;
    dev->report_zones(0, 100, &zones);
    EXPECT_EQ(zones, zones_before);
    EXPECT_EQ(read_range(*dev, 0, dev->get_capacity()), before);
  };
  check("behind the write pointer", write_fill(*dev, Z, 8, 1), -EIO);
  check("ahead of the write pointer", write_fill(*dev, Z + 72, 8, 1), -EIO);
  check("to a full zone", write_fill(*dev, 3 * Z + 8, 8, 1), -EIO);
  check("append to a full zone", write_fill(*dev, 3 * Z, 8, 1, nullptr, true), -EIO);
  check("past the zone's capacity", write_fill(*dev, Z + 64, Z, 1), -EIO);
  check("past the end", write_fill(*dev, 4 * Z, 8, 1), -EIO);
  check("past max_pages", write_fill(*dev, 2 * Z, 33 * 8, 1), -ENOSPC);
  check("open inside a zone", mgmt(*dev, ZoneOp::open, 2 * Z + 1), -EINVAL);
  iov::blk_request discard{.op = iov::REQ_OP_DISCARD, .sector = 2 * Z, .nr_sectors = 8};
  check("discard", dev->submit(discard), -EOPNOTSUPP);
  iov::blk_request zeroes{.op = iov::REQ_OP_WRITE_ZEROES, .sector = 2 * Z, .nr_sectors = 8};
  check("write zeroes", dev->submit(zeroes), -EOPNOTSUPP);
  EXPECT_EQ(dev->limits().max_write_zeroes_sectors, 0u);
  check("open a full zone", mgmt(*dev, ZoneOp::open, 3 * Z), -EIO);
  check("close an empty zone", mgmt(*dev, ZoneOp::close, 2 * Z), -EIO);
  check("open past the end", mgmt(*dev, ZoneOp::open, 4 * Z), -EINVAL);
  check("reset a conventional zone", mgmt(*dev, ZoneOp::reset, 0), -EIO);
  EXPECT_EQ(write_fill(*dev, 2 * Z, 24 * 8, 1), 0);  // 16 + 24 pages: within the budget
  EXPECT_EQ(dev->nr_pages(), 40u);
}

// --- Random sequences against the model ---------------------------------------

class NullBlkZonedRandom : public ::testing::TestWithParam<iov_test::NullBlkRandomParam> {};

TEST_P(NullBlkZonedRandom, MatchesModel) {
  const auto [bs, cache, kind] = GetParam();
  // 512: six 1 MiB zones, one conventional, at most 2 open and 4 active.
  // 4096: 2 MiB zones holding 1 MiB, a short last zone, no limits.
  const iov::null_blk_config c =
      bs == 512 ? iov::null_blk_config{.size = 6 * kMiB, .blocksize = bs, .memory_backed = true,
                                       .cache_size = cache ? 1ul : 0ul, .zoned = true, .zone_size = 1,
                                       .zone_nr_conv = 1, .zone_max_open = 2, .zone_max_active = 4}
                : iov::null_blk_config{.size = 5 * kMiB, .blocksize = bs, .memory_backed = true,
                                       .cache_size = cache ? 1ul : 0ul, .zoned = true, .zone_size = 2,
                                       .zone_capacity = 1};
  for (uint64_t seed : iov_test::test_seeds({1})) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed * 31 + bs + cache + static_cast<int>(kind));
    auto dev = make_nullb(c);
    NullBlkModel model = model_of(*dev);
    const uint64_t cap = dev->get_capacity(), step = bs / 512, zsects = dev->limits().chunk_sectors;
    const unsigned nr_zones = dev->nr_zones();
    for (int i = 0; i < 70; i++) {
      SCOPED_TRACE(i);
      iov_test::set_copy_form(*dev, i);
      const unsigned zn = rng() % nr_zones;
      const iov_test::ModelZone& mz = model.zones()[zn];
      const uint64_t nr = std::min<uint64_t>(step * (1 + (rng() % 4 ? rng() % 16 : rng() % (96 * 1024 / bs))),
                                             cap - mz.start);
      switch (rng() % 12) {
        case 0: case 1: case 2: case 3: case 4: {  // a write, mostly at the write pointer
          uint64_t sector = mz.conventional || rng() % 5 == 0 ? mz.start + rng() % (mz.len / step) * step : mz.wp;
          if (sector >= cap) break;
          const uint64_t n = std::min(nr, cap - sector);
          std::vector<unsigned char> data = iov_test::random_blocks(n * 512, rng);
          uint64_t want_where;
          int want = model.write(sector, data.data(), data.size(), false, &want_where);
          ASSERT_EQ(blk_write(*dev, kind, sector, data, rng), want);
          break;
        }
        case 5: {
          std::vector<unsigned char> data = iov_test::random_blocks(nr * 512, rng);
          uint64_t where = 0, want_where = 0;
          int want = model.write(mz.start, data.data(), data.size(), true, &want_where);
          ASSERT_EQ(blk_zone_append(*dev, kind, mz.start, data, rng, &where), want);
          if (!want) {
            EXPECT_EQ(where, want_where);
          }
          break;
        }
        case 6: case 7: case 8: {  // a read, possibly across zones
          const uint64_t sector = rng() % (cap / step) * step;
          const uint64_t n = std::min(nr + zsects / 2 * (rng() % 2), cap - sector);
          ASSERT_EQ(read(*dev, kind, sector, n * 512, rng), model.read(sector * 512, n * 512));
          break;
        }
        case 9: case 10: {
          const ZoneOp op = static_cast<ZoneOp>(rng() % 5);
          ASSERT_EQ(mgmt(*dev, op, mz.start), model.zone_mgmt(op, mz.start));
          break;
        }
        default: {
          iov::blk_request flush{.op = iov::REQ_OP_FLUSH};
          ASSERT_EQ(dev->submit(flush), 0);
          const uint64_t sector = rng() % (cap / step) * step, n = std::min(nr, cap - sector);
          uint32_t crc = static_cast<uint32_t>(rng());
          const uint32_t want = model.crc32c(crc, sector * 512, n * 512);
          ASSERT_EQ(dev->crc32c(sector, n, &crc), 0);
          EXPECT_EQ(crc, want);
        }
      }
      ASSERT_NO_FATAL_FAILURE(expect_zones(*dev, model));
      if (i % 35 == 34) {
        ASSERT_EQ(read_range(*dev, 0, cap), model.read(0, cap * 512));
        ASSERT_EQ(blk_extents(*dev, 0, cap), model.extents(0, cap));
        ASSERT_EQ(blk_extents(*dev, 0, cap, iov::BLK_MAP_ALLOCATION), model.extents(0, cap, true));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, NullBlkZonedRandom, iov_test::null_blk_random_params(),
                         iov_test::null_blk_random_name);

}  // namespace
