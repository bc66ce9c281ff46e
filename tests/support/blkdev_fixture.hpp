// blkdev_fixture.hpp: what the drivers' tests share to drive a device (brd,
// null_blk, zoned or not): devices made from a config, requests whose data
// goes through an iterator of any kind over a buffer cut at random, the
// device's map as the model's extents, and the parameters of the random
// sequences. The request helpers check what holds for every request (a
// failure says why; a success consumes the iterator; nothing is written
// outside the buffer), so that a test checks only what is particular to it.
//
//   auto dev = iov_test::make_brd({.size = 1 << 20});
//   std::mt19937_64 rng(1);
//   ASSERT_EQ(iov_test::blk_write(*dev, Kind::bvec, 8, data, rng), 0);
//   std::vector<unsigned char> got;
//   ASSERT_EQ(iov_test::blk_read(*dev, Kind::iovec, 8, data.size(), &got, rng), 0);
//
// Header-only: it needs the drivers' headers, which the test programs have
// and the support library does not.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "iov/iov.hpp"
#include "iov_drivers/brd.hpp"
#include "iov_drivers/null_blk.hpp"
#include "support/disk_model.hpp"
#include "support/model.hpp"

namespace iov_test {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;

// The device a test asked for; failing to make it fails the test.
template <class Device>
std::unique_ptr<Device> made(absl::StatusOr<std::unique_ptr<Device>> dev) {
  EXPECT_TRUE(dev.ok()) << dev.status();
  return dev.ok() ? std::move(*dev) : nullptr;
}
inline std::unique_ptr<iov::brd_device> make_brd(const iov::brd_config& c) {
  return made(iov::brd_device::create(c));
}
inline std::unique_ptr<iov::nullb_device> make_nullb(const iov::null_blk_config& c) {
  return made(iov::nullb_device::create(c));
}

// Every copy form in turn, by the request's number i: a device reads its
// settings once per request, so they may change between any two.
inline void set_copy_form(iov::blkdev& dev, int i) {
  static constexpr iov::copy_mode kModes[] = {iov::copy_mode::modern, iov::copy_mode::legacy, iov::copy_mode::nocache};
  dev.set_copy_mode(kModes[i % 3]);
  dev.set_iteration(i / 3 % 2 ? iov::iteration_mode::outofline : iov::iteration_mode::inlined);
}

// A request's buffer of len bytes behind an iterator of the given kind, cut
// at random (segments at any offset; an XARRAY starting anywhere in its
// first pages).
inline std::unique_ptr<Layout> request_layout(Kind kind, size_t len, std::mt19937_64& rng) {
  std::vector<SegSpec> segs;
  auto cut = [&](size_t max_offset) {
    for (Segment s : random_segments(len, rng, max_offset)) segs.push_back({s.len, s.offset});
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

// What every data request leaves: a failure says why, a success consumed the
// iterator, and nothing outside the buffer was written.
inline void expect_data_request_done(int err, const iov::blk_request& rq, const iov::iov_iter& it, const Layout& l) {
  if (err) {
    EXPECT_NE(rq.error, nullptr) << "error " << err << " without a reason";
  } else {
    EXPECT_EQ(iov::iov_iter_count(&it), 0u);
  }
  EXPECT_TRUE(l.guards_intact());
}

// Submits rq, a WRITE or ZONE_APPEND, with data behind an iterator of `kind`;
// rq keeps what the device set (error, an append's sector).
inline int submit_write(iov::blkdev& dev, iov::blk_request& rq, Kind kind, const std::vector<unsigned char>& data,
                        std::mt19937_64& rng) {
  auto l = request_layout(kind, data.size(), rng);
  l->scatter(data);
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  rq.iter = &it;
  const int err = dev.submit(rq);
  rq.iter = nullptr;
  expect_data_request_done(err, rq, it, *l);
  return err;
}

inline int blk_write(iov::blkdev& dev, Kind kind, uint64_t sector, const std::vector<unsigned char>& data,
                     std::mt19937_64& rng, iov::blk_opf_t flags = 0) {
  iov::blk_request rq{.op = iov::REQ_OP_WRITE, .flags = flags, .sector = sector};
  return submit_write(dev, rq, kind, data, rng);
}

// A ZONE_APPEND to the zone starting at `sector`; *where gets the sector the
// device put the data at.
inline int blk_zone_append(iov::blkdev& dev, Kind kind, uint64_t sector, const std::vector<unsigned char>& data,
                           std::mt19937_64& rng, uint64_t* where = nullptr) {
  iov::blk_request rq{.op = iov::REQ_OP_ZONE_APPEND, .sector = sector};
  const int err = submit_write(dev, rq, kind, data, rng);
  if (where) *where = rq.sector;
  return err;
}

// A READ of len bytes into a buffer behind an iterator of `kind`; *out gets
// the buffer's bytes, whatever the result.
inline int blk_read(iov::blkdev& dev, Kind kind, uint64_t sector, size_t len, std::vector<unsigned char>* out,
                    std::mt19937_64& rng) {
  auto l = request_layout(kind, len, rng);
  iov::iov_iter it = l->iter(iov::ITER_DEST);
  iov::blk_request rq{.op = iov::REQ_OP_READ, .sector = sector, .iter = &it};
  const int err = dev.submit(rq);
  expect_data_request_done(err, rq, it, *l);
  *out = l->gather();
  return err;
}

// The whole device in one READ, into a buffer that starts as 0x5a so that
// bytes a read failed to write would show.
inline std::vector<unsigned char> blk_read_all(iov::blkdev& dev) {
  std::vector<unsigned char> buf(dev.get_capacity() * 512, 0x5a);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, buf.data(), buf.size());
  iov::blk_request rq{.op = iov::REQ_OP_READ, .sector = 0, .iter = &it};
  EXPECT_EQ(dev.submit(rq), 0);
  return buf;
}

// A request without data: FLUSH, DISCARD, WRITE_ZEROES or zone management.
inline int blk_no_data(iov::blkdev& dev, iov::req_op op, uint64_t sector = 0, uint64_t nr = 0,
                       iov::blk_opf_t flags = 0) {
  iov::blk_request rq{.op = op, .flags = flags, .sector = sector, .nr_sectors = nr};
  const int err = dev.submit(rq);
  if (err) {
    EXPECT_NE(rq.error, nullptr) << iov::req_op_name(op) << ": error " << err << " without a reason";
  }
  return err;
}

// The device's map of the range (`how`: map_extents's), as the model states extents.
inline std::vector<ModelExtent> blk_extents(iov::blkdev& dev, uint64_t sector, uint64_t nr, unsigned how = 0) {
  std::vector<iov::blk_extent> map;
  EXPECT_EQ(dev.map_extents(sector, nr, &map, nullptr, how), 0);
  std::vector<ModelExtent> out;
  for (const iov::blk_extent& e : map) out.push_back({e.sector, e.nr_sectors, e.flags});
  return out;
}

// A request the device must refuse: its data, len bytes (0: none), come
// from or go to a ubuf iterator of direction dir; err is the refusal.
struct BadRequest {
  const char* what;
  iov::req_op op;
  uint64_t sector, nr;
  size_t len;
  unsigned dir;
  int err;
  iov::blk_opf_t flags = 0;
};

// Submits each case with its data in buf, and checks that it is refused with
// its error and a reason, leaves its iterator where it was, and changes
// neither the pages the device holds nor a byte of what it reads back.
inline void expect_refused_unchanged(iov::blkdev& dev, const std::vector<BadRequest>& cases,
                                     std::vector<unsigned char>& buf) {
  const std::vector<unsigned char> before = blk_read_all(dev);
  const uint64_t pages = dev.nr_pages();
  for (const BadRequest& b : cases) {
    SCOPED_TRACE(b.what);
    iov::iov_iter it;
    iov::iov_iter_ubuf(&it, b.dir, buf.data(), b.len);
    iov::blk_request rq{.op = b.op, .flags = b.flags, .sector = b.sector, .nr_sectors = b.nr,
                        .iter = b.len ? &it : nullptr};
    EXPECT_EQ(dev.submit(rq), b.err);
    ASSERT_NE(rq.error, nullptr);
    const absl::Status status = iov::blk_status(b.err, rq.error);
    EXPECT_FALSE(status.ok());
    EXPECT_NE(std::string(status.message()).find(rq.error), std::string::npos) << status;
    EXPECT_EQ(iov::iov_iter_count(&it), b.len);  // not advanced
    EXPECT_EQ(dev.nr_pages(), pages);
    ASSERT_EQ(blk_read_all(dev), before);
  }
}

// The iterator kinds a request's data may come in (DISCARD carries none).
inline auto request_kinds() { return ::testing::Values(Kind::ubuf, Kind::iovec, Kind::kvec, Kind::bvec, Kind::xarray); }

// null_blk's random sequences, zoned or not, run for each block size, with
// and without the write-back cache, and for each request kind.
using NullBlkRandomParam = std::tuple<unsigned /*blocksize*/, bool /*cache*/, Kind>;
inline auto null_blk_random_params() {
  return ::testing::Combine(::testing::Values(512u, 4096u), ::testing::Bool(), request_kinds());
}
inline std::string null_blk_random_name(const ::testing::TestParamInfo<NullBlkRandomParam>& info) {
  return "bs" + std::to_string(std::get<0>(info.param)) + (std::get<1>(info.param) ? "_cache_" : "_nocache_") +
         kind_name(std::get<2>(info.param));
}

}  // namespace iov_test
