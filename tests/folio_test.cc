// folio_test.cc: folios (folio.hpp), bvec_set_folio (bvec.hpp) and the folio
// copies (copy.hpp), against plain address arithmetic, the kernel's
// definitions (a folio overlays its head page; order and count are the
// compound page's) and a flat model of the folio's bytes.
//
//   ctest -R folio_test
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;

uintptr_t addr_of(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A folio and a flat model of its bytes, compared after each operation.
class FolioModel : public ::testing::Test {
 protected:
  static constexpr unsigned kOrder = 2;
  static constexpr size_t kSize = PAGE_SIZE << kOrder;
  void SetUp() override {
    f_ = iov::folio_alloc(iov::GFP_KERNEL, kOrder);
    ASSERT_NE(f_, nullptr);
    model_ = iov_test::random_bytes(7, kSize);
    std::memcpy(iov::folio_address(f_), model_.data(), kSize);
  }
  void TearDown() override {
    if (f_)
      iov::folio_put(f_);
  }
  void expect_model() { EXPECT_EQ(0, std::memcmp(iov::folio_address(f_), model_.data(), kSize)); }
  // (offset, len) pairs within the folio, across page boundaries and edges.
  static std::vector<std::pair<size_t, size_t>> ranges() {
    return {{0, 0},        {0, kSize},           {kSize, 0},       {kSize - 1, 1}, {4000, 200},
            {PAGE_SIZE, PAGE_SIZE}, {5000, 3 * PAGE_SIZE - 5000}, {1, kSize - 1}, {12287, 2}};
  }
  iov::folio* f_ = nullptr;
  std::vector<unsigned char> model_;
};

TEST(Folio, OverlaysItsHeadPage) {
  static_assert(sizeof(iov::folio) == PAGE_SIZE);
  for (unsigned order : {0u, 1u, 3u, 9u, 10u}) {
    SCOPED_TRACE(order);
    iov::folio* f = iov::folio_alloc(iov::GFP_KERNEL, order);
    ASSERT_NE(f, nullptr);
    iov::page* head = &f->page;
    EXPECT_EQ(addr_of(head), addr_of(f));
    EXPECT_EQ(iov::folio_address(f), iov::page_address(head));
    EXPECT_EQ(addr_of(f) % (PAGE_SIZE << order), 0u);  // naturally aligned, as the buddy's
    EXPECT_EQ(iov::folio_order(f), order);
    EXPECT_EQ(iov::folio_nr_pages(f), 1ul << order);
    EXPECT_EQ(iov::folio_size(f), PAGE_SIZE << order);
    EXPECT_EQ(iov::folio_test_large(f), order > 0);
    for (unsigned long n = 0; n < iov::folio_nr_pages(f); n++) {
      EXPECT_EQ(iov::folio_page(f, n), head + n);
      EXPECT_EQ(iov::page_folio(head + n), f);
      EXPECT_EQ(iov::compound_head(head + n), head);
    }
    EXPECT_EQ(iov::compound_order(head), order);
    iov::folio_put(f);
  }
}

TEST(Folio, CountsReferencesOnTheHead) {
  iov::folio* f = iov::folio_alloc(iov::GFP_KERNEL, 3);
  ASSERT_NE(f, nullptr);
  iov::page* tail = iov::folio_page(f, 5);
  EXPECT_EQ(iov::folio_ref_count(f), 1);
  iov::folio_get(f);
  iov::get_page(tail);  // a tail page's reference is the folio's
  EXPECT_EQ(iov::folio_ref_count(f), 3);
  EXPECT_EQ(iov::page_ref_count(tail), 3);
  iov::put_page(tail);
  iov::folio_put(f);
  EXPECT_EQ(iov::folio_ref_count(f), 1);
  size_t in_use = iov::page_alloc_read_stats().frames_in_use;
  iov::folio_put(f);  // the last reference frees the 8 frames
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, in_use - 8);
}

TEST(Folio, PageNotFromTheAllocatorIsAFolioOfOnePage) {
  alignas(PAGE_SIZE) static unsigned char buffer[2 * PAGE_SIZE];
  iov::page* p = iov::virt_to_page(buffer + PAGE_SIZE + 10);
  iov::folio* f = iov::page_folio(p);
  EXPECT_EQ(addr_of(f), addr_of(buffer + PAGE_SIZE));
  EXPECT_EQ(iov::folio_order(f), 0u);
  EXPECT_EQ(iov::folio_size(f), PAGE_SIZE);
  EXPECT_EQ(iov::folio_ref_count(f), 1);  // its owner's
  iov::folio_get(f);                       // nothing to count
  iov::folio_put(f);
  EXPECT_EQ(iov::folio_ref_count(f), 1);
}

TEST(Folio, AllocZeroes) {
  // Dirty the frames, free them, and ask for zeroed ones: whatever frames
  // come back read as zeroes.
  for (int round = 0; round < 3; round++) {
    iov::folio* f = iov::folio_alloc(iov::GFP_KERNEL | iov::__GFP_ZERO, 4);
    ASSERT_NE(f, nullptr);
    std::vector<unsigned char> zeroes(iov::folio_size(f), 0);
    EXPECT_EQ(0, std::memcmp(iov::folio_address(f), zeroes.data(), zeroes.size()));
    std::memset(iov::folio_address(f), 0xa5, iov::folio_size(f));
    iov::folio_put(f);
  }
}

TEST_F(FolioModel, KmapLocalFolio) {
  for (size_t off : {size_t{0}, size_t{1}, PAGE_SIZE - 1, PAGE_SIZE, size_t{5000}, kSize - 1}) {
    char* k = static_cast<char*>(iov::kmap_local_folio(f_, off));
    EXPECT_EQ(k, static_cast<char*>(iov::folio_address(f_)) + off);
    EXPECT_EQ(static_cast<unsigned char>(*k), model_[off]);
    iov::kunmap_local(k);
  }
}

TEST_F(FolioModel, MemcpyToFolio) {
  std::vector<unsigned char> src = iov_test::random_bytes(8, kSize);
  for (auto [off, len] : ranges()) {
    SCOPED_TRACE(testing::Message() << off << "+" << len);
    iov::memcpy_to_folio(f_, off, src.data(), len);  // any object pointer, as C passes it
    std::memcpy(model_.data() + off, src.data(), len);
    expect_model();
  }
}

TEST_F(FolioModel, MemcpyFromFolio) {
  for (auto [off, len] : ranges()) {
    SCOPED_TRACE(testing::Message() << off << "+" << len);
    std::vector<unsigned char> to(kSize + 2, 'z'), want(kSize + 2, 'z');
    iov::memcpy_from_folio(to.data() + 1, f_, off, len);
    std::memcpy(want.data() + 1, model_.data() + off, len);
    EXPECT_EQ(to, want);
  }
}

// memcpy_from_file_folio: the folio is the one at file position `base`
// (a multiple of its size); a position inside it copies from its offset
// and stops at the folio's end, whatever len asks.
TEST_F(FolioModel, MemcpyFromFileFolio) {
  for (loff_t base : {loff_t{0}, static_cast<loff_t>(kSize) * 3, static_cast<loff_t>(kSize) << 20}) {
    for (auto [off, len] : ranges()) {
      if (off == kSize)
        continue;  // a position in the next folio
      for (size_t ask : {len, len + 100, kSize * 2}) {
        SCOPED_TRACE(testing::Message() << base << "+" << off << " ask " << ask);
        std::vector<unsigned char> to(2 * kSize + 2, 'z'), want(2 * kSize + 2, 'z');
        size_t n = iov::memcpy_from_file_folio(reinterpret_cast<char*>(to.data()) + 1, f_,
                                               base + static_cast<loff_t>(off), ask);
        size_t expect = std::min(ask, kSize - off);
        EXPECT_EQ(n, expect);
        EXPECT_EQ(iov::offset_in_folio(f_, base + static_cast<loff_t>(off)), off);
        std::memcpy(want.data() + 1, model_.data() + off, expect);
        EXPECT_EQ(to, want);
      }
    }
  }
}

TEST_F(FolioModel, ZeroRange) {
  for (auto [off, len] : ranges()) {
    SCOPED_TRACE(testing::Message() << off << "+" << len);
    iov::folio_zero_range(f_, off, len);
    std::memset(model_.data() + off, 0, len);
    expect_model();
    model_ = iov_test::random_bytes(off + len, kSize);
    std::memcpy(iov::folio_address(f_), model_.data(), kSize);
  }
}

#if !IOV_CHECKS
// Beyond the folio is the kernel's VM_BUG_ON: nothing happens (with checks
// on it aborts; checks_death_test covers the page forms).
TEST_F(FolioModel, OutOfRangeChangesNothing) {
  std::vector<unsigned char> src(kSize + 1, 1);
  iov::memcpy_to_folio(f_, 1, src.data(), kSize);
  iov::memcpy_to_folio(f_, kSize + 1, src.data(), 0);
  iov::folio_zero_range(f_, kSize - 10, 11);
  iov::memcpy_from_folio(src.data(), f_, 0, kSize + 1);
  expect_model();
  EXPECT_EQ(src, std::vector<unsigned char>(kSize + 1, 1));
}
#endif

TEST_F(FolioModel, BvecSetFolio) {
  for (auto [off, len] : ranges()) {
    iov::bio_vec bv{};
    iov::bvec_set_folio(&bv, f_, len, off);
    EXPECT_EQ(bv.bv_page, iov::folio_page(f_, off / PAGE_SIZE));
    EXPECT_EQ(bv.bv_offset, off % PAGE_SIZE);
    EXPECT_EQ(bv.bv_len, len);
    // The bytes it names are the folio's from off.
    if (len) {
      EXPECT_EQ(static_cast<unsigned char*>(iov::page_address(bv.bv_page))[bv.bv_offset], model_[off]);
    }
  }
}

// copy_folio_to_iter/from_iter/_atomic against the flat model, on kvec and
// bvec iterators (pieces of other shapes are the page forms' tests).
TEST_F(FolioModel, CopiesThroughIterators) {
  std::mt19937_64 rng(11);
  for (iov_test::Kind kind : {iov_test::Kind::kvec, iov_test::Kind::bvec, iov_test::Kind::iovec}) {
    for (int round = 0; round < 40; round++) {
      auto layout = iov_test::Layout::random(kind, rng, kSize);
      layout->fill(round);
      size_t off = rng() % (kSize + 1);
      size_t bytes = rng() % (kSize - off + 1);
      SCOPED_TRACE(testing::Message() << iov_test::kind_name(kind) << " off " << off << " bytes " << bytes
                                      << " total " << layout->total());
      size_t want = std::min(bytes, layout->total());

      iov::iov_iter to = layout->iter(iov::ITER_DEST);
      std::vector<unsigned char> flat = layout->gather();
      EXPECT_EQ(iov::copy_folio_to_iter(f_, off, bytes, &to), want);
      std::copy_n(model_.data() + off, want, flat.data());
      EXPECT_EQ(layout->gather(), flat);
      EXPECT_EQ(to.count, layout->total() - want);

      iov::iov_iter from = layout->iter(iov::ITER_SOURCE);
      layout->fill(round + 100);
      flat = layout->gather();
      EXPECT_EQ(iov::copy_folio_from_iter(f_, off, bytes, &from), want);
      std::copy_n(flat.data(), want, model_.data() + off);
      expect_model();

      from = layout->iter(iov::ITER_SOURCE);
      layout->fill(round + 200);
      flat = layout->gather();
      EXPECT_EQ(iov::copy_folio_from_iter_atomic(f_, off, bytes, &from), want);
      std::copy_n(flat.data(), want, model_.data() + off);
      expect_model();
      EXPECT_EQ(from.count, layout->total() - want);
    }
  }
}

TEST_F(FolioModel, CopyFromIterAtomicRefusesWhatTheKernelWarnsOn) {
  auto layout = iov_test::Layout::make_kvec({{kSize, 0}});
  layout->fill(3);
  iov::iov_iter from = layout->iter(iov::ITER_SOURCE);
  EXPECT_EQ(iov::copy_folio_from_iter_atomic(f_, 1, kSize, &from), 0u);  // beyond the folio
  EXPECT_EQ(from.count, kSize);
  iov::iov_iter to = layout->iter(iov::ITER_DEST);
  EXPECT_EQ(iov::copy_folio_from_iter_atomic(f_, 0, 10, &to), 0u);  // wrong direction
  EXPECT_EQ(to.count, kSize);
  expect_model();
}

}  // namespace
