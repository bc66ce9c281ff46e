// xarray_locked_test.cc: the xarray's locked API (xa_lock()/xa_unlock() and
// the __xa_*() calls made under it), xas_reload(), and entries handed to
// typed pointers as kernel C code does (xa_for_each with `struct page *`),
// against a std::map model.
//
//   ctest -R xarray_locked_test
#include <cerrno>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"

namespace {

struct item {
  alignas(8) unsigned long id;
};

TEST(XarrayLocked, OperationsFollowAMapModel) {
  iov::xarray xa;
  std::vector<item> items(64);
  for (unsigned long k = 0; k < items.size(); k++) items[k].id = k;
  std::map<unsigned long, item*> model;
  std::mt19937_64 rng(17);
  for (int step = 0; step < 4000; step++) {
    unsigned long index = std::uniform_int_distribution<unsigned long>(0, 300)(rng) << (step % 3 == 0 ? 10 : 0);
    item* e = &items[rng() % items.size()];
    item* cur = model.count(index) ? model[index] : nullptr;
    iov::xa_lock(&xa);
    switch (rng() % 4) {
      case 0: {
        item* old = iov::__xa_store(&xa, index, e, iov::GFP_ATOMIC);  // typed, as C assigns
        EXPECT_EQ(old, cur);
        model[index] = e;
        break;
      }
      case 1: {
        item* old = iov::__xa_erase(&xa, index);
        EXPECT_EQ(old, cur);
        model.erase(index);
        break;
      }
      case 2: {
        int ret = iov::__xa_insert(&xa, index, e, iov::GFP_KERNEL);
        EXPECT_EQ(ret, cur ? -EBUSY : 0);
        if (!cur) model[index] = e;
        break;
      }
      default: {
        item* expect = (rng() & 1) ? cur : e;
        item* ret = iov::__xa_cmpxchg(&xa, index, expect, e, iov::GFP_KERNEL);
        EXPECT_EQ(ret, cur) << "returns the entry that was there";
        if (expect == cur) model[index] = e;
        if (!model[index]) model.erase(index);
        break;
      }
    }
    iov::xa_unlock(&xa);
  }
  // A typed xa_for_each walks exactly the model, in index order.
  unsigned long index;
  item* entry;
  auto it = model.begin();
  xa_for_each(&xa, index, entry) {
    ASSERT_NE(it, model.end());
    EXPECT_EQ(index, it->first);
    EXPECT_EQ(entry, it->second);
    ++it;
  }
  EXPECT_EQ(it, model.end());
  EXPECT_EQ(iov::xa_count(&xa), model.size());
}

TEST(XarrayLocked, InternalEntriesAreRefused) {
  iov::xarray xa;
  iov::xa_lock(&xa);
  void* err = iov::__xa_store(&xa, 1, iov::xa_mk_internal(5), iov::GFP_KERNEL);
  EXPECT_TRUE(iov::xa_is_err(err));
  EXPECT_EQ(iov::xa_err(err), -EINVAL);
  EXPECT_EQ(iov::xa_err(iov::__xa_cmpxchg(&xa, 1, nullptr, iov::xa_mk_internal(5), iov::GFP_KERNEL)), -EINVAL);
  iov::xa_unlock(&xa);
  EXPECT_TRUE(iov::xa_empty(&xa));
}

TEST(XarrayLocked, OutOfMemoryUnderTheLock) {
  iov::xarray xa;
  iov::internal::xa_fail_next_alloc(1);
  iov::xa_lock(&xa);
  item a{1};
  EXPECT_EQ(iov::__xa_insert(&xa, 1000, &a, iov::GFP_KERNEL), -ENOMEM);
  iov::internal::xa_fail_next_alloc(1);
  EXPECT_EQ(iov::xa_err(iov::__xa_store(&xa, 1000, &a, iov::GFP_KERNEL)), -ENOMEM);
  iov::internal::xa_fail_next_alloc(0);
  iov::xa_unlock(&xa);
  EXPECT_TRUE(iov::xa_empty(&xa));
}

// The lock is the one the unlocked calls take: a writer holding it excludes them.
TEST(XarrayLocked, TheLockExcludesOtherWriters) {
  iov::xarray xa;
  item a{1}, b{2};
  iov::xa_lock_irq(&xa);
  std::thread other([&] { iov::xa_store(&xa, 5, &b); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(iov::__xa_store(&xa, 5, &a, iov::GFP_KERNEL), nullptr) << "the other store waits for the lock";
  iov::xa_unlock_irq(&xa);
  other.join();
  EXPECT_EQ(iov::xa_load(&xa, 5), &b);
}

TEST(XasReload, SeesTheCurrentEntry) {
  iov::xarray xa;
  item a{1}, b{2};
  iov::xa_store(&xa, 70, &a);
  iov::rcu_read_guard rcu;
  XA_STATE(xas, &xa, 70);
  item* first = iov::xas_load(&xas);
  EXPECT_EQ(first, &a);
  EXPECT_EQ(iov::xas_reload(&xas), &a);
  iov::xa_store(&xa, 70, &b);
  item* again = iov::xas_reload(&xas);
  EXPECT_EQ(again, &b) << "an entry replaced since the load";
  XA_STATE(empty, &xa, 5000);
  EXPECT_EQ(iov::xas_reload(&empty), nullptr);
}

// Entries as C code holds them: assigned to typed pointers, compared, tested.
TEST(VoidPtr, ConvertsAsCsVoidPointer) {
  iov::xarray xa;
  item a{1};
  iov::xa_store(&xa, 3, &a);
  item* p = iov::xa_load(&xa, 3);
  const item* cp = iov::xa_load(&xa, 3);
  void* vp = iov::xa_load(&xa, 3);
  EXPECT_EQ(p, &a);
  EXPECT_EQ(cp, &a);
  EXPECT_EQ(vp, static_cast<void*>(&a));
  EXPECT_TRUE(iov::xa_load(&xa, 3) == &a);
  EXPECT_TRUE(iov::xa_load(&xa, 4) == nullptr);
  EXPECT_FALSE(iov::xa_load(&xa, 3) != p);
  EXPECT_TRUE(!iov::xa_load(&xa, 4));
  EXPECT_EQ(static_cast<item*>(iov::xa_load(&xa, 3))->id, 1u);
  item* old = iov::xa_erase(&xa, 3);
  EXPECT_EQ(old, &a);
}

}  // namespace
