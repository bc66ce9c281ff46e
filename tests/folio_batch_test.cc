// Tests of folio_batch.hpp: the kernel's folio_batch (include/linux/folio_batch.h)
// against a std::vector model: what add returns as the batch fills, the
// count and space, next's order and its end, and what init and reinit reset.
#include <gtest/gtest.h>

#include <vector>

#include "iov/folio.hpp"
#include "iov/folio_batch.hpp"

namespace {

// Real folios, put again when the case ends.
struct batch_folios {
  std::vector<iov::folio*> all;
  explicit batch_folios(unsigned n) {
    for (unsigned k = 0; k < n; k++) all.push_back(iov::folio_alloc(iov::GFP_KERNEL, 0));
  }
  ~batch_folios() {
    for (iov::folio* f : all) iov::folio_put(f);
  }
};

TEST(FolioBatch, FillsToItsSizeAndHandsBackInOrder) {
  batch_folios folios(iov::FOLIO_BATCH_SIZE);
  iov::folio_batch fb;
  iov::folio_batch_init(&fb);
  EXPECT_EQ(iov::folio_batch_count(&fb), 0u);
  EXPECT_EQ(iov::folio_batch_space(&fb), iov::FOLIO_BATCH_SIZE);
  EXPECT_EQ(iov::folio_batch_next(&fb), nullptr);
  std::vector<iov::folio*> model;
  for (iov::folio* f : folios.all) {
    model.push_back(f);
    // The space left after the add: 0 exactly when the batch is full.
    EXPECT_EQ(iov::folio_batch_add(&fb, f), iov::FOLIO_BATCH_SIZE - model.size());
    EXPECT_EQ(iov::folio_batch_count(&fb), model.size());
  }
  EXPECT_EQ(iov::folio_batch_space(&fb), 0u);
  for (iov::folio* want : model) EXPECT_EQ(iov::folio_batch_next(&fb), want);
  EXPECT_EQ(iov::folio_batch_next(&fb), nullptr);
  EXPECT_EQ(iov::folio_batch_next(&fb), nullptr) << "next stays at the end";
  EXPECT_EQ(iov::folio_batch_count(&fb), iov::FOLIO_BATCH_SIZE) << "next does not remove";
}

TEST(FolioBatch, ReinitEmptiesButKeepsTheDrainedMark) {
  batch_folios folios(3);
  iov::folio_batch fb;
  iov::folio_batch_init(&fb);
  EXPECT_FALSE(fb.percpu_pvec_drained);
  for (iov::folio* f : folios.all) iov::folio_batch_add(&fb, f);
  EXPECT_EQ(iov::folio_batch_next(&fb), folios.all[0]);
  fb.percpu_pvec_drained = true;
  iov::folio_batch_reinit(&fb);
  EXPECT_EQ(iov::folio_batch_count(&fb), 0u);
  EXPECT_EQ(iov::folio_batch_space(&fb), iov::FOLIO_BATCH_SIZE);
  EXPECT_EQ(iov::folio_batch_next(&fb), nullptr);
  EXPECT_TRUE(fb.percpu_pvec_drained) << "reinit, unlike init, keeps it (as the kernel's)";
  iov::folio_batch_add(&fb, folios.all[2]);
  EXPECT_EQ(iov::folio_batch_next(&fb), folios.all[2]) << "a reinitialised batch starts again at slot 0";
  iov::folio_batch_init(&fb);
  EXPECT_FALSE(fb.percpu_pvec_drained);
}

TEST(FolioBatch, PagevecSizeIsTheOldName) {
  EXPECT_EQ(iov::PAGEVEC_SIZE, iov::FOLIO_BATCH_SIZE);
  EXPECT_EQ(iov::FOLIO_BATCH_SIZE, 31u);
}

}  // namespace
