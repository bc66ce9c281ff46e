// iterate_test.cc: the step contract of iterate.hpp (api-contract.md,
// "Generic iteration"), for every iterator type and every form of the walk:
// the inline template, generic_iterate() through function pointers, and the
// typed iterate_<type>(). Expected pieces come from the flat model of
// support/model.hpp, never from the library.
//
//   ctest -R iterate_test
//   ./iterate_test --gtest_filter='Iterate.ShortStep*'
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/internal/outofline.hpp"
#include "iov/iov.hpp"
#include "support/counted_walk.hpp"
#include "support/model.hpp"

namespace {

using iov::PAGE_SIZE;
using iov_test::Kind;
using iov_test::Layout;
using iov_test::Chunk;

// What a step saw.
struct Piece {
  void* base;
  size_t progress, len;
  bool user;  // ustep (true) or step
  void* priv;
  void* priv2;
  bool operator==(const Piece&) const = default;
};

// The steps record every call; the non-empty call number short_at returns
// short_remain (clamped to its len) instead of 0.
struct Recorder {
  std::vector<Piece> pieces;
  size_t short_at = SIZE_MAX, short_remain = 0, nonempty = 0;
};

size_t record(void* base, size_t progress, size_t len, void* priv, void* priv2, bool user) {
  auto* rec = static_cast<Recorder*>(priv);
  rec->pieces.push_back({base, progress, len, user, priv, priv2});
  if (len && rec->nonempty++ == rec->short_at) return std::min(rec->short_remain, len);
  return 0;
}
size_t record_ustep(void* base, size_t progress, size_t len, void* priv, void* priv2) {
  return record(base, progress, len, priv, priv2, true);
}
size_t record_kstep(void* base, size_t progress, size_t len, void* priv, void* priv2) {
  return record(base, progress, len, priv, priv2, false);
}

enum class Form { inline2, generic, typed };
constexpr Form kForms[] = {Form::inline2, Form::generic, Form::typed};
const char* form_name(Form f) { return f == Form::inline2 ? "inline" : f == Form::generic ? "generic" : "typed"; }

size_t walk(Form form, iov::iov_iter* it, size_t len, Recorder* rec, void* priv2) {
  // Lambdas, so that the templates inline the steps.
  auto u = [](void* b, size_t p, size_t l, void* pr, void* p2) { return record_ustep(b, p, l, pr, p2); };
  auto k = [](void* b, size_t p, size_t l, void* pr, void* p2) { return record_kstep(b, p, l, pr, p2); };
  switch (form) {
    case Form::inline2:
      return iov::iterate_and_advance2(it, len, rec, priv2, u, k);
    case Form::generic:
      return iov::generic_iterate(it, len, rec, priv2, record_ustep, record_kstep);
    default:
      switch (it->type) {
        case iov::ITER_UBUF: return iov::iterate_ubuf(it, len, rec, priv2, u);
        case iov::ITER_IOVEC: return iov::iterate_iovec(it, len, rec, priv2, u);
        case iov::ITER_KVEC: return iov::iterate_kvec(it, len, rec, priv2, k);
        case iov::ITER_BVEC: return iov::iterate_bvec(it, len, rec, priv2, k);
        case iov::ITER_BVECQ: return iov::iterate_bvecq(it, len, rec, priv2, k);
        case iov::ITER_FOLIOQ: return iov::iterate_folioq(it, len, rec, priv2, k);
        case iov::ITER_XARRAY: return iov::iterate_xarray(it, len, rec, priv2, k);
        default: return iov::iterate_discard(it, len, rec, priv2, k);
      }
  }
}

struct Result {
  size_t ret;
  std::vector<Piece> pieces;
  iov_test::IterState after;
  iov::iov_iter it;
};

Result run(Form form, iov::iov_iter start, size_t len, size_t short_at = SIZE_MAX, size_t short_remain = 0) {
  static int priv2_target;
  Recorder rec;
  rec.short_at = short_at;
  rec.short_remain = short_remain;
  size_t ret = walk(form, &start, len, &rec, &priv2_target);
  for (Piece& p : rec.pieces) {
    EXPECT_EQ(p.priv, &rec) << "priv passed through";
    EXPECT_EQ(p.priv2, &priv2_target) << "priv2 passed through";
    p.priv = nullptr;  // a stack address, different in each run: compared here, not across forms
  }
  return {ret, rec.pieces, iov_test::state_of(start), start};
}

// The walk of len bytes from `start` (which stands at flat offset pos of l),
// with the non-empty piece short_at cut short to leave short_remain, checked
// against the model in every form; all forms must agree exactly.
void check_walk(const Layout& l, const iov::iov_iter& start, size_t pos, size_t len, size_t short_at = SIZE_MAX,
                size_t short_remain = 0) {
  SCOPED_TRACE(testing::Message() << iov_test::kind_name(l.kind()) << " pos " << pos << " len " << len
                                  << " short_at " << short_at << " remain " << short_remain);
  Result want = run(Form::inline2, start, len, short_at, short_remain);
  for (Form f : {Form::generic, Form::typed}) {
    SCOPED_TRACE(form_name(f));
    Result got = run(f, start, len, short_at, short_remain);
    EXPECT_EQ(got.ret, want.ret);
    EXPECT_EQ(got.pieces, want.pieces);
    EXPECT_EQ(got.after, want.after);
  }

  size_t n = std::min(len, start.count);
  std::vector<Chunk> model = l.pieces(pos, n);
  size_t expect_ret = 0, progress = 0, nonempty = 0;
  for (size_t k = 0; k < model.size() && k <= short_at; k++)
    expect_ret += k == short_at ? model[k].len - std::min(short_remain, model[k].len) : model[k].len;
  if (l.kind() == Kind::discard) expect_ret = n;
  EXPECT_EQ(want.ret, expect_ret);
  EXPECT_EQ(want.after.count, start.count - expect_ret);

  for (const Piece& p : want.pieces) {
    EXPECT_EQ(p.user, iov_test::user_backed(l.kind())) << "ustep for UBUF/IOVEC, step for the rest";
    EXPECT_EQ(p.progress, progress) << "progress counts the bytes processed so far";
    if (p.len == 0) {
      EXPECT_EQ(l.kind(), Kind::bvec) << "only a zero-length bvec may reach a step with len 0";
      continue;
    }
    ASSERT_LT(nonempty, model.size()) << "more pieces than the model";
    EXPECT_EQ(p.base, model[nonempty].base) << "piece " << nonempty;
    EXPECT_EQ(p.len, model[nonempty].len) << "piece " << nonempty;
    progress += nonempty == short_at ? p.len - std::min(short_remain, p.len) : p.len;
    nonempty++;
  }
  size_t want_calls = short_at < model.size() ? short_at + 1 : model.size();
  EXPECT_EQ(nonempty, l.kind() == Kind::discard ? 0 : want_calls);

  // The iterator stands right after the bytes processed...
  size_t end = pos + expect_ret;
  if (want.after.count && end < l.reachable() && l.kind() != Kind::discard) {
    EXPECT_EQ(iov_test::first_piece(want.it), l.addr(end));
  }
  // ... in the segment of the short piece, exactly as the kernel leaves it.
  if (short_at < model.size()) {
    const Chunk& cut = model[short_at];
    switch (l.kind()) {
      case Kind::ubuf:
        EXPECT_EQ(want.it.iov_offset, end);
        EXPECT_EQ(want.it.nr_segs, 1u);
        break;
      case Kind::xarray:
        EXPECT_EQ(want.it.iov_offset, end);
        break;
      case Kind::iovec:
      case Kind::kvec:
      case Kind::bvec:
        EXPECT_EQ(want.it.iov_offset, end - l.seg_start(cut.seg));
        EXPECT_EQ(want.it.nr_segs, l.nr_segs() - cut.seg);
        break;
      case Kind::bvecq:
        EXPECT_EQ(want.it.iov_offset, end - l.seg_start(cut.seg));
        EXPECT_EQ(want.it.bvecq, l.slot_home(cut.seg).first);
        EXPECT_EQ(want.it.bvecq_slot, l.slot_home(cut.seg).second);
        break;
      case Kind::folioq:  // iov_offset counts from the folio's start
        EXPECT_EQ(want.it.iov_offset, end - l.seg_start(cut.seg) + (cut.seg ? 0 : l.folioq_offset()));
        EXPECT_EQ(want.it.folioq, l.slot_home(cut.seg).first);
        EXPECT_EQ(want.it.folioq_slot, l.slot_home(cut.seg).second);
        break;
      default:
        break;
    }
    const void* seg = want.after.segs;  // the current segment, whatever its type
    if (l.kind() == Kind::iovec) {
      EXPECT_EQ(seg, &l.iovecs()[cut.seg]);
    } else if (l.kind() == Kind::kvec) {
      EXPECT_EQ(seg, &l.kvecs()[cut.seg]);
    } else if (l.kind() == Kind::bvec) {
      EXPECT_EQ(seg, &l.bvecs()[cut.seg]);
    }
  }
  // ... and the next copy reads on from there.
  if (want.it.data_source && l.kind() != Kind::discard) {
    iov::iov_iter next = want.it;
    size_t left = std::min(next.count, l.reachable() - std::min(end, l.reachable()));
    std::vector<unsigned char> got(left + 1, 0), flat = l.gather();
    EXPECT_EQ(iov::copy_from_iter(got.data(), left + 1, &next), left);
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + left, flat.begin() + end));
  }
}

std::vector<std::unique_ptr<Layout>> random_layouts(uint64_t seed, int per_kind) {
  std::mt19937_64 rng(seed);
  std::vector<std::unique_ptr<Layout>> v;
  for (Kind k : iov_test::kAllKinds)
    for (int n = 0; n < per_kind; n++) v.push_back(Layout::random(k, rng));
  for (size_t n = 0; n < v.size(); n++) v[n]->fill(seed + n);
  return v;
}

// An iterator of l standing at flat offset pos, reached by advance or by a walk.
iov::iov_iter iter_at(const Layout& l, size_t pos, bool by_walk) {
  iov::iov_iter it = l.iter(iov_test::source_or_dest(l.kind()));
  if (by_walk) {
    Recorder rec;
    walk(Form::inline2, &it, pos, &rec, nullptr);
  } else {
    iov::iov_iter_advance(&it, pos);
  }
  return it;
}

std::vector<size_t> positions(const Layout& l) {
  size_t t = l.total();
  std::vector<size_t> v = {0, 1, t / 3, t / 2 + 1, t ? t - 1 : 0, t};
  for (const Chunk& r : l.runs()) v.push_back(r.flat);  // segment starts: after zero-length segments
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  while (!v.empty() && v.back() > t) v.pop_back();
  return v;
}

TEST(Iterate, PiecesFollowTheModel) {
  for (const auto& l : iov_test::edge_layouts()) {
    size_t t = l->total();
    for (size_t pos : positions(*l))
      for (size_t len : {size_t{0}, size_t{1}, size_t{100}, PAGE_SIZE, t - pos, t - pos + 1, SIZE_MAX})
        for (bool by_walk : {false, true}) check_walk(*l, iter_at(*l, pos, by_walk), pos, len);
  }
}

TEST(Iterate, ShortStepAtEveryPiece) {
  for (const auto& l : iov_test::edge_layouts()) {
    if (l->kind() == Kind::discard) continue;
    for (size_t pos : {size_t{0}, l->total() / 3}) {
      std::vector<Chunk> model = l->pieces(pos, l->reachable() - std::min(pos, l->reachable()));
      for (size_t k = 0; k < model.size(); k++)
        for (size_t remain : {model[k].len, size_t{1}, model[k].len / 2})
          if (remain) check_walk(*l, iter_at(*l, pos, k % 2), pos, SIZE_MAX, k, remain);
    }
  }
}

TEST(Iterate, RandomLayouts) {
  for (uint64_t seed : iov_test::test_seeds({11, 12, 13})) {
    SCOPED_TRACE(testing::Message() << "IOV_TEST_SEED=" << seed);
    std::mt19937_64 rng(seed * 7919);
    for (const auto& l : random_layouts(seed, 6)) {
      auto uni = [&](size_t hi) { return std::uniform_int_distribution<size_t>(0, hi)(rng); };
      for (int round = 0; round < 6; round++) {
        size_t pos = uni(l->total()), len = uni(l->total() - pos + 10);
        size_t npieces = l->pieces(pos, std::min(len, l->total() - pos)).size();
        size_t short_at = npieces && uni(1) ? uni(npieces - 1) : SIZE_MAX;
        check_walk(*l, iter_at(*l, pos, round % 2), pos, len, short_at, uni(PAGE_SIZE) + 1);
      }
    }
  }
}

TEST(Iterate, LenIsClampedToTheCount) {
  for (const auto& l : iov_test::edge_layouts()) {
    size_t t = l->total();
    for (size_t count : {size_t{0}, t / 2, t ? t - 1 : 0}) {
      iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()), count);
      check_walk(*l, it, 0, SIZE_MAX);
      check_walk(*l, it, 0, count + 1);
      Result r = run(Form::inline2, it, SIZE_MAX);
      EXPECT_EQ(r.after.count, 0u);
    }
  }
}

TEST(Iterate, ZeroLengthWalkCallsNothingAndChangesNothing) {
  for (const auto& l : iov_test::edge_layouts())
    for (Form f : kForms) {
      iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
      Result r = run(f, it, 0);
      EXPECT_EQ(r.ret, 0u);
      EXPECT_TRUE(r.pieces.empty());
      EXPECT_EQ(r.after, iov_test::state_of(it));
      // An exhausted iterator likewise.
      iov::iov_iter_advance(&it, SIZE_MAX);
      Result e = run(f, it, 100);
      EXPECT_EQ(e.ret, 0u);
      EXPECT_TRUE(e.pieces.empty());
      EXPECT_EQ(e.after, iov_test::state_of(it));
    }
}

TEST(Iterate, ZeroLengthVecSegmentsNeverReachTheStep) {
  for (Kind k : {Kind::iovec, Kind::kvec}) {
    std::vector<iov_test::SegSpec> segs = {{0, 0}, {0, 1}, {7, 2}, {0, 0}, {0, 0}, {9, 3}, {0, 0}};
    auto l = k == Kind::iovec ? Layout::make_iovec(segs) : Layout::make_kvec(segs);
    for (Form f : kForms) {
      Result r = run(f, l->iter(iov::ITER_SOURCE), SIZE_MAX);
      ASSERT_EQ(r.pieces.size(), 2u);
      EXPECT_EQ(r.pieces[0].base, l->addr(0));
      EXPECT_EQ(r.pieces[0].len, 7u);
      EXPECT_EQ(r.pieces[1].base, l->addr(7));
      EXPECT_EQ(r.pieces[1].progress, 7u);
      EXPECT_EQ(r.pieces[1].len, 9u);
      EXPECT_EQ(r.ret, 16u);
    }
    EXPECT_TRUE(l->guards_intact());
  }
}

TEST(Iterate, ZeroLengthBvecMayReachTheStepWithLenZero) {
  // {len, offset}: empty, 50 bytes, empty, 30 bytes, empty.
  auto l = Layout::make_bvec({{0, 100}, {50, 0}, {0, 0}, {30, 10}, {0, 7}});
  for (Form f : kForms) {
    Result r = run(f, l->iter(iov::ITER_SOURCE), SIZE_MAX);
    EXPECT_EQ(r.ret, 80u);
    size_t nonempty = 0;
    for (const Piece& p : r.pieces) {
      if (p.len == 0) {
        EXPECT_EQ(p.progress, nonempty ? 50u : 0u) << "at an empty bvec before or between the filled ones";
        continue;
      }
      EXPECT_EQ(p.base, l->addr(nonempty ? 50 : 0));
      nonempty++;
    }
    EXPECT_EQ(nonempty, 2u);
  }
}

TEST(Iterate, BvecPiecesNeverCrossAPage) {
  // bv_offset 5000 in a run of 4 frames: frame 1 at 904, then frames 2 and 3.
  auto l = Layout::make_bvec({{10000, 5000}});
  auto* frames = reinterpret_cast<unsigned char*>(l->bvecs()[0].bv_page);
  for (Form f : kForms) {
    Result r = run(f, l->iter(iov::ITER_SOURCE), SIZE_MAX);
    ASSERT_EQ(r.pieces.size(), 3u);
    EXPECT_EQ(r.pieces[0].base, frames + PAGE_SIZE + 904);
    EXPECT_EQ(r.pieces[0].len, PAGE_SIZE - 904);
    EXPECT_EQ(r.pieces[1].base, frames + 2 * PAGE_SIZE);
    EXPECT_EQ(r.pieces[1].len, PAGE_SIZE);
    EXPECT_EQ(r.pieces[2].base, frames + 3 * PAGE_SIZE);
    EXPECT_EQ(r.pieces[2].len, 10000 - (PAGE_SIZE - 904) - PAGE_SIZE);
    EXPECT_EQ(r.pieces[2].progress, 10000 - r.pieces[2].len);
  }
}

TEST(Iterate, XarrayPiecesArePages) {
  auto l = Layout::make_xarray(2 * PAGE_SIZE + 100, 2 * PAGE_SIZE);
  for (Form f : kForms) {
    Result r = run(f, l->iter(iov::ITER_SOURCE), SIZE_MAX);
    ASSERT_EQ(r.pieces.size(), 3u);
    EXPECT_EQ(r.pieces[0].base, reinterpret_cast<unsigned char*>(l->xa_page(0)) + 100);
    EXPECT_EQ(r.pieces[0].len, PAGE_SIZE - 100);
    EXPECT_EQ(r.pieces[1].base, static_cast<void*>(l->xa_page(1)));
    EXPECT_EQ(r.pieces[1].len, PAGE_SIZE);
    EXPECT_EQ(r.pieces[2].base, static_cast<void*>(l->xa_page(2)));
    EXPECT_EQ(r.pieces[2].len, 100u);
  }
}

TEST(Iterate, XarrayWalkEndsAtAMissingIndex) {
  auto l = Layout::make_xarray(100, 3 * PAGE_SIZE, {1});
  ASSERT_EQ(l->reachable(), PAGE_SIZE - 100);
  for (Form f : kForms) {
    iov::iov_iter it = l->iter(iov::ITER_SOURCE);
    Result r = run(f, it, SIZE_MAX);
    EXPECT_EQ(r.ret, PAGE_SIZE - 100);
    EXPECT_EQ(r.pieces.size(), 1u);
    EXPECT_EQ(r.after.count, 3 * PAGE_SIZE - (PAGE_SIZE - 100));
    EXPECT_EQ(r.it.iov_offset, PAGE_SIZE - 100);
    Result again = run(f, r.it, SIZE_MAX);  // still at the hole
    EXPECT_EQ(again.ret, 0u);
    EXPECT_TRUE(again.pieces.empty());
    EXPECT_EQ(again.after, r.after);
  }
  check_walk(*l, l->iter(iov::ITER_SOURCE), 0, SIZE_MAX);
}

TEST(Iterate, UstepForUserBackedStepForTheRest) {
  for (const auto& l : iov_test::edge_layouts()) {
    if (!l->total()) continue;
    size_t ucalls = 0, kcalls = 0;
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
    auto ustep = [](void*, size_t, size_t, void* u, void*) -> size_t {
      ++*static_cast<size_t*>(u);
      return 0;
    };
    auto step = [](void*, size_t, size_t, void*, void* k) -> size_t {
      ++*static_cast<size_t*>(k);
      return 0;
    };
    size_t ret = iov::iterate_and_advance2(&it, SIZE_MAX, &ucalls, &kcalls, ustep, step);
    EXPECT_EQ(ret, l->total());
    if (iov_test::user_backed(l->kind())) {
      EXPECT_GT(ucalls, 0u);
      EXPECT_EQ(kcalls, 0u);
    } else if (l->kind() == Kind::discard) {
      EXPECT_EQ(ucalls + kcalls, 0u) << "DISCARD calls neither step";
    } else {
      EXPECT_EQ(ucalls, 0u);
      EXPECT_GT(kcalls, 0u);
    }
  }
}

TEST(Iterate, DiscardJustAdvances) {
  auto l = Layout::make_discard(10000);
  for (Form f : kForms) {
    iov::iov_iter it = l->iter(iov::ITER_DEST);
    Result r = run(f, it, 3000);
    EXPECT_EQ(r.ret, 3000u);
    EXPECT_TRUE(r.pieces.empty());
    EXPECT_EQ(r.after.count, 7000u);
    Result rest = run(f, r.it, SIZE_MAX);
    EXPECT_EQ(rest.ret, 7000u);
    EXPECT_EQ(rest.after.count, 0u);
  }
}

TEST(Iterate, KernelWalkSkipsUserBackedIterators) {
  for (const auto& l : iov_test::edge_layouts()) {
    iov::iov_iter it = l->iter(iov_test::source_or_dest(l->kind()));
    Recorder rec, ref_rec;
    auto k = [](void* b, size_t p, size_t n, void* pr, void* p2) { return record_kstep(b, p, n, pr, p2); };
    iov::iov_iter ref = it;
    size_t ret = iov::iterate_and_advance_kernel(&it, SIZE_MAX, &rec, nullptr, k);
    if (iov_test::user_backed(l->kind())) {
      EXPECT_EQ(ret, 0u);
      EXPECT_TRUE(rec.pieces.empty());
      EXPECT_EQ(iov_test::state_of(it), iov_test::state_of(ref)) << "a user-backed iterator is left alone";
    } else {
      size_t want = iov::iterate_and_advance2(&ref, SIZE_MAX, &ref_rec, nullptr, k, k);
      EXPECT_EQ(ret, want);
      for (Piece& p : rec.pieces) p.priv = nullptr;  // each recorder is its own priv
      for (Piece& p : ref_rec.pieces) p.priv = nullptr;
      EXPECT_EQ(rec.pieces, ref_rec.pieces);
      EXPECT_EQ(iov_test::state_of(it), iov_test::state_of(ref));
    }
  }
}

TEST(Iterate, IterateAndAdvancePassesNullPriv2) {
  auto l = Layout::make_kvec({{100, 0}, {200, 1}});
  iov::iov_iter it = l->iter(iov::ITER_SOURCE);
  Recorder rec;
  auto step = [](void* b, size_t p, size_t n, void* pr, void* p2) { return record_kstep(b, p, n, pr, p2); };
  EXPECT_EQ(iov::iterate_and_advance(&it, SIZE_MAX, &rec, step, step), 300u);
  ASSERT_EQ(rec.pieces.size(), 2u);
  for (const Piece& p : rec.pieces) {
    EXPECT_EQ(p.priv, &rec);
    EXPECT_EQ(p.priv2, nullptr);
  }
}

// A walk in several calls covers the same bytes as one walk, and every call's
// progress starts again at 0.
TEST(Iterate, SuccessiveWalksResumeWhereTheLastStopped) {
  for (const auto& l : random_layouts(5, 4)) {
    if (l->kind() == Kind::discard) continue;
    for (Form f : kForms) {
      iov::iov_iter it = l->iter(iov::ITER_SOURCE);
      std::vector<unsigned char> seen;
      for (size_t chunk = 1; it.count; chunk = chunk * 3 + 1) {
        Recorder rec;
        size_t ret = walk(f, &it, chunk, &rec, nullptr);
        ASSERT_GT(ret, 0u);
        if (!rec.pieces.empty()) {
          EXPECT_EQ(rec.pieces[0].progress, 0u);
        }
        for (const Piece& p : rec.pieces)
          seen.insert(seen.end(), static_cast<unsigned char*>(p.base), static_cast<unsigned char*>(p.base) + p.len);
      }
      EXPECT_EQ(seen, l->gather());
    }
  }
}

}  // namespace

// generic_iterate() calls a caller's own steps through their pointers, once
// per piece, and advances as the inline walk does.
namespace {
struct count {
  size_t bytes = 0, calls = 0;
};
size_t count_step(void*, size_t, size_t len, void* priv, void*) {
  auto* c = static_cast<count*>(priv);
  c->bytes += len;
  c->calls++;
  return 0;
}

using iov_test::counted_walk;
}  // namespace

TEST(GenericIterate, WalksAStepsPairThroughItsPointers) {
  std::vector<char> buf(10000);
  iov::kvec kv[] = {{buf.data(), 6000}, {buf.data() + 6000, 4000}};
  iov::iov_iter it;
  iov::iov_iter_kvec(&it, iov::ITER_SOURCE, kv, 2, 10000);
  count c;
  EXPECT_EQ(iov::generic_iterate(&it, 9000, &c, nullptr, count_step, count_step), 9000u);
  EXPECT_EQ(c.bytes, 9000u);
  EXPECT_EQ(c.calls, 2u);
  EXPECT_EQ(it.count, 1000u);
  EXPECT_EQ(it.iov_offset, 3000u);
}

// Every walk runs an operation's one body to the same result: the bytes of
// the flat model and the same advance, on every iterator kind with memory.
template <iov::internal::Walk W>
void check_copy_over(const Layout& l, size_t n) {
  iov::iov_iter it = l.iter(iov::ITER_SOURCE);
  std::vector<unsigned char> dst(n + 1, 0xEE);
  size_t want = std::min(n, l.reachable());
  ASSERT_EQ(iov::internal::copy_from_iter<W>(dst.data(), n, &it), want);
  std::vector<unsigned char> flat = l.gather();
  EXPECT_TRUE(std::equal(dst.begin(), dst.begin() + want, flat.begin()));
  EXPECT_EQ(dst[want], 0xEE);
  EXPECT_EQ(it.count, l.total() - want);
}

TEST(Walks, EveryWalkCopiesAsTheFlatModel) {
  std::mt19937_64 rng(32);
  for (Kind k : iov_test::kAllKinds) {
    if (k == Kind::discard)
      continue;
    for (int round = 0; round < 8; round++) {
      auto l = Layout::random(k, rng);
      l->fill(round);
      for (size_t n : {size_t{0}, size_t{1}, l->total() / 2, l->total(), l->total() + 5}) {
        SCOPED_TRACE(testing::Message() << iov_test::kind_name(k) << " round=" << round << " n=" << n);
        check_copy_over<iov::internal::inline_walk>(*l, n);
        check_copy_over<iov::internal::ubuf_first_walk>(*l, n);
        check_copy_over<iov::internal::outofline_walk>(*l, n);
        check_copy_over<iov::internal::pointer_walk>(*l, n);
        size_t before = counted_walk::calls;
        check_copy_over<counted_walk>(*l, n);
        EXPECT_EQ(counted_walk::calls, before + 1);
      }
    }
  }
}
