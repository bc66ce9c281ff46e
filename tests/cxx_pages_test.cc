// Tests of the owners in include/iov/cxx/pages.hpp: unique_pages frees its
// alloc_pages() allocation exactly once whatever path it leaves by, folio_ref
// gets and puts references as the kernel's folio_get()/folio_put() would,
// and the allocator's count of frames in use is back where it started.
#include "iov/cxx/pages.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "iov/iov.hpp"

namespace {

size_t frames_handed_out() { return iov::page_alloc_read_stats().frames_in_use; }

TEST(UniquePages, FreesItsFramesOnceOnEveryPath) {
  const size_t start = frames_handed_out();
  {
    iov::unique_pages a = iov::unique_pages::alloc(iov::GFP_KERNEL, 2);
    ASSERT_TRUE(a);
    EXPECT_EQ(a.size(), 4 * iov::PAGE_SIZE);
    EXPECT_EQ(a.bytes().data(), static_cast<std::byte*>(iov::page_address(a.get())));
    EXPECT_EQ(frames_handed_out(), start + 4);
    std::memset(a.bytes().data(), 0x5a, a.size());  // all four frames are the caller's

    iov::unique_pages b = std::move(a);  // moves; a is empty and frees nothing
    EXPECT_FALSE(a);
    EXPECT_EQ(a.size(), 0u);
    EXPECT_EQ(b.order(), 2u);

    iov::unique_pages c = iov::unique_pages::alloc(iov::GFP_KERNEL);
    EXPECT_EQ(frames_handed_out(), start + 5);
    c = std::move(b);  // c's own frame is freed first
    EXPECT_EQ(frames_handed_out(), start + 4);

    iov::page* p = c.release();  // the caller's now
    EXPECT_FALSE(c);
    iov::free_pages(p, 2);
    EXPECT_EQ(frames_handed_out(), start);

    std::vector<iov::unique_pages> many;
    for (unsigned order = 0; order < 4; order++)
      many.push_back(iov::unique_pages::alloc(iov::GFP_KERNEL, order));
    EXPECT_EQ(frames_handed_out(), start + 1 + 2 + 4 + 8);
  }
  EXPECT_EQ(frames_handed_out(), start);
}

TEST(FolioRef, GetsAndPutsLikeTheKernelCalls) {
  const size_t start = frames_handed_out();
  {
    iov::folio_ref f = iov::folio_ref::alloc(iov::GFP_KERNEL, 1);
    ASSERT_TRUE(f);
    EXPECT_EQ(iov::folio_ref_count(f.get()), 1);
    EXPECT_EQ(f.size(), 2 * iov::PAGE_SIZE);
    EXPECT_EQ(frames_handed_out(), start + 2);
    {
      iov::folio_ref lent = f;  // folio_get()
      EXPECT_EQ(iov::folio_ref_count(f.get()), 2);
      iov::folio_ref other;
      other = lent;
      EXPECT_EQ(iov::folio_ref_count(f.get()), 3);
      iov::folio_ref moved = std::move(other);  // no count change
      EXPECT_FALSE(other);
      EXPECT_EQ(iov::folio_ref_count(f.get()), 3);
      other = std::move(moved);
      const iov::folio_ref& same = other;  // through a reference: clang warns on `other = other`
      other = same;                         // self-assignment keeps the count
      EXPECT_EQ(iov::folio_ref_count(f.get()), 3);
    }
    EXPECT_EQ(iov::folio_ref_count(f.get()), 1);

    // get() takes a reference of its own; adopt() takes over the caller's.
    iov::folio_ref g = iov::folio_ref::get(f.get());
    EXPECT_EQ(iov::folio_ref_count(f.get()), 2);
    iov::folio* raw = g.release();
    iov::folio_ref back = iov::folio_ref::adopt(raw);
    EXPECT_EQ(iov::folio_ref_count(f.get()), 2);
    back.reset();
    EXPECT_EQ(iov::folio_ref_count(f.get()), 1);
    EXPECT_EQ(frames_handed_out(), start + 2);
  }
  // The last put freed it.
  EXPECT_EQ(frames_handed_out(), start);
}

TEST(FolioRef, EmptyOwnersDoNothing) {
  iov::folio_ref empty;
  iov::folio_ref copy = empty;
  EXPECT_FALSE(copy);
  EXPECT_TRUE(copy.bytes().empty());
  iov::unique_pages none;
  none.reset();
  EXPECT_EQ(none.size(), 0u);
}

}  // namespace
