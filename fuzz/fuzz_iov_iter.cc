// fuzz_iov_iter: an iov_iter of a random layout (UBUF; IOVEC and KVEC with
// empty and overlapping segments; BVEC with multi-frame and shared pages;
// BVECQ, those bio_vecs in a queue with empty segments; FOLIOQ, folios of
// orders 0-2 across segments; XARRAY with holes at any index; DISCARD) driven through a random sequence of
// copies, zeroing, CRCs (plain, fused and streaming), zero scans, advance, revert,
// truncate, reexpand, save/restore, extract_pages, extract_iter_to_sg and raw walks with short
// steps, each checked against the flat model of fuzz_model.hpp after every
// operation: return value, count, position and every byte of every buffer.
// The data operations run on a copy of the iterator through their *_outofline
// twin (generic_iterate) as well, and both must agree. extract_pages must make
// progress but at an XARRAY hole or an empty bio_vec (where the kernel's stops too).
// The uio.h names ports use besides run in the same sequences: get_pages2 and
// _alloc2 (pages, and a reference on each for kernel-backed types, all put
// back), npages_cap, gap_alignment, copy_page_to_iter_nofault, copy_mc_to_iter,
// copy_from_iter_flushcache, copy_from_iter_full_nocache and dup_iter
// (fuzz_uio_names.hpp).
//
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_iov_iter
//   build/fuzz/fuzz/fuzz_iov_iter -max_total_time=60 fuzz/corpus/fuzz_iov_iter
//   IOV_FUZZ_TRACE=1 build/fuzz/fuzz/fuzz_iov_iter crash-...    # replay one input
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_model.hpp"
#include "fuzz_uio_names.hpp"
#include "iov/extract.hpp"
#include "iov/internal/crc32c_simd.hpp"
#include "iov/internal/outofline.hpp"
#include "iov/scatterlist.hpp"

namespace {

using fuzz::input;
using fuzz::layout;
using iov::iov_iter;

// Each operation twice, inline and out of line, on copies of the iterator
// (fuzz_uio_names.hpp). Writers write the same bytes, so the model (already
// updated) holds for both.
using fuzz::uio::twins;

std::vector<unsigned char> source(input& in, size_t max) {
  std::vector<unsigned char> v(in.length(max));
  fuzz::fill(v.data(), v.size(), in.u8());
  return v;
}

void op_copy_to(layout& L, input& in, bool ool) {
  auto src = source(in, 2 * fuzz::kMaxSeg);
  bool crc = in.u8() & 1;
  uint32_t crc0 = in.u32();
  size_t want = L.dir == iov::ITER_DEST ? L.reach(src.size()) : 0;
  fuzz::trace("%s %zu -> %zu", crc ? "crc32c_and_copy_to_iter" : "copy_to_iter", src.size(), want);
  L.put_all(src.data(), want);
  if (!crc) {
    twins(L, want, ool, [&](iov_iter* i) { return iov::copy_to_iter(src.data(), src.size(), i); },
              [&](iov_iter* i) { return iov::internal::outofline::copy_to_iter(src.data(), src.size(), i); }, "copy_to_iter");
  } else {
    uint32_t expect = fuzz::crc32c_bitwise(crc0, src.data(), want), c1 = crc0, c2 = crc0;
    twins(L, want, ool, [&](iov_iter* i) { return iov::crc32c_and_copy_to_iter(src.data(), src.size(), &c1, i); },
              [&](iov_iter* i) { return iov::internal::outofline::crc32c_and_copy_to_iter(src.data(), src.size(), &c2, i); },
              "crc32c_and_copy_to_iter");
    FUZZ_CHECK(c1 == expect && c2 == expect);
  }
  L.advance(want);
}

void op_copy_from(layout& L, input& in, bool ool) {
  size_t n = in.length(2 * fuzz::kMaxSeg);
  bool crc = in.u8() & 1;
  uint32_t crc0 = in.u32();
  size_t want = L.dir == iov::ITER_SOURCE ? L.reach(n) : 0;
  fuzz::trace("%s %zu -> %zu", crc ? "crc32c_and_copy_from_iter" : "copy_from_iter", n, want);
  std::vector<unsigned char> expect(n, 0xa5), d1(n, 0xa5), d2(n, 0xa5);
  L.get_all(expect.data(), want);
  if (!crc) {
    twins(L, want, ool, [&](iov_iter* i) { return iov::copy_from_iter(d1.data(), n, i); },
              [&](iov_iter* i) { return iov::internal::outofline::copy_from_iter(d2.data(), n, i); }, "copy_from_iter");
  } else {
    uint32_t c1 = crc0, c2 = crc0;
    twins(L, want, ool, [&](iov_iter* i) { return iov::crc32c_and_copy_from_iter(d1.data(), n, &c1, i); },
              [&](iov_iter* i) { return iov::internal::outofline::crc32c_and_copy_from_iter(d2.data(), n, &c2, i); },
              "crc32c_and_copy_from_iter");
    uint32_t c = fuzz::crc32c_bitwise(crc0, expect.data(), want);
    FUZZ_CHECK(c1 == c && c2 == c);
  }
  FUZZ_CHECK(d1 == expect && d2 == expect);
  L.advance(want);
}

// copy_to_iter_full / copy_from_iter_full: all or nothing (a short copy is
// reverted, though what it wrote stays written).
void op_copy_full(layout& L, input& in) {
  bool to = in.u8() & 1;
  auto buf = source(in, 2 * fuzz::kMaxSeg);
  size_t n = buf.size();
  bool right_dir = to ? L.dir == iov::ITER_DEST : L.dir == iov::ITER_SOURCE;
  size_t done = right_dir ? L.reach(n) : 0;
  fuzz::trace("copy_%s_iter_full %zu -> %zu", to ? "to" : "from", n, done);
  std::vector<unsigned char> expect = buf;
  to ? L.put_all(buf.data(), done) : L.get_all(expect.data(), done);
  bool ok = to ? iov::copy_to_iter_full(buf.data(), n, &L.it) : iov::copy_from_iter_full(buf.data(), n, &L.it);
  FUZZ_CHECK(ok == (done == n));
  if (!to && ok) FUZZ_CHECK(buf == expect);
  if (ok) L.advance(n);
}

void op_zero(layout& L, input& in, bool ool) {
  size_t n = in.length(2 * fuzz::kMaxSeg), want = L.reach(n);
  fuzz::trace("iov_iter_zero %zu -> %zu", n, want);
  L.put_all(nullptr, want);
  twins(L, want, ool, [&](iov_iter* i) { return iov::iov_iter_zero(n, i); },
            [&](iov_iter* i) { return iov::internal::outofline::iov_iter_zero(n, i); }, "iov_iter_zero");
  L.advance(want);
}

void op_crc(layout& L, input& in, bool ool) {
  size_t n = in.length(2 * fuzz::kMaxSeg), want = L.discard() ? 0 : L.reach(n);
  uint32_t crc0 = in.u32(), expect = L.crc_of(crc0, want), c1 = crc0, c2 = crc0;
  fuzz::trace("crc32c_iter %zu -> %zu", n, want);
  twins(L, want, ool, [&](iov_iter* i) { return iov::crc32c_iter(i, n, &c1); },
            [&](iov_iter* i) { return iov::internal::outofline::crc32c_iter(i, n, &c2); }, "crc32c_iter");
  FUZZ_CHECK(c1 == expect && c2 == expect);
  L.advance(want);
}

void op_zero_scan(layout& L, input& in, bool ool) {
  size_t n = in.length(2 * fuzz::kMaxSeg);
  if (in.u8() & 1) {  // iov_iter_is_zero: no movement
    bool expect = n == 0 || (n <= L.count && !L.discard() && L.zero_at(0, n));
    fuzz::trace("iov_iter_is_zero %zu -> %d", n, expect);
    iov_iter before = L.it;
    FUZZ_CHECK(iov::iov_iter_is_zero(&L.it, n) == expect);
    FUZZ_CHECK(iov::internal::outofline::iov_iter_is_zero(&L.it, n) == expect);
    FUZZ_CHECK(fuzz::same_iter(before, L.it));
    return;
  }
  size_t want = L.discard() ? 0 : L.zero_run(n);
  fuzz::trace("iov_iter_skip_zeroes %zu -> %zu", n, want);
  twins(L, want, ool, [&](iov_iter* i) { return iov::iov_iter_skip_zeroes(i, n); },
            [&](iov_iter* i) { return iov::internal::outofline::iov_iter_skip_zeroes(i, n); },
            "iov_iter_skip_zeroes");
  L.advance(want);
}

// A raw walk with a step that checks every piece against the model and
// processes at most `budget` bytes in all (a short step ends the walk).
struct walk_probe {
  const layout* L;
  size_t budget, seen;
  bool any_step;  // iterate_and_advance_kernel: one step for every type
};

size_t probe_piece(walk_probe* w, bool user, void* base, size_t progress, size_t len) {
  const layout& L = *w->L;
  FUZZ_CHECK(w->any_step || user == L.user_backed());
  FUZZ_CHECK(progress == w->seen && progress + len <= L.count);
  FUZZ_CHECK(len || L.type == iov::ITER_BVEC);  // only a BVEC hands out empty pieces
  if (L.type == iov::ITER_BVEC || L.type == iov::ITER_BVECQ || L.type == iov::ITER_FOLIOQ ||
      L.type == iov::ITER_XARRAY)
    FUZZ_CHECK(iov::offset_in_page(base) + len <= iov::PAGE_SIZE);
  FUZZ_CHECK(L.lives_at(progress, base, len));
  size_t take = len < w->budget ? len : w->budget;
  w->budget -= take;
  w->seen += take;
  return len - take;
}
size_t probe_ustep(void* base, size_t progress, size_t len, void* w, void*) {
  return probe_piece(static_cast<walk_probe*>(w), true, base, progress, len);
}
size_t probe_kstep(void* base, size_t progress, size_t len, void* w, void*) {
  return probe_piece(static_cast<walk_probe*>(w), false, base, progress, len);
}

void op_walk(layout& L, input& in) {
  unsigned how = in.u8() % 4;
  size_t n = in.length(2 * fuzz::kMaxSeg), budget = in.length(2 * fuzz::kMaxSeg);
  walk_probe w{&L, budget, 0, how == 3};
  size_t want = how == 3 && L.user_backed() ? 0 : L.reach(n);
  if (!L.discard() && want > budget) want = budget;
  fuzz::trace("walk(%u) %zu budget %zu -> %zu", how, n, budget, want);
  iov_iter* i = &L.it;
  size_t r;
  if (how == 0) {
    r = iov::iterate_and_advance2(i, n, &w, nullptr, probe_ustep, probe_kstep);
  } else if (how == 1) {
    r = iov::generic_iterate(i, n, &w, nullptr, probe_ustep, probe_kstep);
  } else if (how == 3) {
    r = iov::iterate_and_advance_kernel(i, n, &w, nullptr, probe_kstep);
  } else {
    switch (L.type) {
      case iov::ITER_UBUF: r = iov::iterate_ubuf(i, n, &w, nullptr, probe_ustep); break;
      case iov::ITER_IOVEC: r = iov::iterate_iovec(i, n, &w, nullptr, probe_ustep); break;
      case iov::ITER_KVEC: r = iov::iterate_kvec(i, n, &w, nullptr, probe_kstep); break;
      case iov::ITER_BVEC: r = iov::iterate_bvec(i, n, &w, nullptr, probe_kstep); break;
      case iov::ITER_BVECQ: r = iov::iterate_bvecq(i, n, &w, nullptr, probe_kstep); break;
      case iov::ITER_FOLIOQ: r = iov::iterate_folioq(i, n, &w, nullptr, probe_kstep); break;
      case iov::ITER_XARRAY: r = iov::iterate_xarray(i, n, &w, nullptr, probe_kstep); break;
      default: r = iov::iterate_discard(i, n, &w, nullptr, probe_kstep); break;
    }
  }
  FUZZ_CHECK(r == want && (L.discard() || w.seen == want));
  L.advance(want);
}

void op_extract(layout& L, input& in) {
  size_t maxsize = in.length(2 * fuzz::kMaxSeg);
  unsigned maxpages = static_cast<unsigned>(in.below(9));
  bool own_array = in.u8() & 1;
  iov::page* array[8];
  iov::page** pages = own_array ? array : nullptr;
  size_t off0 = SIZE_MAX;
  ssize_t r = iov::iov_iter_extract_pages(&L.it, &pages, maxsize, maxpages, 0, &off0);
  size_t limit = maxsize < L.count ? maxsize : L.count;
  fuzz::trace("iov_iter_extract_pages %zu max %u pages -> %zd (offset0 %zu)", maxsize, maxpages, r, off0);
  if (!limit || !maxpages) {
    FUZZ_CHECK(r == 0);
  } else if (L.discard()) {
    FUZZ_CHECK(r == -EFAULT);
  } else {
    FUZZ_CHECK(r >= 0 && static_cast<size_t>(r) <= limit);
    // Progress, unless at an XARRAY hole or, as in the kernel, an empty bio_vec.
    FUZZ_CHECK(r > 0 || !L.addr[L.pos] ||
               std::find(L.empty_bvecs.begin(), L.empty_bvecs.end(), L.pos) != L.empty_bvecs.end());
    if (r > 0) {
      FUZZ_CHECK(off0 < iov::PAGE_SIZE && (off0 + r + iov::PAGE_SIZE - 1) / iov::PAGE_SIZE <= maxpages);
      for (size_t k = 0, n; k < static_cast<size_t>(r); k += n) {  // page by page
        size_t at = off0 + k;
        n = std::min(static_cast<size_t>(r) - k, iov::PAGE_SIZE - at % iov::PAGE_SIZE);
        FUZZ_CHECK(L.lives_at(k, static_cast<unsigned char*>(iov::page_address(pages[at / iov::PAGE_SIZE])) +
                                     at % iov::PAGE_SIZE, n));
      }
      L.advance(static_cast<size_t>(r));
    }
  }
  if (!own_array) std::free(pages);
}

// extract_iter_to_sg(): the entries, in order, are where the model puts the
// bytes; a page an entry for the types the kernel lists so; nothing past
// sg_max; the whole request unless the table filled or an XARRAY hole came
// first; and the iterator advanced by the return.
void op_extract_to_sg(layout& L, input& in) {
  size_t maxsize = in.length(2 * fuzz::kMaxSeg);
  unsigned sg_max = static_cast<unsigned>(in.below(9));
  unsigned start = static_cast<unsigned>(in.below(2));  // entries already in the table
  if (start && sg_max == 8) sg_max = 7;
  iov::scatterlist sgl[9];
  iov::sg_init_table(sgl, 9);
  sgl[start + sg_max].length = 0xdead;  // the first entry past the room given
  iov::sg_table t = {sgl, start, start};
  ssize_t r = iov::extract_iter_to_sg(&L.it, maxsize, &t, sg_max, 0);
  size_t limit = maxsize < L.count ? maxsize : L.count;
  fuzz::trace("extract_iter_to_sg %zu max %u entries after %u -> %zd (%u entries)", maxsize, sg_max, start, r,
              t.nents - start);
  FUZZ_CHECK(sgl[start + sg_max].length == 0xdead);
  if (L.discard() && maxsize) {
    FUZZ_CHECK(r == -EIO && t.nents == start);
    return;
  }
  if (!limit || !sg_max) {
    FUZZ_CHECK(r == 0 && t.nents == start);
    return;
  }
  FUZZ_CHECK(r >= 0 && static_cast<size_t>(r) <= limit);
  FUZZ_CHECK(t.nents - start <= sg_max && t.orig_nents == start);
  bool page_entries = L.type == iov::ITER_UBUF || L.type == iov::ITER_IOVEC || L.type == iov::ITER_KVEC ||
                      L.type == iov::ITER_XARRAY;
  size_t sum = 0;
  for (unsigned k = start; k < t.nents; k++) {
    const iov::scatterlist& e = sgl[k];
    FUZZ_CHECK(e.length > 0 && sum + e.length <= static_cast<size_t>(r));
    FUZZ_CHECK(!page_entries || e.offset + e.length <= iov::PAGE_SIZE);
    FUZZ_CHECK(L.lives_at(sum, static_cast<unsigned char*>(iov::sg_virt(&e)), e.length));
    sum += e.length;
  }
  FUZZ_CHECK(sum == static_cast<size_t>(r));
  // Short only with a full table or at an XARRAY hole.
  FUZZ_CHECK(sum == limit || t.nents - start == sg_max || !L.addr[L.pos + sum]);
  L.advance(sum);
}

// crc32c() over memory, crc32c_extend_zeroes() and crc32c_combine() against
// the bitwise CRC, and extend_zeroes' additivity on lengths too long to model.
void op_crc_flat(input& in) {
  uint32_t crc0 = in.u32();
  auto buf = source(in, 2 * fuzz::kMaxSeg);
  std::vector<unsigned char> zeroes(buf.size(), 0);
  FUZZ_CHECK(iov::crc32c(crc0, buf.data(), buf.size()) == fuzz::crc32c_bitwise(crc0, buf.data(), buf.size()));
  FUZZ_CHECK(iov::crc32c_extend_zeroes(crc0, zeroes.size()) ==
             fuzz::crc32c_bitwise(crc0, zeroes.data(), zeroes.size()));
  uint32_t b = fuzz::crc32c_bitwise(0, buf.data(), buf.size());
  FUZZ_CHECK(iov::crc32c_combine(crc0, b, buf.size()) == fuzz::crc32c_bitwise(crc0, buf.data(), buf.size()));
  size_t far = in.u64() >> (1 + in.below(63));  // far + buf.size() must not wrap
  fuzz::trace("crc32c flat %zu, zeroes %zu", buf.size(), far);
  FUZZ_CHECK(iov::crc32c_extend_zeroes(iov::crc32c_extend_zeroes(crc0, far), buf.size()) ==
             iov::crc32c_extend_zeroes(crc0, far + buf.size()));
}

// The streaming CRC (crc32c_init, crc32c_update, crc32c_update_zeroes,
// crc32c_final, and the fused copy's step) fed a random buffer in random cuts
// with runs of zeroes between them, at a level the input picks, against the
// bitwise CRC of the same bytes; crc32c_final() along the way must leave the
// state as it was.
void op_crc_stream(input& in) {
  using iov::internal::simd_level;
  static const simd_level levels[] = {simd_level::portable, simd_level::avx2, simd_level::avx512};
  const simd_level saved = iov::internal::crc32c_level();
  iov::internal::crc32c_select(levels[in.below(3)]);  // no change where the CPU lacks it
  const bool saved_wide = iov::internal::crc32c_wide_clmul();
  uint32_t crc0 = in.u32();
  iov::internal::crc32c_select_wide_clmul(crc0 & 1);  // the avx2 level's two forms
  auto buf = source(in, 4 * fuzz::kMaxSeg);
  std::vector<unsigned char> fed, dst(buf.size(), 0xa5);
  iov::crc32c_state st;
  iov::crc32c_init(&st, crc0);
  fuzz::trace("crc32c stream of %zu at %s", buf.size(), iov::internal::simd_level_name(iov::internal::crc32c_level()));
  for (size_t off = 0; off < buf.size() && !in.empty();) {
    size_t n = std::min(in.length(fuzz::kMaxSeg), buf.size() - off);
    switch (in.u8() % 4) {
      case 0:
        iov::crc32c_update(&st, buf.data() + off, n);
        fed.insert(fed.end(), buf.begin() + static_cast<long>(off), buf.begin() + static_cast<long>(off + n));
        off += n;
        break;
      case 1:
        iov::internal::crc32c_copy_update(&st, dst.data() + off, buf.data() + off, n);
        FUZZ_CHECK(std::equal(buf.begin() + static_cast<long>(off), buf.begin() + static_cast<long>(off + n),
                              dst.begin() + static_cast<long>(off)));
        fed.insert(fed.end(), buf.begin() + static_cast<long>(off), buf.begin() + static_cast<long>(off + n));
        off += n;
        break;
      case 2:
        iov::crc32c_update_zeroes(&st, n);
        fed.insert(fed.end(), n, 0);
        break;
      default:
        FUZZ_CHECK(iov::crc32c_final(&st) == fuzz::crc32c_bitwise(crc0, fed.data(), fed.size()));
        break;
    }
  }
  FUZZ_CHECK(iov::crc32c_final(&st) == fuzz::crc32c_bitwise(crc0, fed.data(), fed.size()));
  iov::internal::crc32c_select(saved);
  iov::internal::crc32c_select_wide_clmul(saved_wide);
}

// The CRC engine at its avx2 (PCLMULQDQ) level for a scope when `lower`: the
// input's choice for the iterator forms, which otherwise run at the default.
class crc_level_scope {
 public:
  explicit crc_level_scope(bool lower) : saved_(iov::internal::crc32c_level()) {
    if (lower) iov::internal::crc32c_select(iov::internal::simd_level::avx2);
  }
  ~crc_level_scope() { iov::internal::crc32c_select(saved_); }

 private:
  iov::internal::simd_level saved_;
};

struct saved_state {
  bool valid = false;
  iov::iov_iter_state st{};
  size_t pos = 0, count = 0;
};

void run_op(layout& L, input& in, saved_state& saved) {
  uint8_t op = in.u8();
  bool ool = op & 0x80;  // which of the twins acts on the iterator itself
  // The names added last take the top eight codes, so that most inputs from
  // before them keep their meaning.
  switch ((op & 0x3f) >= 56 ? 14 + ((op & 0x3f) - 56) : (op & 0x3f) % 14) {
    case 0: {
      crc_level_scope level(op & 0x40);
      op_copy_to(L, in, ool);
      break;
    }
    case 1: {
      crc_level_scope level(op & 0x40);
      op_copy_from(L, in, ool);
      break;
    }
    case 2: op_copy_full(L, in); break;
    case 3: op_zero(L, in, ool); break;
    case 4: {
      crc_level_scope level(op & 0x40);
      op_crc(L, in, ool);
      break;
    }
    case 5: op_zero_scan(L, in, ool); break;
    case 6: {
      size_t n = in.length(2 * fuzz::kMaxSeg);
      fuzz::trace("iov_iter_advance %zu", n);
      iov::iov_iter_advance(&L.it, n);
      L.advance(n < L.count ? n : L.count);
      break;
    }
    case 7: {  // revert, within what was consumed
      size_t n = in.below(L.pos + 1);
      fuzz::trace("iov_iter_revert %zu", n);
      iov::iov_iter_revert(&L.it, n);
      L.pos -= n;
      L.count += n;
      break;
    }
    case 8: {
      uint64_t n = in.u8() & 1 ? in.u64() : in.length(2 * fuzz::kMaxSeg);
      fuzz::trace("iov_iter_truncate %llu", static_cast<unsigned long long>(n));
      iov::iov_iter_truncate(&L.it, n);
      if (L.count > n) L.count = n;
      break;
    }
    case 9: {  // reexpand, within what the segments hold
      size_t n = in.below(L.cap - L.pos + 1);
      fuzz::trace("iov_iter_reexpand %zu", n);
      iov::iov_iter_reexpand(&L.it, n);
      L.count = n;
      break;
    }
    case 10:
      fuzz::trace("iov_iter_save_state");
      iov::iov_iter_save_state(&L.it, &saved.st);
      saved = {true, saved.st, L.pos, L.count};
      break;
    case 11:
      if (!saved.valid) break;
      fuzz::trace("iov_iter_restore to pos %zu count %zu", saved.pos, saved.count);
      iov::iov_iter_restore(&L.it, &saved.st);
      // XARRAY, DISCARD and the queues: the kernel warns and does nothing
      if (L.type != iov::ITER_XARRAY && !L.discard() && L.type != iov::ITER_BVECQ && L.type != iov::ITER_FOLIOQ) {
        L.pos = saved.pos;
        L.count = saved.count;
      }
      break;
    case 12:
      if (op & 0x40)
        op_extract_to_sg(L, in);
      else
        op_extract(L, in);
      break;
    case 14: fuzz::uio::op_get_pages(L, in); break;
    case 15: fuzz::uio::op_npages_cap(L, in); break;
    case 16: fuzz::uio::op_gap_alignment(L); break;
    case 17: fuzz::uio::op_copy_to_variants(L, in, ool); break;
    case 18: fuzz::uio::op_copy_from_variants(L, in, ool); break;
    case 19: fuzz::uio::op_dup(L, in); break;
    case 20: fuzz::uio::op_get_pages(L, in); break;
    case 21: fuzz::uio::op_copy_to_variants(L, in, ool); break;
    case 13:
    default:
      if (op & 0x40)
        (op & 0x20) ? op_crc_stream(in) : op_crc_flat(in);
      else
        op_walk(L, in);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool sane = [] {
    const unsigned char check[] = "123456789";
    return ~fuzz::crc32c_bitwise(~0u, check, 9) == 0xE3069283u;
  }();
  FUZZ_CHECK(sane);
  input in(data, size);
  layout L;
  L.build(in);
  L.check("build");
  saved_state saved;
  for (int n = 0; n < 48 && !in.empty(); n++) {
    run_op(L, in, saved);
    L.check("op");
  }
  return 0;
}
