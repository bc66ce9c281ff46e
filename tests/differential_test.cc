// differential_test.cc: random sequences of data and position operations
// (copies, zeroing, nocache copies, CRC32C, zero scans, advance, revert, ...) on
// random iterators of every type, each step checked against the flat model of
// support/model.hpp, and each run a second way (the *_outofline twin, or a
// walk through generic_iterate() on a copy) with identical results.
//
//   ctest -R differential_test
//   IOV_TEST_SEED=12345 ./differential_test     # one fresh seed instead of the fixed ones
#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/internal/outofline.hpp"
#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using iov_test::Kind;
using iov_test::Layout;
using bytes = std::vector<unsigned char>;

enum class Op { copy_to, copy_from, zero, copy_to_full, copy_from_full, advance, revert, truncate, reexpand, save, restore,
                nocache, crc, is_zero, skip_zeroes };
constexpr Op kOps[] = {Op::copy_to, Op::copy_from, Op::zero,    Op::copy_to_full, Op::copy_from_full,
                       Op::advance, Op::revert,    Op::truncate, Op::reexpand,    Op::save,
                       Op::restore, Op::nocache,   Op::crc,      Op::is_zero,     Op::skip_zeroes};
const char* op_name(Op op) {
  static const char* const names[] = {"copy_to_iter", "copy_from_iter", "iov_iter_zero", "copy_to_iter_full",
                                      "copy_from_iter_full", "iov_iter_advance", "iov_iter_revert",
                                      "iov_iter_truncate", "iov_iter_reexpand", "iov_iter_save_state",
                                      "iov_iter_restore", "copy_from_iter_nocache", "crc32c_iter",
                                      "iov_iter_is_zero", "iov_iter_skip_zeroes"};
  return names[static_cast<int>(op)];
}

// Collects the bytes a walk hands its steps, whatever the direction.
size_t gather_step(void* base, size_t progress, size_t len, void* priv, void*) {
  auto* out = static_cast<bytes*>(priv);
  std::copy_n(static_cast<unsigned char*>(base), len, out->begin() + progress);
  return 0;
}
size_t noop_step(void*, size_t, size_t, void*, void*) { return 0; }

// The bytes under the iterator, read by walking a copy of it.
bytes under(const iov::iov_iter& it, bool outofline, size_t* walked) {
  iov::iov_iter copy = it;
  bytes out(it.count);
  *walked = outofline ? iov::generic_iterate(&copy, it.count, &out, nullptr, gather_step, gather_step)
                      : iov::iterate_and_advance2(&copy, it.count, &out, nullptr, gather_step, gather_step);
  out.resize(*walked);
  return out;
}

// One iterator and its model: the memory (flat), the position and the count.
struct Sim {
  std::unique_ptr<Layout> l;
  bytes flat;
  iov::iov_iter it;
  unsigned dir;
  size_t pos = 0, count = 0;
  struct Saved {
    iov::iov_iter_state st;
    size_t pos, count;
  };
  std::optional<Saved> saved;
};

// The iterator agrees with the model, read inline and through generic_iterate.
void check(const Sim& s) {
  ASSERT_EQ(s.it.count, s.count);
  size_t walked_inline, walked_generic;
  bytes a = under(s.it, false, &walked_inline), b = under(s.it, true, &walked_generic);
  EXPECT_EQ(walked_inline, s.count);
  EXPECT_EQ(walked_generic, s.count);
  if (s.l->kind() != Kind::discard) {
    ASSERT_LE(s.pos + s.count, s.flat.size());
    EXPECT_TRUE(std::equal(a.begin(), a.end(), s.flat.begin() + s.pos, s.flat.begin() + s.pos + s.count))
        << "the bytes under the iterator (inline walk)";
  }
  EXPECT_EQ(a, b) << "inline and generic walks differ";
}

// Runs a data op that writes the iterator's memory both ways from the same
// starting memory, and checks each against the model.
template <class Inline, class Twin>
void write_both_ways(Sim& s, size_t want, Inline&& op, Twin&& twin, const bytes& expect_flat) {
  bytes before = s.l->gather();
  iov::iov_iter tw = s.it;
  EXPECT_EQ(twin(&tw), want) << "outofline";
  EXPECT_EQ(s.l->gather(), expect_flat) << "outofline";
  s.l->scatter(before);
  EXPECT_EQ(op(&s.it), want);
  EXPECT_EQ(s.l->gather(), expect_flat);
  EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it)) << "outofline leaves another state";
}

void step(Sim& s, Op op, std::mt19937_64& rng) {
  auto uni = [&](size_t hi) { return std::uniform_int_distribution<size_t>(0, hi)(rng); };
  // Mostly within the count, sometimes past it or huge.
  size_t n = uni(9) == 0 ? SIZE_MAX : uni(s.count + 16);
  size_t fit = std::min(n, s.count);
  bool dest = s.dir == iov::ITER_DEST, data = s.l->kind() != Kind::discard;
  switch (op) {
    case Op::copy_to: {
      bytes src = iov_test::random_bytes(rng(), fit), expect = s.flat;
      size_t want = dest ? fit : 0;
      if (data) std::copy_n(src.begin(), want, expect.begin() + s.pos);
      write_both_ways(
          s, want, [&](iov::iov_iter* i) { return iov::copy_to_iter(src.data(), n, i); },
          [&](iov::iov_iter* i) { return iov::internal::outofline::copy_to_iter(src.data(), n, i); }, expect);
      s.flat = expect;
      s.pos += want, s.count -= want;
      break;
    }
    case Op::zero: {
      bytes expect = s.flat;
      if (data) std::fill_n(expect.begin() + s.pos, fit, 0);
      write_both_ways(
          s, fit, [&](iov::iov_iter* i) { return iov::iov_iter_zero(n, i); },
          [&](iov::iov_iter* i) { return iov::internal::outofline::iov_iter_zero(n, i); }, expect);
      s.flat = expect;
      s.pos += fit, s.count -= fit;
      break;
    }
    case Op::copy_from: {
      size_t want = dest ? 0 : fit;
      bytes d1(fit + 1, 0xee), d2(fit + 1, 0xee), expect(fit + 1, 0xee);
      std::copy_n(s.flat.begin() + s.pos, want, expect.begin());
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::internal::outofline::copy_from_iter(d2.data(), n, &tw), want);
      EXPECT_EQ(iov::copy_from_iter(d1.data(), n, &s.it), want);
      EXPECT_EQ(d1, expect);
      EXPECT_EQ(d2, expect);
      EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it));
      s.pos += want, s.count -= want;
      break;
    }
    case Op::nocache: {
      size_t want = dest ? 0 : fit;
      bytes d1(fit + 1, 0xee), d2(fit + 1, 0xee), expect(fit + 1, 0xee);
      std::copy_n(s.flat.begin() + s.pos, want, expect.begin());
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::internal::outofline::copy_from_iter_nocache(d2.data(), n, &tw), want);
      EXPECT_EQ(iov::copy_from_iter_nocache(d1.data(), n, &s.it), want);
      EXPECT_EQ(d1, expect);
      EXPECT_EQ(d2, expect);
      EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it));
      s.pos += want, s.count -= want;
      break;
    }
    case Op::crc: {  // either direction; DISCARD has no bytes to sum
      size_t want = data ? fit : 0;
      uint32_t c0 = static_cast<uint32_t>(rng()), c1 = c0, c2 = c0;
      uint32_t expect = iov::crc32c(c0, s.flat.data() + s.pos, want);
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::internal::outofline::crc32c_iter(&tw, n, &c2), want);
      EXPECT_EQ(iov::crc32c_iter(&s.it, n, &c1), want);
      EXPECT_EQ(c1, expect);
      EXPECT_EQ(c2, expect);
      EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it));
      s.pos += want, s.count -= want;
      break;
    }
    case Op::is_zero: {
      bool expect = n == 0 || (data && n <= s.count &&
                               std::all_of(s.flat.begin() + s.pos, s.flat.begin() + s.pos + n, [](auto b) { return !b; }));
      EXPECT_EQ(iov::iov_iter_is_zero(&s.it, n), expect);
      EXPECT_EQ(iov::internal::outofline::iov_iter_is_zero(&s.it, n), expect);
      break;
    }
    case Op::skip_zeroes: {
      size_t want = 0;
      while (data && want < fit && !s.flat[s.pos + want]) want++;
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::internal::outofline::iov_iter_skip_zeroes(&tw, n), want);
      EXPECT_EQ(iov::iov_iter_skip_zeroes(&s.it, n), want);
      EXPECT_EQ(iov_test::state_of(tw), iov_test::state_of(s.it));
      s.pos += want, s.count -= want;
      break;
    }
    case Op::copy_to_full: {
      bytes src = iov_test::random_bytes(rng(), fit);
      bool ok = n == 0 || (dest && n <= s.count);  // nothing asked is all done
      // A short copy still writes what fit before reverting, as the kernel's.
      if (dest && data) std::copy_n(src.begin(), fit, s.flat.begin() + s.pos);
      EXPECT_EQ(iov::copy_to_iter_full(src.data(), n, &s.it), ok);
      EXPECT_EQ(s.l->gather(), s.flat);
      if (ok) s.pos += n, s.count -= n;
      break;
    }
    case Op::copy_from_full: {
      bytes dst(fit + 1);
      bool ok = n == 0 || (!dest && n <= s.count);
      EXPECT_EQ(iov::copy_from_iter_full(dst.data(), n, &s.it), ok);
      if (ok) {
        EXPECT_TRUE(std::equal(dst.begin(), dst.begin() + n, s.flat.begin() + s.pos));
        s.pos += n, s.count -= n;
      }
      break;
    }
    case Op::advance: {
      iov::iov_iter tw = s.it;
      EXPECT_EQ(iov::generic_iterate(&tw, n, nullptr, nullptr, noop_step, noop_step), fit);
      iov::iov_iter_advance(&s.it, n);
      EXPECT_EQ(tw.count, s.it.count);
      EXPECT_EQ(iov_test::first_piece(tw), iov_test::first_piece(s.it)) << "advance and an empty walk differ";
      s.pos += fit, s.count -= fit;
      break;
    }
    case Op::revert: {
      size_t back = uni(s.pos);
      iov::iov_iter_revert(&s.it, back);
      s.pos -= back, s.count += back;
      break;
    }
    case Op::truncate: {
      uint64_t c = uni(3) == 0 ? UINT64_MAX : uni(s.count + 10);
      iov::iov_iter_truncate(&s.it, c);
      s.count = std::min<uint64_t>(s.count, c);
      break;
    }
    case Op::reexpand: {
      size_t c = uni(s.l->total() - s.pos);
      iov::iov_iter_reexpand(&s.it, c);
      s.count = c;
      break;
    }
    case Op::save: {
      Sim::Saved sv{{}, s.pos, s.count};
      iov::iov_iter_save_state(&s.it, &sv.st);
      s.saved = sv;
      break;
    }
    case Op::restore: {
      if (!s.saved) break;
      iov::iov_iter_restore(&s.it, &s.saved->st);
      // XARRAY, DISCARD and the queues are left alone (the kernel warns)
      if (s.l->kind() != Kind::xarray && s.l->kind() != Kind::discard && !iov_test::queued(s.l->kind()))
        s.pos = s.saved->pos, s.count = s.saved->count;
      break;
    }
  }
}

void run_sequence(uint64_t seed, Kind kind, int ops) {
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(kind));
  Sim s;
  s.l = Layout::random(kind, rng, 4 * iov::PAGE_SIZE);
  s.l->fill(seed);
  s.flat = s.l->gather();
  s.dir = kind == Kind::discard || rng() % 2 ? iov::ITER_DEST : iov::ITER_SOURCE;
  s.it = s.l->iter(s.dir);
  s.count = s.l->total();
  ASSERT_NO_FATAL_FAILURE(check(s));
  for (int k = 0; k < ops; k++) {
    Op op = kOps[rng() % std::size(kOps)];
    SCOPED_TRACE(testing::Message() << "op " << k << " " << op_name(op) << " at pos " << s.pos << " count "
                                    << s.count);
    step(s, op, rng);
    ASSERT_NO_FATAL_FAILURE(check(s));
    if (testing::Test::HasFailure()) return;  // the first divergence is the one to read
  }
  EXPECT_EQ(s.l->gather(), s.flat);
  EXPECT_TRUE(s.l->guards_intact()) << "a write outside the segments";
}

class Differential : public testing::TestWithParam<Kind> {};

TEST_P(Differential, RandomSequencesFollowTheModel) {
  for (uint64_t seed : iov_test::test_seeds({1, 2, 3, 4, 5, 6, 7, 8})) {
    for (int layout = 0; layout < 6; layout++) {
      uint64_t s = seed * 100 + layout;
      SCOPED_TRACE(testing::Message() << "IOV_TEST_SEED=" << seed << " layout " << layout << " ("
                                      << iov_test::kind_name(GetParam()) << ")");
      run_sequence(s, GetParam(), 40);
      if (HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, Differential, testing::ValuesIn(iov_test::kAllKinds),
                         [](const testing::TestParamInfo<Kind>& info) { return iov_test::kind_name(info.param); });

}  // namespace
