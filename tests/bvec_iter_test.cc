// bvec_iter_test.cc: the kernel's struct bvec_iter over an array of bio_vecs
// (bvec.hpp): the accessors, bvec_iter_advance(), for_each_bvec, and the
// bvec mapping helpers, against the flat model of the array's bytes.
//
//   ctest -R bvec_iter_test
#include <climits>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;
using iov_test::Kind;

// The bvecs' bytes flattened, as the model's chunks say.
std::vector<unsigned char> flat_from(const iov_test::Layout& l, size_t pos, size_t len) {
  auto all = l.gather();
  return {all.begin() + pos, all.begin() + pos + len};
}

TEST(BvecIter, ForEachBvecYieldsTheModelsPieces) {
  for (uint64_t seed : iov_test::test_seeds({41, 42, 43})) {
    SCOPED_TRACE(testing::Message() << "IOV_TEST_SEED=" << seed);
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 20; trial++) {
      auto l = iov_test::Layout::random(Kind::bvec, rng, 5 * PAGE_SIZE);
      l->fill(seed + trial);
      size_t start = std::uniform_int_distribution<size_t>(0, l->total())(rng);
      // Position a bvec_iter at `start` with bvec_iter_advance from the beginning.
      iov::bvec_iter it = {77, static_cast<unsigned>(l->total()), 0, 0};
      ASSERT_TRUE(iov::bvec_iter_advance(l->bvecs().data(), &it, static_cast<unsigned>(start)));
      EXPECT_EQ(it.bi_size, l->total() - start);
      EXPECT_EQ(it.bi_sector, 77u) << "advance leaves the sector to the block layer";
      // The pieces for_each_bvec yields are the model's page-split pieces.
      std::vector<iov_test::Chunk> got;
      iov::bio_vec bv;
      iov::bvec_iter pos;
      size_t flat = start;
      for_each_bvec(bv, l->bvecs().data(), pos, it) {
        EXPECT_LE(bv.bv_offset + bv.bv_len, PAGE_SIZE) << "single-page pieces";
        auto* base = static_cast<unsigned char*>(iov::bvec_virt(&bv));
        if (bv.bv_len)
          got.push_back({flat, base, bv.bv_len, 0});
        flat += bv.bv_len;
      }
      auto want = l->pieces(start, l->total() - start);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); k++) {
        EXPECT_EQ(got[k].flat, want[k].flat);
        EXPECT_EQ(got[k].base, want[k].base);
        EXPECT_EQ(got[k].len, want[k].len);
      }
      EXPECT_EQ(flat, l->total());
    }
  }
}

TEST(BvecIter, AccessorsOfAMultiPageBvec) {
  iov_test::PageRun run(2);
  iov::bio_vec bv[2] = {{run.get(), 3 * PAGE_SIZE - 100, 100}, {run.get() + 3, 50, 7}};
  iov::bvec_iter it = {0, 3 * PAGE_SIZE, 0, 0};
  ASSERT_TRUE(iov::bvec_iter_advance(bv, &it, PAGE_SIZE));
  EXPECT_EQ(it.bi_idx, 0u);
  EXPECT_EQ(it.bi_bvec_done, PAGE_SIZE);
  EXPECT_EQ(iov::mp_bvec_iter_offset(bv, it), PAGE_SIZE + 100);
  EXPECT_EQ(iov::mp_bvec_iter_len(bv, it), 2 * PAGE_SIZE - 100);
  EXPECT_EQ(iov::mp_bvec_iter_page(bv, it), run.get());
  EXPECT_EQ(iov::mp_bvec_iter_page_idx(bv, it), 1u);
  EXPECT_EQ(iov::bvec_iter_page(bv, it), run.get() + 1);
  EXPECT_EQ(iov::bvec_iter_offset(bv, it), 100u);
  EXPECT_EQ(iov::bvec_iter_len(bv, it), PAGE_SIZE - 100);
  iov::bio_vec one = iov::bvec_iter_bvec(bv, it), mp = iov::mp_bvec_iter_bvec(bv, it);
  EXPECT_EQ(one.bv_page, run.get() + 1);
  EXPECT_EQ(one.bv_len, PAGE_SIZE - 100);
  EXPECT_EQ(mp.bv_page, run.get());
  EXPECT_EQ(mp.bv_offset, PAGE_SIZE + 100);
  // bi_size clamps the length.
  it.bi_size = 10;
  EXPECT_EQ(iov::bvec_iter_len(bv, it), 10u);
  EXPECT_EQ(iov::mp_bvec_iter_len(bv, it), 10u);
  // Into the second bvec.
  it.bi_size = 3 * PAGE_SIZE - PAGE_SIZE;
  ASSERT_TRUE(iov::bvec_iter_advance(bv, &it, 2 * PAGE_SIZE - 100 + 20));
  EXPECT_EQ(it.bi_idx, 1u);
  EXPECT_EQ(it.bi_bvec_done, 20u);
  EXPECT_EQ(iov::bvec_iter_offset(bv, it), 27u);
  EXPECT_EQ(iov::bvec_iter_page(bv, it), run.get() + 3);
}

TEST(BvecIter, AdvancePastTheEndEmptiesTheIterator) {
  iov::bio_vec bv[1] = {{nullptr, 100, 0}};
  iov::bvec_iter it = {0, 100, 0, 0};
  EXPECT_FALSE(iov::bvec_iter_advance(bv, &it, 101)) << "the kernel's WARN_ONCE, and no abort";
  EXPECT_EQ(it.bi_size, 0u);
  EXPECT_EQ(it.bi_idx, 0u);
}

TEST(BvecIter, AdvanceStepsOverEmptyBvecsOnlyWhileBytesRemain) {
  iov::bio_vec bv[4] = {{nullptr, 10, 0}, {nullptr, 0, 0}, {nullptr, 0, 0}, {nullptr, 5, 0}};
  iov::bvec_iter it = {0, 15, 0, 0};
  ASSERT_TRUE(iov::bvec_iter_advance(bv, &it, 10));
  EXPECT_EQ(it.bi_idx, 1u) << "bytes reached 0 at the end of bvec 0: the loop stops";
  EXPECT_EQ(it.bi_bvec_done, 0u);
  ASSERT_TRUE(iov::bvec_iter_advance(bv, &it, 2));
  EXPECT_EQ(it.bi_idx, 3u);
  EXPECT_EQ(it.bi_bvec_done, 2u);
  // bvec_iter_advance_single: within one bvec, stepping to the next at its end.
  iov::bvec_iter s = {0, 15, 0, 0};
  iov::bvec_iter_advance_single(bv, &s, 4);
  EXPECT_EQ(s.bi_bvec_done, 4u);
  iov::bvec_iter_advance_single(bv, &s, 6);
  EXPECT_EQ(s.bi_idx, 1u);
  EXPECT_EQ(s.bi_bvec_done, 0u);
  EXPECT_EQ(s.bi_size, 5u);
}

TEST(BvecIter, AllInitCoversEverything) {
  EXPECT_EQ(iov::BVEC_ITER_ALL_INIT.bi_size, UINT_MAX);
  EXPECT_EQ(iov::BVEC_ITER_ALL_INIT.bi_idx, 0u);
  EXPECT_EQ(sizeof(iov::bvec_iter), 20u) << "the kernel's __packed __aligned(4) layout";
}

TEST(BvecMap, VirtKmapAndCopies) {
  auto l = iov_test::Layout::make_bvec({{300, 4000}, {5000, 10}});
  l->fill(3);
  const iov::bio_vec& bv = l->bvecs()[1];
  EXPECT_EQ(iov::bvec_virt(&bv), l->addr(300));
  EXPECT_EQ(iov::bvec_kmap_local(&bv), l->addr(300));
  std::vector<unsigned char> out(5000);
  iov::memcpy_from_bvec(out.data(), &bv);
  EXPECT_EQ(out, flat_from(*l, 300, 5000));
  auto in = iov_test::random_bytes(9, 5000);
  iov::memcpy_to_bvec(&bv, in.data());
  EXPECT_EQ(flat_from(*l, 300, 5000), in);
  iov::memzero_bvec(&l->bvecs()[0]);
  EXPECT_EQ(flat_from(*l, 0, 300), std::vector<unsigned char>(300, 0));
  EXPECT_TRUE(l->guards_intact());
}

}  // namespace
