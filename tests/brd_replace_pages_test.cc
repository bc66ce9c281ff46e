// Tests of blkdev::replace_pages on brd (src/drivers/brd/brd.cc): whole pages
// handed to the device instead of copied, checked against a flat model of
// the disk; the device's WRITE rules (page budget, zero detection) as a copy
// would apply them; a lent page keeps its old bytes after it is replaced;
// and the device takes the pages whatever the outcome (the sanitizer builds
// see a page lost or freed twice).
//
//   ctest -R brd_replace_pages_test
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "iov/iov.hpp"
#include "iov_drivers/brd.hpp"
#include "iov_drivers/null_blk.hpp"
#include "support/blkdev_fixture.hpp"

namespace {

using bytes = std::vector<unsigned char>;
using iov_test::blk_read_all;
using iov_test::make_brd;

// n pages from the allocator, page i filled from data at i * PAGE_SIZE.
std::vector<iov::page*> pages_of(const bytes& data) {
  std::vector<iov::page*> pages;
  for (size_t off = 0; off < data.size(); off += iov::PAGE_SIZE) {
    iov::page* pg = iov::alloc_page(iov::GFP_KERNEL);
    EXPECT_NE(pg, nullptr);
    std::memcpy(iov::page_address(pg), data.data() + off, iov::PAGE_SIZE);
    pages.push_back(pg);
  }
  return pages;
}

bytes random_bytes(size_t n, std::mt19937_64& rng) {
  bytes b(n);
  for (auto& c : b) c = static_cast<unsigned char>(rng());
  return b;
}

int replace(iov::blkdev& dev, iov::pgoff_t index, const bytes& data, const char** why = nullptr) {
  auto pages = pages_of(data);
  return dev.replace_pages(index, pages.data(), static_cast<unsigned>(pages.size()), why);
}

void write_bytes(iov::blkdev& dev, uint64_t offset, const bytes& data) {
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_SOURCE, const_cast<unsigned char*>(data.data()), data.size());
  iov::blk_request rq{.op = iov::REQ_OP_WRITE, .sector = offset >> iov::SECTOR_SHIFT, .iter = &it};
  ASSERT_EQ(dev.submit(rq), 0);
}

TEST(BrdReplacePages, RandomReplacementsMatchAFlatModel) {
  constexpr size_t kPages = 64;
  auto dev = make_brd({.size = kPages * iov::PAGE_SIZE});
  ASSERT_TRUE(dev->can_replace_pages());
  bytes model(kPages * iov::PAGE_SIZE, 0);
  std::mt19937_64 rng(21);
  for (int i = 0; i < 200; i++) {
    const size_t first = rng() % kPages, n = 1 + rng() % std::min<size_t>(8, kPages - first);
    bytes data = random_bytes(n * iov::PAGE_SIZE, rng);
    if (i % 3 == 0) {  // through the copy path now and then, so that both meet
      write_bytes(*dev, first * iov::PAGE_SIZE, data);
    } else {
      ASSERT_EQ(replace(*dev, first, data), 0);
    }
    std::memcpy(model.data() + first * iov::PAGE_SIZE, data.data(), data.size());
  }
  EXPECT_EQ(blk_read_all(*dev), model);
  EXPECT_LE(dev->nr_pages(), kPages);
  iov::rcu_barrier();  // the replaced pages are freed after the grace period
}

TEST(BrdReplacePages, CountsOnlyPagesItAdds) {
  auto dev = make_brd({.size = 16 * iov::PAGE_SIZE});
  std::mt19937_64 rng(22);
  ASSERT_EQ(replace(*dev, 2, random_bytes(3 * iov::PAGE_SIZE, rng)), 0);
  EXPECT_EQ(dev->nr_pages(), 3u);
  ASSERT_EQ(replace(*dev, 3, random_bytes(3 * iov::PAGE_SIZE, rng)), 0);  // 3 and 4 replaced, 5 added
  EXPECT_EQ(dev->nr_pages(), 4u);
  iov::rcu_barrier();
}

TEST(BrdReplacePages, LentPageKeepsItsOldBytesUntilReleased) {
  auto dev = make_brd({.size = 8 * iov::PAGE_SIZE});
  std::mt19937_64 rng(23);
  const bytes old = random_bytes(iov::PAGE_SIZE, rng), fresh = random_bytes(iov::PAGE_SIZE, rng);
  ASSERT_EQ(replace(*dev, 1, old), 0);
  iov::blk_lease lease;
  ASSERT_EQ(dev->lend_pages(8, 8, &lease), 0);
  ASSERT_EQ(lease.pieces().size(), 1u);
  ASSERT_EQ(replace(*dev, 1, fresh), 0);
  const unsigned char* lent = iov::bvec_virt(&lease.pieces()[0]);
  EXPECT_TRUE(std::equal(old.begin(), old.end(), lent)) << "the lent page changed under its reader";
  lease.release();
  bytes all = blk_read_all(*dev);
  EXPECT_TRUE(std::equal(fresh.begin(), fresh.end(), all.begin() + iov::PAGE_SIZE));
  iov::rcu_barrier();
}

TEST(BrdReplacePages, BudgetRefusesWithNothingChanged) {
  auto dev = make_brd({.size = 16 * iov::PAGE_SIZE, .max_pages = 4});
  std::mt19937_64 rng(24);
  ASSERT_EQ(replace(*dev, 0, random_bytes(3 * iov::PAGE_SIZE, rng)), 0);
  const bytes before = blk_read_all(*dev);
  const char* why = nullptr;
  EXPECT_EQ(replace(*dev, 2, random_bytes(3 * iov::PAGE_SIZE, rng), &why), -ENOSPC);  // 2 new, 1 left
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::strstr(why, "max_pages"), nullptr) << why;
  EXPECT_EQ(blk_read_all(*dev), before);
  EXPECT_EQ(dev->nr_pages(), 3u);
  ASSERT_EQ(replace(*dev, 1, random_bytes(3 * iov::PAGE_SIZE, rng)), 0);  // 1, 2 replaced, 3 added: 4
  EXPECT_EQ(dev->nr_pages(), 4u);
  // A discard gives the budget back, as for pages a copy stored.
  iov::blk_request d{.op = iov::REQ_OP_DISCARD, .sector = 0, .nr_sectors = 32};
  ASSERT_EQ(dev->submit(d), 0);
  EXPECT_EQ(dev->nr_pages(), 0u);
  EXPECT_EQ(replace(*dev, 8, random_bytes(4 * iov::PAGE_SIZE, rng)), 0);
  iov::rcu_barrier();
}

TEST(BrdReplacePages, ZeroDetectionAsACopyWouldApplyIt) {
  const bytes zeros(iov::PAGE_SIZE, 0);
  std::mt19937_64 rng(25);
  const bytes data = random_bytes(iov::PAGE_SIZE, rng);
  {  // on: zeros into an absent page store nothing; into a present one, clear it
    auto dev = make_brd({.size = 8 * iov::PAGE_SIZE, .detect_zeroes = iov::detect_zeroes::on});
    ASSERT_EQ(replace(*dev, 0, zeros), 0);
    EXPECT_EQ(dev->nr_pages(), 0u);
    ASSERT_EQ(replace(*dev, 1, data), 0);
    ASSERT_EQ(replace(*dev, 1, zeros), 0);
    EXPECT_EQ(dev->nr_pages(), 1u);
    EXPECT_EQ(blk_read_all(*dev), bytes(8 * iov::PAGE_SIZE, 0));
  }
  {  // unmap: zeros free the page
    auto dev = make_brd({.size = 8 * iov::PAGE_SIZE, .detect_zeroes = iov::detect_zeroes::unmap});
    ASSERT_EQ(replace(*dev, 1, data), 0);
    EXPECT_EQ(dev->nr_pages(), 1u);
    ASSERT_EQ(replace(*dev, 1, zeros), 0);
    EXPECT_EQ(dev->nr_pages(), 0u);
    EXPECT_EQ(blk_read_all(*dev), bytes(8 * iov::PAGE_SIZE, 0));
  }
  iov::rcu_barrier();
}

// With `replaced`, the old pages come back to the caller, whole and not
// freed (still one reference each), and the device reads the new ones; an
// index that held no page gives nullptr.
TEST(BrdReplacePages, ReplacedPagesGoToTheCaller) {
  auto dev = make_brd({.size = 8 * iov::PAGE_SIZE});
  std::mt19937_64 rng(29);
  const bytes old = random_bytes(2 * iov::PAGE_SIZE, rng), fresh = random_bytes(3 * iov::PAGE_SIZE, rng);
  ASSERT_EQ(replace(*dev, 2, old), 0);  // pages 2, 3
  std::vector<iov::page*> stored;
  {
    iov::blk_lease lease;
    ASSERT_EQ(dev->lend_pages(2 * 8, 2 * 8, &lease), 0);
    for (const iov::bio_vec& bv : lease.pieces()) stored.push_back(bv.bv_page);
  }
  ASSERT_EQ(stored.size(), 2u);
  auto pages = pages_of(fresh);
  iov::page* replaced[3] = {pages[0], pages[0], pages[0]};  // cleared by the call
  ASSERT_EQ(dev->replace_pages(2, pages.data(), 3, nullptr, replaced), 0);  // 2, 3 replaced, 4 added
  EXPECT_EQ(replaced[0], stored[0]);
  EXPECT_EQ(replaced[1], stored[1]);
  EXPECT_EQ(replaced[2], nullptr);
  EXPECT_EQ(dev->nr_pages(), 3u);
  bytes model(8 * iov::PAGE_SIZE, 0);
  std::memcpy(model.data() + 2 * iov::PAGE_SIZE, fresh.data(), fresh.size());
  EXPECT_EQ(blk_read_all(*dev), model);
  for (int k = 0; k < 2; k++) {
    ASSERT_NE(replaced[k], nullptr);
    EXPECT_EQ(iov::page_ref_count(replaced[k]), 1) << "page " << k << " was freed, not handed back";
    EXPECT_EQ(std::memcmp(iov::page_address(replaced[k]), old.data() + k * iov::PAGE_SIZE, iov::PAGE_SIZE), 0);
    iov::free_page(replaced[k]);  // no reader holds them: no grace period to wait for
  }
  iov::rcu_barrier();
}

// With `replaced` and zero detection unmapping, the page a page of zeros
// unmaps comes back too (so that nothing in the call waits for a grace
// period), and the page of zeros itself is freed: the device holds nothing
// there and reads zeros.
TEST(BrdReplacePages, UnmappedPagesGoToTheCallerToo) {
  auto dev = make_brd({.size = 8 * iov::PAGE_SIZE, .detect_zeroes = iov::detect_zeroes::unmap});
  std::mt19937_64 rng(31);
  const bytes old = random_bytes(iov::PAGE_SIZE, rng);
  ASSERT_EQ(replace(*dev, 5, old), 0);
  bytes mixed(2 * iov::PAGE_SIZE, 0);  // page 4 zeros (nothing stored there), page 5 zeros
  auto pages = pages_of(mixed);
  iov::page* replaced[2] = {pages[0], pages[0]};  // cleared by the call
  ASSERT_EQ(dev->replace_pages(4, pages.data(), 2, nullptr, replaced), 0);
  EXPECT_EQ(replaced[0], nullptr);
  ASSERT_NE(replaced[1], nullptr);
  EXPECT_EQ(iov::page_ref_count(replaced[1]), 1) << "the unmapped page was freed, not handed back";
  EXPECT_EQ(std::memcmp(iov::page_address(replaced[1]), old.data(), iov::PAGE_SIZE), 0);
  iov::free_page(replaced[1]);
  EXPECT_EQ(dev->nr_pages(), 0u);
  EXPECT_EQ(blk_read_all(*dev), bytes(8 * iov::PAGE_SIZE, 0));
  iov::rcu_barrier();
}

TEST(BrdReplacePages, BeyondTheEndIsRefusedAndThePagesFreed) {
  auto dev = make_brd({.size = 4 * iov::PAGE_SIZE + 512});  // the fifth page is partial: not whole
  std::mt19937_64 rng(26);
  const char* why = nullptr;
  EXPECT_EQ(replace(*dev, 3, random_bytes(2 * iov::PAGE_SIZE, rng), &why), -EINVAL);
  EXPECT_NE(why, nullptr);
  EXPECT_EQ(replace(*dev, ~iov::pgoff_t{0}, random_bytes(iov::PAGE_SIZE, rng)), -EINVAL);  // no overflow
  EXPECT_EQ(dev->nr_pages(), 0u);
  EXPECT_EQ(dev->replace_pages(0, nullptr, 0), 0);
}

TEST(BrdReplacePages, XarrayOutOfMemoryStoresAPrefixAndFreesTheRest) {
  auto dev = make_brd({.size = 1 << 30});
  std::mt19937_64 rng(27);
  // Pages far apart need nodes of their own: the second store's allocation fails.
  const bytes a = random_bytes(iov::PAGE_SIZE, rng);
  auto pages = pages_of(random_bytes(2 * iov::PAGE_SIZE, rng));
  ASSERT_EQ(dev->replace_pages(0, pages.data(), 1), 0);
  iov::internal::xa_fail_next_alloc(1);
  auto more = pages_of(random_bytes(2 * iov::PAGE_SIZE, rng));
  const char* why = nullptr;
  EXPECT_EQ(dev->replace_pages(100000, more.data(), 2, &why), -ENOMEM);
  iov::internal::xa_fail_next_alloc(0);
  EXPECT_NE(why, nullptr);
  EXPECT_EQ(dev->nr_pages(), 1u);
  iov::free_page(pages[1]);  // not handed over
  iov::rcu_barrier();
}

TEST(BrdReplacePages, NullBlkCannotAndSaysSo) {
  auto dev = iov_test::make_nullb({.size = 1 << 20, .memory_backed = true});
  ASSERT_FALSE(dev->can_replace_pages());
  std::mt19937_64 rng(28);
  const char* why = nullptr;
  EXPECT_EQ(replace(*dev, 0, random_bytes(iov::PAGE_SIZE, rng), &why), -EOPNOTSUPP);
  EXPECT_NE(why, nullptr);
}

}  // namespace
