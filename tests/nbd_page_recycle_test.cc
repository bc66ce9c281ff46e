// Tests of iov-nbd's page recycler (src/tools/nbd/page_recycle.hpp): a page
// a WRITE replaced is handed out again only after a grace period, never
// while a reader that could have found it is still in its read-side
// section; what it holds is bounded, and given back when its loop stops
// writing; no page is lost when it goes with batches still waiting; and through a server on brd, WRITEs that keep
// replacing the same pages read back as a flat model of the disk says.
//
//   ctest -R nbd_page_recycle
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "iov/page_alloc.hpp"
#include "iov/rcu.hpp"
#include "nbd/page_recycle.hpp"
#include "support/nbd_client.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

using iov::nbd::page_recycler;

// A thread inside a read-side section from start() until finish(): the
// reader that might still hold a page retired meanwhile.
class section_holder {
 public:
  void start() {
    thread_ = std::thread([this] {
      iov::rcu_read_guard g;
      std::unique_lock<std::mutex> l(m_);
      inside_ = true;
      cv_.notify_all();
      cv_.wait(l, [this] { return done_; });
    });
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [this] { return inside_; });
  }
  void finish() {
    {
      std::lock_guard<std::mutex> l(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool inside_ = false, done_ = false;
  std::thread thread_;
};

std::vector<iov::page*> fresh_pages(size_t n) {
  std::vector<iov::page*> v;
  for (size_t k = 0; k < n; k++) {
    v.push_back(iov::alloc_page(iov::GFP_KERNEL));
    EXPECT_NE(v.back(), nullptr);
  }
  return v;
}

TEST(NbdPageRecycle, ReusesARetiredPageOnlyAfterAGracePeriod) {
  page_recycler r;
  const std::vector<iov::page*> retired = fresh_pages(page_recycler::kBatch);
  const std::set<iov::page*> retired_set(retired.begin(), retired.end());
  section_holder reader;
  reader.start();
  for (iov::page* p : retired) r.retire(p);
  EXPECT_EQ(r.waiting(), page_recycler::kBatch);
  std::vector<iov::page*> taken;
  for (unsigned k = 0; k < 2 * page_recycler::kBatch; k++) {
    taken.push_back(r.alloc());
    ASSERT_NE(taken.back(), nullptr);
    EXPECT_EQ(retired_set.count(taken.back()), 0u) << "a page handed out while a reader may hold it";
  }
  for (iov::page* p : taken) iov::free_page(p);
  reader.finish();
  iov::rcu_barrier();  // the batch's callback has run
  std::set<iov::page*> back;
  for (unsigned k = 0; k < page_recycler::kBatch; k++) back.insert(r.alloc());
  EXPECT_EQ(back, retired_set) << "the pages past their grace period come back first";
  EXPECT_EQ(r.waiting(), 0u);
  EXPECT_EQ(r.ready(), 0u);
  for (iov::page* p : back) iov::free_page(p);
}

// While grace periods do not end, kMaxWaiting batches wait and the rest is
// freed the ordinary way; a recycler that goes with batches waiting (and
// one open) leaves their pages to the callbacks: not one frame is lost.
TEST(NbdPageRecycle, HoldsABoundedNumberAndLosesNoPage) {
  iov::rcu_barrier();
  const size_t in_use = iov::page_alloc_read_stats().frames_in_use;
  section_holder reader;
  {
    page_recycler r;
    reader.start();
    const size_t n = (page_recycler::kMaxWaiting + 2) * page_recycler::kBatch + 5;
    for (iov::page* p : fresh_pages(n)) r.retire(p);
    EXPECT_EQ(r.waiting(), page_recycler::kMaxWaiting * page_recycler::kBatch);
    iov::page* extra = r.alloc();  // a new page: nothing is past its grace period
    ASSERT_NE(extra, nullptr);
    r.give_back(extra);  // never seen by a reader: ready at once
    EXPECT_EQ(r.ready(), 1u);
    EXPECT_EQ(r.alloc(), extra);
    r.give_back(extra);
  }
  reader.finish();
  iov::rcu_barrier();
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, in_use);
}

// What an idle loop kept goes back on its sweeps: the ready pages at the
// first trim() with no alloc() since the one before, the part batch sealed
// then and freed at a later one.
TEST(NbdPageRecycle, TrimGivesBackWhatAnIdleLoopKept) {
  iov::rcu_barrier();
  const size_t in_use = iov::page_alloc_read_stats().frames_in_use;
  page_recycler r;
  for (iov::page* p : fresh_pages(page_recycler::kBatch + 10)) r.retire(p);
  iov::rcu_barrier();
  r.give_back(r.alloc());  // taken since the last trim
  r.trim();
  EXPECT_EQ(r.ready(), page_recycler::kBatch);
  EXPECT_EQ(r.waiting(), 10u);
  r.trim();  // nothing taken since
  EXPECT_EQ(r.ready(), 0u);
  EXPECT_EQ(r.waiting(), 10u);
  iov::rcu_barrier();
  r.trim();
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, in_use);
}

// Through the server: small WRITEs (whole pages and partial ones) keep
// replacing the pages of a small region, so that the recycler hands the
// same frames back again and again; every read matches the flat model, and
// once the server and device are gone no frame is left behind.
TEST(NbdPageRecycle, OverwritesReadBackAsAFlatModel) {
  iov::rcu_barrier();
  const size_t in_use = iov::page_alloc_read_stats().frames_in_use;
  {
    constexpr uint64_t kRegion = 32 * 4 * KiB;
    local_server s("brd", {}, 1 * MiB);
    auto c = s.open(true);
    ASSERT_TRUE(c);
    std::mt19937_64 rng(41);
    bytes model(kRegion, 0);
    ASSERT_EQ(c->write(0, model).error, 0u);
    for (int i = 0; i < 3000; i++) {
      const bool whole = i % 4 != 0;
      const uint64_t length = whole ? (1 + rng() % 4) * 4 * KiB : 512 * (1 + rng() % 16);
      const uint64_t unit = whole ? 4 * KiB : 512;
      const uint64_t offset = rng() % ((kRegion - length) / unit + 1) * unit;
      const bytes data = random_data(length, rng);
      ASSERT_EQ(c->write(offset, data).error, 0u);
      std::memcpy(model.data() + offset, data.data(), length);
      if (i % 50 == 0) {
        auto r = c->read(0, kRegion);
        ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
        ASSERT_TRUE(r.data == model) << "after WRITE " << i;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let grace periods end meanwhile
      }
    }
    auto r = c->read(0, kRegion);
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
    EXPECT_TRUE(r.data == model);
  }
  iov::rcu_barrier();
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, in_use);
}

}  // namespace
}  // namespace iov_test::nbd
