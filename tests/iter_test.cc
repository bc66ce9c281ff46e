// Tests of the C++ layer (include/iov/cxx/iter.hpp): the factories build the same
// iterators as the kernel initializers, the methods move them as the kernel
// calls do, the typed walks match the generic one, and the validated imports
// follow the kernel's import_iovec()/import_ubuf() rules with clear messages.
#include "iov/cxx/iter.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "iov/iov.hpp"
#include "support/model.hpp"

namespace {

using ::testing::HasSubstr;

std::vector<std::byte> pattern(size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (size_t k = 0; k < n; k++)
    v[k] = static_cast<std::byte>((k * 131 + seed) & 0xff);
  return v;
}

TEST(Iter, UbufFactoryMatchesKernelInitializer) {
  std::vector<std::byte> buf(1000);
  iov::iter it = iov::iter::ubuf(iov::iter_dir::dest, buf);
  iov::iov_iter raw;
  iov::iov_iter_ubuf(&raw, iov::ITER_DEST, buf.data(), buf.size());
  EXPECT_EQ(it.type(), iov::ITER_UBUF);
  EXPECT_EQ(it.count(), raw.count);
  EXPECT_EQ(it.raw().ubuf, raw.ubuf);
  EXPECT_EQ(it.rw(), iov::ITER_DEST);
}

TEST(Iter, CopyToAndFromThroughKvec) {
  std::vector<std::byte> a(300), b(700);
  iov::kvec kv[] = {{a.data(), a.size()}, {nullptr, 0}, {b.data(), b.size()}};
  iov::iter dst = iov::iter::kvec(iov::iter_dir::dest, kv);
  EXPECT_EQ(dst.count(), 1000u);
  std::vector<std::byte> src = pattern(1200, 7);
  EXPECT_EQ(dst.copy_to(src), 1000u);
  EXPECT_TRUE(dst.empty());
  EXPECT_EQ(std::memcmp(a.data(), src.data(), 300), 0);
  EXPECT_EQ(std::memcmp(b.data(), src.data() + 300, 700), 0);

  iov::iter from = iov::iter::kvec(iov::iter_dir::source, kv);
  std::vector<std::byte> out(1000);
  EXPECT_TRUE(from.copy_from_full(out));
  EXPECT_EQ(std::memcmp(out.data(), src.data(), 1000), 0);
}

TEST(Iter, CopyToFullRevertsOnShortCopy) {
  std::vector<std::byte> a(100);
  iov::iter it = iov::iter::ubuf(iov::iter_dir::dest, a);
  std::vector<std::byte> src = pattern(101, 1);
  EXPECT_FALSE(it.copy_to_full(src));
  EXPECT_EQ(it.count(), 100u);  // reverted
}

TEST(Iter, WrongDirectionCopiesNothing) {
  std::vector<std::byte> a(64);
  iov::iter it = iov::iter::ubuf(iov::iter_dir::source, a);
  std::vector<std::byte> src = pattern(64, 3);
  EXPECT_EQ(it.copy_to(src), 0u);
  EXPECT_EQ(it.count(), 64u);
  EXPECT_EQ(a[0], std::byte{0});
}

TEST(Iter, PositionMethodsMatchKernelCalls) {
  iov::page* p = iov::alloc_pages(0, 2);
  iov::bio_vec bv[] = {{p, 1000, 100}, {p + 1, 4096, 0}, {p + 2, 10, 5}};
  iov::iter it = iov::iter::bvec(iov::iter_dir::source, bv);
  ASSERT_EQ(it.count(), 5106u);
  iov::iov_iter_state st = it.save_state();
  it.advance(1500);
  EXPECT_EQ(it.raw().bvec, &bv[1]);
  EXPECT_EQ(it.raw().iov_offset, 500u);
  EXPECT_EQ(iov::iov_iter_single_seg_count(it.get()), 3596u);
  it.revert(600);
  EXPECT_EQ(it.raw().bvec, &bv[0]);
  EXPECT_EQ(it.raw().iov_offset, 900u);
  it.truncate(10);
  EXPECT_EQ(it.count(), 10u);
  it.reexpand(4206);
  EXPECT_EQ(it.count(), 4206u);
  it.restore(st);
  EXPECT_EQ(it.count(), 5106u);
  EXPECT_EQ(it.raw().bvec, &bv[0]);
  EXPECT_EQ(it.raw().iov_offset, 0u);
  EXPECT_EQ(it.npages(100), 3);
  iov::free_pages(p, 2);
}

TEST(Iter, IterateHandsOutPiecesAndStopsShort) {
  iov::page* p = iov::alloc_pages(0, 1);
  iov::bio_vec bv[] = {{p, 6000, 100}};
  iov::iter it = iov::iter::bvec(iov::iter_dir::source, bv);
  std::vector<size_t> sizes, progress;
  size_t n = it.iterate(10000, [&](std::span<std::byte> piece, size_t prog) -> size_t {
    sizes.push_back(piece.size());
    progress.push_back(prog);
    return prog == 0 ? 0 : piece.size() - 10;  // stop 10 bytes into the second piece
  });
  EXPECT_THAT(sizes, ::testing::ElementsAre(3996u, 2004u));
  EXPECT_THAT(progress, ::testing::ElementsAre(0u, 3996u));
  EXPECT_EQ(n, 4006u);
  EXPECT_EQ(it.count(), 6000u - 4006u);
  iov::free_pages(p, 1);
}

TEST(TypedIter, WalksLikeTheGenericIter) {
  iov::page* p = iov::alloc_pages(0, 2);
  iov::bio_vec bv[] = {{p, 5000, 3000}, {p + 2, 0, 0}, {p + 2, 2000, 2000}};
  auto typed = iov::bvec_typed_iter::make(iov::iter_dir::dest, std::span<const iov::bio_vec>(bv));
  iov::iter generic = iov::iter::bvec(iov::iter_dir::dest, bv);
  std::vector<std::pair<std::byte*, size_t>> a, b;
  auto record = [](auto& out) {
    return [&out](std::span<std::byte> piece, size_t) -> size_t {
      out.emplace_back(piece.data(), piece.size());
      return 0;
    };
  };
  EXPECT_EQ(typed.iterate(6500, record(a)), 6500u);
  EXPECT_EQ(generic.iterate(6500, record(b)), 6500u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(typed.count(), generic.count());
  EXPECT_EQ(typed.raw().bvec, generic.raw().bvec);
  EXPECT_EQ(typed.raw().iov_offset, generic.raw().iov_offset);
  iov::free_pages(p, 2);
}

// The queue types: the typed walk hands its step the pieces the model says a
// walk of those bytes has (page-split, across queue segments), moves the
// iterator as the generic walk does, and stops where a short step stops it.
using FlatPiece = std::pair<std::byte*, size_t>;
std::vector<FlatPiece> model_pieces(const iov_test::Layout& l, size_t pos, size_t len) {
  std::vector<FlatPiece> v;
  for (const iov_test::Chunk& c : l.pieces(pos, len))
    v.emplace_back(reinterpret_cast<std::byte*>(c.base), c.len);
  return v;
}

template <class Typed>
void expect_typed_queue_walk(const iov_test::Layout& l, Typed typed) {
  SCOPED_TRACE(iov_test::kind_name(l.kind()));
  iov::iter generic(l.iter(iov::ITER_SOURCE));
  EXPECT_EQ(typed.type(), generic.type());
  EXPECT_EQ(typed.count(), l.total());
  std::vector<FlatPiece> a, b;
  auto record = [](std::vector<FlatPiece>& out) {
    return [&out](std::span<std::byte> piece, size_t) -> size_t {
      if (!piece.empty())
        out.emplace_back(piece.data(), piece.size());
      return 0;
    };
  };
  size_t first = l.total() / 3 + 1;
  EXPECT_EQ(typed.iterate(first, record(a)), first);
  EXPECT_EQ(generic.iterate(first, record(b)), first);
  EXPECT_EQ(a, model_pieces(l, 0, first));
  EXPECT_EQ(a, b);
  EXPECT_EQ(iov_test::state_of(typed.raw()), iov_test::state_of(generic.raw()));
  iov_test::expect_at(l, typed.raw(), first, l.total() - first);
  // A step that leaves 7 bytes of its second piece ends the walk there.
  size_t calls = 0, progress_at_stop = 0;
  size_t n = typed.iterate(SIZE_MAX, [&](std::span<std::byte> piece, size_t progress) -> size_t {
    if (++calls < 2 || piece.size() <= 7)
      return 0;
    progress_at_stop = progress + piece.size() - 7;
    return 7;
  });
  if (progress_at_stop) {
    EXPECT_EQ(n, progress_at_stop);
    iov_test::expect_at(l, typed.raw(), first + n, l.total() - first - n);
  } else {
    EXPECT_EQ(n, l.total() - first);
  }
}

TEST(TypedIter, FolioqWalksLikeTheModel) {
  for (auto& l : {iov_test::Layout::make_folioq({0, 1, 0, 2}, 0, 100), iov_test::Layout::make_folioq({1, 0, 2}, 30, 5000)}) {
    l->fill(3);
    auto typed = iov::folioq_typed_iter::make(iov::iter_dir::source, *l->folioq_head(), l->folioq_first_slot(),
                                              static_cast<unsigned>(l->folioq_offset()), l->total());
    expect_typed_queue_walk(*l, typed);
  }
}

TEST(TypedIter, BvecqWalksLikeTheModel) {
  auto l = iov_test::Layout::make_bvecq({{5000, 3000}, {0, 0}, {100, 7}, {4096, 0}, {2000, 2096}}, {2, 0, 3});
  l->fill(4);
  auto typed = iov::bvecq_typed_iter::make(iov::iter_dir::source, *l->bvecq_head(), 0u, 0u, l->total());
  expect_typed_queue_walk(*l, typed);
}

TEST(TypedIter, DiscardCountsWithoutCallingTheStep) {
  auto d = iov::discard_typed_iter::make(size_t{500});
  int calls = 0;
  EXPECT_EQ(d.iterate(200, [&](std::span<std::byte>, size_t) -> size_t { return ++calls, 0; }), 200u);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(d.count(), 300u);
}

TEST(ImportIovec, AcceptsAValidArray) {
  std::vector<std::byte> a(10), b(20);
  ::iovec v[] = {{a.data(), a.size()}, {nullptr, 0}, {b.data(), b.size()}};
  auto it = iov::iter::import_iovec(iov::iter_dir::source, v);
  ASSERT_TRUE(it.ok()) << it.status();
  EXPECT_EQ(it->count(), 30u);
  EXPECT_EQ(it->type(), iov::ITER_IOVEC);
  EXPECT_EQ(it->raw().nr_segs, 3u);
}

TEST(ImportIovec, RejectsTooManySegments) {
  std::vector<std::byte> a(1);
  std::vector<::iovec> v(UIO_MAXIOV + 1, ::iovec{a.data(), 1});
  auto it = iov::iter::import_iovec(iov::iter_dir::source, v);
  ASSERT_FALSE(it.ok());
  EXPECT_EQ(it.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(it.status().message(), HasSubstr("UIO_MAXIOV"));
  v.pop_back();
  EXPECT_TRUE(iov::iter::import_iovec(iov::iter_dir::source, v).ok());
}

// The kernel's access_ok(): an address in the kernel's half is -EFAULT there
// and a refusal here, naming the segment; a null base is in range, accepted
// by both (a copy through it would fault, as in the kernel).
TEST(ImportIovec, RefusesWhatAccessOkRefuses) {
  std::vector<std::byte> a(8);
  ::iovec v[] = {{a.data(), 8}, {reinterpret_cast<void*>(0xffff880000000000), 10}};
  auto it = iov::iter::import_iovec(iov::iter_dir::dest, v);
  ASSERT_FALSE(it.ok());
  EXPECT_EQ(it.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(it.status().message(), HasSubstr("iovec[1]"));
  EXPECT_THAT(it.status().message(), HasSubstr("access_ok"));
  ::iovec null_base[] = {{a.data(), 8}, {nullptr, 4}};
  EXPECT_TRUE(iov::iter::import_iovec(iov::iter_dir::dest, null_base).ok());
}

TEST(ImportIovec, OneSegmentIsUbuf) {
  std::vector<std::byte> a(8);
  ::iovec v[] = {{a.data(), 8}};
  auto it = iov::iter::import_iovec(iov::iter_dir::source, v);
  ASSERT_TRUE(it.ok()) << it.status();
  EXPECT_EQ(it->type(), iov::ITER_UBUF);
  EXPECT_EQ(it->raw().ubuf, a.data());
  EXPECT_EQ(it->count(), 8u);
}

TEST(ImportIovec, RejectsLengthsThatOverflow) {
  std::vector<std::byte> a(8);
  ::iovec v[] = {{a.data(), 8}, {a.data(), static_cast<size_t>(SSIZE_MAX) + 1}};
  auto it = iov::iter::import_iovec(iov::iter_dir::dest, v);
  ASSERT_FALSE(it.ok());
  EXPECT_THAT(it.status().message(), HasSubstr("overflows"));
  ::iovec wrap[] = {{reinterpret_cast<void*>(UINTPTR_MAX - 10), 100}};
  auto w = iov::iter::import_iovec(iov::iter_dir::dest, wrap);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("wraps"));
}

TEST(ImportIovec, CapsTheTotalAtMaxRwCount) {
  // Lengths are never dereferenced here: only the count is computed.
  static char one;
  ::iovec v[] = {{&one, iov::MAX_RW_COUNT - 100}, {&one, 1000}, {&one, 5}};
  auto it = iov::iter::import_iovec(iov::iter_dir::dest, v);
  ASSERT_TRUE(it.ok()) << it.status();
  EXPECT_EQ(it->count(), iov::MAX_RW_COUNT);
}

TEST(ImportIovec, RejectsBadDirection) {
  ::iovec v[] = {{nullptr, 0}};
  auto it = iov::iter::import_iovec(static_cast<iov::iter_dir>(5), v);
  ASSERT_FALSE(it.ok());
  EXPECT_THAT(it.status().message(), HasSubstr("direction"));
}

TEST(ImportUbuf, ValidatesAndCaps) {
  std::vector<std::byte> a(64);
  auto ok = iov::iter::import_ubuf(iov::iter_dir::dest, a.data(), a.size());
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->count(), 64u);
  auto high = iov::iter::import_ubuf(iov::iter_dir::dest, reinterpret_cast<void*>(0xffff880000000000), 1);
  ASSERT_FALSE(high.ok());
  EXPECT_THAT(high.status().message(), HasSubstr("access_ok"));
  EXPECT_TRUE(iov::iter::import_ubuf(iov::iter_dir::dest, nullptr, 0).ok());
  static char one;
  auto big = iov::iter::import_ubuf(iov::iter_dir::dest, &one, size_t{1} << 40);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->count(), iov::MAX_RW_COUNT);
  auto wrap = iov::iter::import_ubuf(iov::iter_dir::dest, reinterpret_cast<void*>(UINTPTR_MAX - 10), 100);
  EXPECT_FALSE(wrap.ok());
}

}  // namespace
