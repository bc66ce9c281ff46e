// Tests of blkdev::submit_batch (src/drivers/common/blkdev.cc, brd's
// prefetch_requests in src/drivers/brd/brd.cc): a batch has the outcome of
// the same submit() calls one after the other. The reference is a twin
// device driven one request at a time (itself checked against a flat model
// in brd_test and null_blk_test), fed the same random batches of every
// operation, valid or not, across several prefetch windows: the same return
// value and message for each request, the same bytes in each READ's buffer,
// the same disk at the end.
//
//   ctest -R blkdev_batch_test
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "iov/iov.hpp"
#include "iov_drivers/brd.hpp"
#include "iov_drivers/null_blk.hpp"
#include "support/blkdev_fixture.hpp"

namespace {

using bytes = std::vector<unsigned char>;
using iov_test::blk_read_all;

// One request of a batch and the buffer behind its iterator.
struct planned {
  iov::blk_request rq;
  bytes buf;
  iov::iov_iter it;
};

// n random requests on a device of `sectors` sectors whose logical block is
// `block` bytes: mostly READs and WRITEs, some beyond the end or misaligned,
// with DISCARD, WRITE_ZEROES, FLUSH and an operation no device offers.
std::vector<planned> random_batch(size_t n, uint64_t sectors, unsigned block, std::mt19937_64& rng) {
  std::vector<planned> out(n);
  const uint64_t per_block = block / iov::SECTOR_SIZE;
  for (planned& p : out) {
    const unsigned pick = static_cast<unsigned>(rng() % 20);
    uint64_t sector = rng() % sectors / per_block * per_block;
    if (pick == 0) sector = sectors - per_block + (rng() % 2 ? per_block : 0);  // the last block, or past the end
    if (pick == 1 && per_block > 1) sector += 1;                             // misaligned
    const size_t len = (1 + rng() % (3 * iov::PAGE_SIZE / block)) * block;
    if (pick < 10) {
      p.rq = {.op = iov::REQ_OP_WRITE, .sector = sector};
      p.buf.resize(len);
      for (auto& c : p.buf) c = static_cast<unsigned char>(rng() % 4 ? rng() : 0);
    } else if (pick < 16) {
      p.rq = {.op = iov::REQ_OP_READ, .sector = sector};
      p.buf.assign(len, 0xee);
    } else if (pick < 18) {
      p.rq = {.op = pick == 16 ? iov::REQ_OP_DISCARD : iov::REQ_OP_WRITE_ZEROES, .sector = sector,
              .nr_sectors = (1 + rng() % 16) * per_block};
      if (rng() % 2) p.rq.flags = iov::REQ_NOUNMAP;
    } else if (pick == 18) {
      p.rq = {.op = iov::REQ_OP_FLUSH};
    } else {
      p.rq = {.op = iov::REQ_OP_ZONE_OPEN, .sector = sector};
    }
  }
  return out;
}

// The batch's iterators, made afresh over each request's buffer.
void arm(std::vector<planned>& batch) {
  for (planned& p : batch) {
    p.rq.error = nullptr;
    if (p.rq.op == iov::REQ_OP_READ || p.rq.op == iov::REQ_OP_WRITE) {
      iov::iov_iter_ubuf(&p.it, p.rq.op == iov::REQ_OP_READ ? iov::ITER_DEST : iov::ITER_SOURCE, p.buf.data(),
                         p.buf.size());
      p.rq.iter = &p.it;
    }
  }
}

// Runs random batches of up to 40 requests (more than two windows of 16)
// on `batched` and one by one on `single`, the two made alike.
void expect_batches_match(iov::blkdev& batched, iov::blkdev& single, unsigned block, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint64_t sectors = batched.get_capacity();
  int failures = 0;
  for (int round = 0; round < 60; round++) {
    iov_test::set_copy_form(batched, round);
    iov_test::set_copy_form(single, round);
    std::vector<planned> a = random_batch(rng() % 41, sectors, block, rng);
    std::vector<planned> b = a;
    arm(a);
    arm(b);
    std::vector<iov::blk_request> rqs;
    for (planned& p : a) rqs.push_back(p.rq);
    std::vector<int> results(rqs.size(), 12345);
    const int ret = batched.submit_batch(rqs, results);
    int first = 0;
    for (size_t i = 0; i < b.size(); i++) {
      const int want = single.submit(b[i].rq);
      SCOPED_TRACE(testing::Message() << "round " << round << " request " << i << " ("
                                      << iov::req_op_name(b[i].rq.op) << " at " << b[i].rq.sector << ")");
      ASSERT_EQ(results[i], want);
      if (want) {
        failures++;
        ASSERT_NE(rqs[i].error, nullptr);
        EXPECT_STREQ(rqs[i].error, b[i].rq.error);
        if (!first) first = want;
      }
      EXPECT_EQ(a[i].buf, b[i].buf);
      if (b[i].rq.iter) {
        EXPECT_EQ(iov::iov_iter_count(a[i].rq.iter), iov::iov_iter_count(b[i].rq.iter));
      }
    }
    ASSERT_EQ(ret, first);
  }
  EXPECT_GT(failures, 10);  // the refused requests were exercised too
  EXPECT_EQ(blk_read_all(batched), blk_read_all(single));
}

TEST(BlkdevBatch, BrdMatchesOneByOne) {
  for (auto dz : {iov::detect_zeroes::off, iov::detect_zeroes::unmap}) {
    const iov::brd_config c{.size = 2 << 20, .detect_zeroes = dz};
    auto a = iov_test::make_brd(c), b = iov_test::make_brd(c);
    expect_batches_match(*a, *b, iov::SECTOR_SIZE, 41 + static_cast<int>(dz));
    EXPECT_EQ(a->nr_pages(), b->nr_pages());
  }
  iov::rcu_barrier();
}

TEST(BlkdevBatch, NullBlkMatchesOneByOne) {
  for (unsigned bs : {512u, 4096u}) {
    const iov::null_blk_config c{.size = 2 << 20, .blocksize = bs, .memory_backed = true, .discard = true};
    auto a = iov_test::make_nullb(c), b = iov_test::make_nullb(c);
    expect_batches_match(*a, *b, bs, 43 + bs);
  }
}

// The reads of a batch see the writes before them in it, page by page; and
// the prefetch pass finds pages where there are none yet.
TEST(BlkdevBatch, BrdReadsSeeEarlierWritesOfTheBatch) {
  auto dev = iov_test::make_brd({.size = 1 << 20});
  bytes data(iov::PAGE_SIZE), got(iov::PAGE_SIZE, 0xee);
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<unsigned char>(i * 7 + 1);
  iov::iov_iter w, r;
  iov::iov_iter_ubuf(&w, iov::ITER_SOURCE, data.data(), data.size());
  iov::iov_iter_ubuf(&r, iov::ITER_DEST, got.data(), got.size());
  std::vector<iov::blk_request> rqs{{.op = iov::REQ_OP_WRITE, .sector = 64, .iter = &w},
                                    {.op = iov::REQ_OP_READ, .sector = 64, .iter = &r}};
  int results[2];
  ASSERT_EQ(dev->submit_batch(rqs, results), 0);
  EXPECT_EQ(results[0], 0);
  EXPECT_EQ(results[1], 0);
  EXPECT_EQ(got, data);
}

// prefetch_lookups is a hint: on an empty device, over stored pages and
// holes, at the end, beyond it and beyond the tree's reach, it changes no
// byte and no count; null_blk's does nothing.
TEST(BlkdevBatch, PrefetchLookupsChangesNothing) {
  auto dev = iov_test::make_brd({.size = 1 << 20});
  const iov::sector_t sectors[] = {0, 8, 9, 2040, 2047, 2048, iov::sector_t{1} << 40, ~iov::sector_t{0}};
  dev->prefetch_lookups(sectors);  // no tree yet
  dev->prefetch_lookups({});
  EXPECT_EQ(dev->nr_pages(), 0u);
  bytes model(1 << 20, 0), data(3 * iov::PAGE_SIZE);
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<unsigned char>(i * 11 + 5);
  iov::iov_iter w;
  iov::iov_iter_ubuf(&w, iov::ITER_SOURCE, data.data(), data.size());
  iov::blk_request wr{.op = iov::REQ_OP_WRITE, .sector = 8, .iter = &w};
  ASSERT_EQ(dev->submit(wr), 0);
  std::copy(data.begin(), data.end(), model.begin() + 8 * iov::SECTOR_SIZE);
  dev->prefetch_lookups(sectors);
  EXPECT_EQ(dev->nr_pages(), 3u);
  EXPECT_EQ(blk_read_all(*dev), model);
  auto nullb = iov_test::make_nullb({.size = 1 << 20, .memory_backed = true});
  nullb->prefetch_lookups(sectors);
  EXPECT_EQ(blk_read_all(*nullb), bytes(1 << 20, 0));
}

TEST(BlkdevBatch, AFailureStopsNothingAfterIt) {
  auto dev = iov_test::make_brd({.size = 1 << 20});
  bytes data(iov::PAGE_SIZE, 0x42);
  iov::iov_iter past, ok;
  iov::iov_iter_ubuf(&past, iov::ITER_SOURCE, data.data(), data.size());
  iov::iov_iter_ubuf(&ok, iov::ITER_SOURCE, data.data(), data.size());
  std::vector<iov::blk_request> rqs{{.op = iov::REQ_OP_WRITE, .sector = 2048, .iter = &past},
                                    {.op = iov::REQ_OP_WRITE, .sector = 8, .iter = &ok}};
  int results[2] = {1, 1};
  EXPECT_EQ(dev->submit_batch(rqs, results), -EIO);
  EXPECT_EQ(results[0], -EIO);
  EXPECT_NE(rqs[0].error, nullptr);
  EXPECT_EQ(results[1], 0);
  bytes disk = blk_read_all(*dev);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), disk.begin() + 8 * iov::SECTOR_SIZE));
}

TEST(BlkdevBatch, ShortResultsSubmitNothing) {
  auto dev = iov_test::make_brd({.size = 1 << 20});
  bytes data(iov::PAGE_SIZE, 0x42);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_SOURCE, data.data(), data.size());
  std::vector<iov::blk_request> rqs{{.op = iov::REQ_OP_WRITE, .sector = 0, .iter = &it},
                                    {.op = iov::REQ_OP_FLUSH}};
  int results[1] = {7};
  EXPECT_EQ(dev->submit_batch(rqs, std::span<int>(results, 1)), -EINVAL);
  EXPECT_EQ(results[0], 7);
  EXPECT_EQ(iov::iov_iter_count(&it), data.size());
  EXPECT_EQ(dev->nr_pages(), 0u);
  EXPECT_EQ(dev->submit_batch({}, {}), 0);
}

// A device that records, for each request it is given, whether the thread
// is inside an RCU read-side section.
class batch_rcu_recorder final : public iov::blkdev {
 public:
  batch_rcu_recorder() : blkdev(2048, iov::queue_limits{}) {}
  int submit(iov::blk_request& rq) override {
    seen.push_back({rq.op, iov::rcu_read_lock_held()});
    return 0;
  }
  const char* name() const override { return "batch_rcu_recorder"; }
  uint64_t nr_pages() const override { return 0; }
  std::vector<std::pair<iov::req_op, bool>> seen;
  std::vector<std::pair<size_t, size_t>> runs;  // (index of the first request seen, length)

 protected:
  void submit_reads(std::span<iov::blk_request> rqs, int* results) override {
    runs.push_back({seen.size(), rqs.size()});
    blkdev::submit_reads(rqs, results);
  }
  int do_crc32c(iov::sector_t, iov::sector_t, uint32_t*, const char**) override { return -EOPNOTSUPP; }
  int do_map_extents(iov::sector_t, iov::sector_t, std::vector<iov::blk_extent>*, const char**, unsigned) override {
    return -EOPNOTSUPP;
  }
};

// Runs of READs go through one read-side section (each driver's per-page
// section nests in it); every other operation, which may wait for a grace
// period, runs outside any; none is left open. Random mixes over several
// windows, runs crossing a window's end included.
TEST(BlkdevBatch, OnlyReadsRunInsideTheBatchsReadSection) {
  std::mt19937_64 rng(47);
  const iov::req_op ops[] = {iov::REQ_OP_READ, iov::REQ_OP_WRITE, iov::REQ_OP_DISCARD, iov::REQ_OP_FLUSH,
                             iov::REQ_OP_WRITE_ZEROES};
  for (size_t n : {1u, 2u, 15u, 16u, 17u, 40u, 100u}) {
    batch_rcu_recorder dev;
    std::vector<iov::blk_request> rqs(n);
    for (auto& rq : rqs) rq.op = rng() % 2 ? iov::REQ_OP_READ : ops[rng() % std::size(ops)];
    std::vector<int> results(n, 1);
    ASSERT_FALSE(iov::rcu_read_lock_held());
    EXPECT_EQ(dev.submit_batch(rqs, results), 0);
    EXPECT_FALSE(iov::rcu_read_lock_held()) << "a section left open after " << n << " requests";
    ASSERT_EQ(dev.seen.size(), n);
    for (size_t i = 0; i < n; i++) {
      EXPECT_EQ(dev.seen[i].first, rqs[i].op);
      EXPECT_EQ(dev.seen[i].second, rqs[i].op == iov::REQ_OP_READ)
          << "request " << i << " of " << n << " (" << iov::req_op_name(rqs[i].op) << ")";
      EXPECT_EQ(results[i], 0);
    }
    // submit_reads was given each window's maximal runs of READs, whole.
    std::vector<std::pair<size_t, size_t>> want;
    for (size_t i = 0; i < n; i++) {
      if (rqs[i].op != iov::REQ_OP_READ) continue;
      if (i % 16 == 0 || rqs[i - 1].op != iov::REQ_OP_READ)
        want.push_back({i, 1});
      else
        want.back().second++;
    }
    EXPECT_EQ(dev.runs, want) << n << " requests";
  }
}

// A READ after a WRITE of the same window sees it, one before does not:
// brd looks a run's pages up before copying them, and a WRITE ends a run.
TEST(BlkdevBatch, BrdReadRunsEndAtAWrite) {
  auto dev = iov_test::make_brd({.size = 1 << 20});
  bytes data(iov::PAGE_SIZE), before(iov::PAGE_SIZE, 0xee), after(iov::PAGE_SIZE, 0xee), other(512, 0xee);
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<unsigned char>(i * 5 + 3);
  iov::iov_iter w, r0, r1, r2;
  iov::iov_iter_ubuf(&w, iov::ITER_SOURCE, data.data(), data.size());
  iov::iov_iter_ubuf(&r0, iov::ITER_DEST, before.data(), before.size());
  iov::iov_iter_ubuf(&r1, iov::ITER_DEST, after.data(), after.size());
  iov::iov_iter_ubuf(&r2, iov::ITER_DEST, other.data(), other.size());
  std::vector<iov::blk_request> rqs{{.op = iov::REQ_OP_READ, .sector = 16, .iter = &r0},
                                    {.op = iov::REQ_OP_WRITE, .sector = 16, .iter = &w},
                                    {.op = iov::REQ_OP_READ, .sector = 23, .iter = &r2},
                                    {.op = iov::REQ_OP_READ, .sector = 16, .iter = &r1}};
  int results[4] = {1, 1, 1, 1};
  ASSERT_EQ(dev->submit_batch(rqs, results), 0);
  for (int r : results) EXPECT_EQ(r, 0);
  EXPECT_EQ(before, bytes(iov::PAGE_SIZE, 0));  // an absent page reads as zeros
  EXPECT_EQ(after, data);
  EXPECT_TRUE(std::equal(other.begin(), other.end(), data.begin() + 7 * 512));
}

}  // namespace
