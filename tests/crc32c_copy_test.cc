// crc32c_copy_test.cc: the fused copy+CRC forms of crc32c.hpp,
// crc32c_and_copy_to_iter and crc32c_and_copy_from_iter, inline and out of
// line, over random layouts of every iterator type, against the model of
// support/crc32c_model.hpp, at every SIMD level this CPU has: the copy must
// land exactly where the model says and nowhere else, and the CRC must be
// that of the bytes copied. (Their step alone, crc32c_copy_update, is in
// crc32c_state_test.cc.)
//
//   build/release/tests/crc32c_copy_test --gtest_filter='Crc32cIter.*'
//   IOV_TEST_SEED=12345 build/release/tests/crc32c_copy_test   # a fresh seed instead of the fixed one
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <iov/crc32c.hpp>
#include <iov/internal/outofline.hpp>
#include <iov/iov_iter.hpp>
#include <iov/position.hpp>

#include "support/crc32c_model.hpp"
#include "support/model.hpp"

// The cases live in the model's namespace, so its names (model_crc, layout,
// draw) and the test model's (Kind, kAllKinds) need no qualification.
namespace iov_test::crc32c_model {
namespace {

// One of the four fused forms.
size_t fused(bool to_iter, bool outofline, u8* addr, size_t bytes, uint32_t* crc, iov::iov_iter* it) {
  if (to_iter)
    return outofline ? iov::internal::outofline::crc32c_and_copy_to_iter(addr, bytes, crc, it)
                     : iov::crc32c_and_copy_to_iter(addr, bytes, crc, it);
  return outofline ? iov::internal::outofline::crc32c_and_copy_from_iter(addr, bytes, crc, it)
                   : iov::crc32c_and_copy_from_iter(addr, bytes, crc, it);
}

// The fused copies against the model: copy, then CRC of the bytes copied.
// Both forms start from the same memory; the copy must land exactly where the
// model says and nowhere else.
void check_fused(Kind k, const trial& t, bool to_iter, std::mt19937_64& rng) {
  SCOPED_TRACE(testing::Message() << kind_name(k) << (to_iter ? " to_iter" : " from_iter") << " total " << t.total
                                  << " skip " << t.skip << " bytes " << t.bytes);
  layout lay(k, t.total, rng);
  std::vector<u8> flat(t.bytes + 64);
  fill_random(rng, flat.data(), flat.size());
  size_t flat_off = rng() % 64;
  const std::vector<u8> mem0 = lay.snapshot(), flat0 = flat;
  size_t want = to_iter || k != Kind::discard ? std::min(t.bytes, t.total - t.skip) : 0;
  // The bytes the copy moves: the source's, whichever side that is.
  const std::vector<u8> moved = to_iter ? std::vector<u8>(flat0.begin() + static_cast<long>(flat_off),
                                                          flat0.begin() + static_cast<long>(flat_off + want))
                                        : lay.gather(t.skip, want);
  std::vector<u8> model_mem = mem0, model_flat = flat0;
  if (to_iter) {
    lay.scatter(t.skip, moved.data(), want);
    model_mem = lay.snapshot();
  } else {
    std::copy(moved.begin(), moved.end(), model_flat.begin() + static_cast<long>(flat_off));
  }

  iov::iov_iter results[2];
  uint32_t crcs[2];
  for (int outofline = 0; outofline < 2; outofline++) {
    SCOPED_TRACE(outofline ? "out of line" : "inline");
    lay.restore(mem0);
    flat = flat0;
    iov::iov_iter& it = results[outofline];
    lay.init(&it, to_iter ? iov::ITER_DEST : iov::ITER_SOURCE);
    iov::iov_iter_advance(&it, t.skip);
    uint32_t& crc = crcs[outofline];
    crc = t.c0;
    ASSERT_EQ(fused(to_iter, outofline, flat.data() + flat_off, t.bytes, &crc, &it), want);
    EXPECT_EQ(it.count, t.total - t.skip - want);
    EXPECT_EQ(crc, model_crc(t.c0, moved.data(), want));
    EXPECT_TRUE(lay.snapshot() == model_mem) << "iterator memory differs from the model";
    EXPECT_TRUE(flat == model_flat) << "flat buffer differs from the model";
  }
  EXPECT_EQ(crcs[1], crcs[0]);
  expect_same_position(results[0], results[1]);
}

TEST(Crc32cIter, FusedCopiesMatchModel) {
  auto rng = rng_for("fused");
  for_each_level([&] {
    for (Kind k : kAllKinds)
      for (int n = 0; n < kTrials; n++) {
        trial t = draw(rng, k);
        ASSERT_NO_FATAL_FAILURE(check_fused(k, t, true, rng));
        if (k != Kind::discard) {  // a discard iterator is never a source
          ASSERT_NO_FATAL_FAILURE(check_fused(k, t, false, rng));
        }
      }
  });
}

// A copy into an ITER_SOURCE iterator (or out of an ITER_DEST one) is the
// kernel's WARN_ON_ONCE: 0, nothing copied, crc and iterator unchanged.
TEST(Crc32cIter, WrongDirectionCopiesNothing) {
  auto rng = rng_for("direction");
  for (Kind k : kAllKinds) {
    SCOPED_TRACE(kind_name(k));
    layout lay(k, 3000, rng);
    const std::vector<u8> mem0 = lay.snapshot();
    std::vector<u8> flat(3000, 0x77);
    for (int form = 0; form < 4; form++) {
      iov::iov_iter it, before;
      bool to_iter = form < 2, outofline = form % 2;
      lay.init(&it, to_iter ? iov::ITER_SOURCE : iov::ITER_DEST);  // discard is always ITER_DEST
      if (to_iter && k == Kind::discard) continue;
      before = it;
      uint32_t crc = 0xabcdef;
      EXPECT_EQ(fused(to_iter, outofline, flat.data(), 1000, &crc, &it), 0u) << "form " << form;
      EXPECT_EQ(crc, 0xabcdefu);
      expect_same_position(it, before);
      EXPECT_TRUE(lay.snapshot() == mem0);
      EXPECT_TRUE(std::all_of(flat.begin(), flat.end(), [](u8 c) { return c == 0x77; }));
    }
  }
}

#if IOV_FAULT_INJECTION
// A fault in a user copy ends the copy short; the CRC covers what was copied.
TEST(Crc32cIter, ShortUserCopy) {
  auto rng = rng_for("fault");
  for (Kind k : {Kind::ubuf, Kind::iovec})
    for (int n = 0; n < 20; n++) {
      layout lay(k, 6000, rng);
      std::vector<u8> flat(6000);
      fill_random(rng, flat.data(), flat.size());
      size_t budget = rng() % 6000;
      for (int form = 0; form < 4; form++) {
        bool to_iter = form < 2, outofline = form % 2;
        iov::iov_iter it;
        lay.init(&it, to_iter ? iov::ITER_DEST : iov::ITER_SOURCE);
        uint32_t crc = 7;
        iov::internal::usercopy_fault_after(budget);
        size_t got = fused(to_iter, outofline, flat.data(), 6000, &crc, &it);
        iov::internal::usercopy_fault_clear();
        ASSERT_EQ(got, budget);
        EXPECT_EQ(it.count, 6000 - budget);
        std::vector<u8> moved = lay.gather(0, budget);  // for to_iter, what landed there
        EXPECT_EQ(crc, model_crc(7, moved.data(), budget));
        if (to_iter) {
          EXPECT_TRUE(std::equal(moved.begin(), moved.end(), flat.begin()));
        }
      }
    }
}
#endif

}  // namespace
}  // namespace iov_test::crc32c_model
