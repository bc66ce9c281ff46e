// scatterlist_test.cc: scatterlist.hpp (the kernel's scatterlist.h names)
// and extract_iter_to_sg() for every iterator type, against the flat model
// of random layouts: the entries' bytes in order are the iterator's, no
// entry is written past sg_max, and the iterator advances by what is returned.
//
//   ctest -R scatterlist_test
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "iov/scatterlist.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;
using iov_test::Kind;

TEST(Scatterlist, TableChainAndCopies) {
  std::vector<unsigned char> a(10000), b(3000), out(13000);
  for (size_t k = 0; k < a.size(); k++)
    a[k] = static_cast<unsigned char>(k * 3 + 1);
  for (size_t k = 0; k < b.size(); k++)
    b[k] = static_cast<unsigned char>(k * 5 + 2);
  iov::scatterlist first[3], second[1];
  iov::sg_init_table(first, 3);
  EXPECT_TRUE(iov::sg_is_last(&first[2]));
  EXPECT_FALSE(iov::sg_is_last(&first[1]));
  iov::sg_set_buf(&first[0], a.data(), 6000);
  iov::sg_set_buf(&first[1], a.data() + 6000, 4000);
  iov::sg_init_one(second, b.data(), 3000);
  iov::sg_chain(first, 3, second);
  EXPECT_TRUE(iov::sg_is_chain(&first[2]));
  EXPECT_EQ(iov::sg_nents(first), 3) << "two data entries, then through the link to one";
  EXPECT_EQ(static_cast<unsigned char*>(iov::sg_virt(&first[1])), a.data() + 6000);
  EXPECT_EQ(iov::sg_page(&first[0]), iov::virt_to_page(a.data()));
  iov::scatterlist* sg;
  int i;
  size_t total = 0;
  for_each_sg(first, sg, 3, i) total += sg->length;
  EXPECT_EQ(total, 13000u);
  EXPECT_EQ(iov::sg_copy_to_buffer(first, 3, out.data(), out.size()), 13000u);
  EXPECT_EQ(std::memcmp(out.data(), a.data(), 10000), 0);
  EXPECT_EQ(std::memcmp(out.data() + 10000, b.data(), 3000), 0);
  std::vector<unsigned char> zeros(13000, 0);
  EXPECT_EQ(iov::sg_copy_from_buffer(first, 3, zeros.data(), 7000), 7000u);
  EXPECT_EQ(a[6999], 0);
  EXPECT_EQ(a[7000], static_cast<unsigned char>(7000 * 3 + 1));

  iov::sg_table t;
  ASSERT_EQ(iov::sg_alloc_table(&t, 200, iov::GFP_KERNEL), 0);
  EXPECT_EQ(t.nents, 200u);
  EXPECT_EQ(t.orig_nents, 200u);
  EXPECT_EQ(iov::sg_nents(t.sgl), 200);
  iov::sg_free_table(&t);
  EXPECT_EQ(iov::sg_alloc_table(&t, 0, iov::GFP_KERNEL), -EINVAL);
}

// Where the kernel's extract_iter_to_sg() puts the entry that starts at
// flat byte f of the layout, by the model alone: at f's address, running to
// the end of f's segment and, for the types listed a page an entry (UBUF,
// IOVEC, KVEC, XARRAY), no further than the end of f's page. A multi-page
// BVEC or BVECQ slot, or a FOLIOQ folio, is one entry.
iov_test::Chunk expected_entry(const iov_test::Layout& l, Kind kind, size_t f) {
  for (const iov_test::Chunk& r : l.runs()) {
    if (f < r.flat || f >= r.flat + r.len)
      continue;
    unsigned char* base = r.base + (f - r.flat);
    size_t len = r.flat + r.len - f;
    if (kind != Kind::bvec && kind != Kind::bvecq && kind != Kind::folioq)
      len = std::min(len, PAGE_SIZE - reinterpret_cast<uintptr_t>(base) % PAGE_SIZE);
    return {f, base, len, r.seg};
  }
  return {f, nullptr, 0, 0};
}

// Differential: every entry of every call is the one the model predicts
// (address and length; only a call's last entry may stop short, where the
// call's bytes end), the bytes in order are the iterator's, no entry is
// written past sg_max, and the iterator advances by what is returned.
TEST(Scatterlist, ExtractIterToSgEntriesAreTheModelsForEveryType) {
  for (Kind kind : {Kind::ubuf, Kind::iovec, Kind::kvec, Kind::bvec, Kind::bvecq, Kind::folioq, Kind::xarray}) {
    for (uint64_t seed = 1; seed <= 60; seed++) {
      SCOPED_TRACE(testing::Message() << iov_test::kind_name(kind) << " seed " << seed);
      std::mt19937_64 rng(seed);
      auto l = iov_test::Layout::random(kind, rng, 6 * PAGE_SIZE);
      l->fill(seed);
      auto want = l->gather();
      iov::iov_iter it = l->iter(iov::ITER_SOURCE);
      constexpr unsigned kRoom = 64;
      iov::scatterlist sgl[kRoom + 1];
      std::vector<unsigned char> got;
      size_t flat = 0;
      for (int guard = 0; guard < 1000 && iov::iov_iter_count(&it); guard++) {
        iov::sg_init_table(sgl, kRoom + 1);
        sgl[kRoom].length = 0xdead;  // the guard entry past sg_max
        unsigned sg_max = 1 + static_cast<unsigned>(rng() % 6);
        size_t len = 1 + rng() % (3 * PAGE_SIZE);
        iov::sg_table t = {sgl, 0, 0};
        size_t before = iov::iov_iter_count(&it);
        ssize_t n = iov::extract_iter_to_sg(&it, len, &t, sg_max, 0);
        ASSERT_GT(n, 0);
        EXPECT_LE(t.nents, sg_max);
        EXPECT_TRUE(static_cast<size_t>(n) == std::min(len, before) || t.nents == sg_max)
            << "a call stops short only when the table is full";
        EXPECT_EQ(before - iov::iov_iter_count(&it), static_cast<size_t>(n));
        EXPECT_EQ(sgl[kRoom].length, 0xdeadu);
        size_t sum = 0;
        for (unsigned k = 0; k < t.nents; k++) {
          iov_test::Chunk e = expected_entry(*l, kind, flat);
          ASSERT_NE(e.base, nullptr) << "an entry past the model's bytes";
          const unsigned char* p = iov::sg_virt(&sgl[k]);
          EXPECT_EQ(p, e.base) << "entry " << k << " at flat " << flat;
          EXPECT_EQ(iov::page_address(iov::sg_page(&sgl[k])) + sgl[k].offset, p);
          size_t left = static_cast<size_t>(n) - sum;
          EXPECT_EQ(sgl[k].length, std::min(e.len, left)) << "entry " << k << " at flat " << flat;
          got.insert(got.end(), p, p + sgl[k].length);
          sum += sgl[k].length;
          flat += sgl[k].length;
        }
        EXPECT_EQ(sum, static_cast<size_t>(n));
        if (testing::Test::HasFailure())
          return;
      }
      EXPECT_EQ(got, want);
    }
  }
}

// Bad input: sg_max 0 and maxsize 0 take nothing; DISCARD is the kernel's -EIO with
// nothing written.
TEST(Scatterlist, ExtractIterToSgBadInput) {
  std::vector<unsigned char> buf(5000, 7);
  iov::kvec kv = {buf.data(), buf.size()};
  iov::iov_iter it;
  iov::iov_iter_kvec(&it, iov::ITER_SOURCE, &kv, 1, buf.size());
  iov::scatterlist sgl[2];
  iov::sg_init_table(sgl, 2);
  iov::sg_table t = {sgl, 0, 0};
  EXPECT_EQ(iov::extract_iter_to_sg(&it, 5000, &t, 0, 0), 0);
  EXPECT_EQ(iov::extract_iter_to_sg(&it, 0, &t, 2, 0), 0);
  EXPECT_EQ(t.nents, 0u);
  EXPECT_EQ(iov::iov_iter_count(&it), 5000u);
  // A table too small: what fits, the iterator advanced by that only.
  ssize_t n = iov::extract_iter_to_sg(&it, 5000, &t, 1, 0);
  EXPECT_EQ(t.nents, 1u);
  EXPECT_EQ(iov::iov_iter_count(&it), 5000u - static_cast<size_t>(n));
  iov::iov_iter d;
  iov::iov_iter_discard(&d, iov::ITER_DEST, 100);
  iov::sg_table t2 = {sgl, 0, 0};
  EXPECT_EQ(iov::extract_iter_to_sg(&d, 100, &t2, 2, 0), -EIO);
  EXPECT_EQ(t2.nents, 0u);
}

}  // namespace
