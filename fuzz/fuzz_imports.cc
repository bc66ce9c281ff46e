// fuzz_imports: the validated imports of user-supplied memory with hostile
// input — iov::iter::import_iovec and import_ubuf (include/iov/cxx/iter.hpp), and
// a buffer_table's register_buffers, update, unregister and iov::import_fixed
// (include/iov/registered_buffers.hpp) — with bad directions, arrays past
// UIO_MAXIOV or null, null bases, lengths with the sign bit set or past
// MAX_RW_COUNT or 1 GiB, ranges that wrap or leave the buffer, bad folio
// shifts and direction bits, and memory that is not the caller's. Invalid
// input must give an error (and change nothing); valid input an iterator
// whose type, direction and count match the model and whose bytes are the
// buffers' own: walked (every piece's address, no piece across a page for
// BVEC) and copied where the memory is real. Fake addresses go to the imports
// (which never touch them) and to registration, which must refuse them as the
// kernel's pinning does: unmapped (page 0, the kernel half), PROT_NONE, or
// read-only for a buffer that may receive data (a guarded region of this
// harness: read-write, then read-only, then PROT_NONE pages). References held
// across unregister/update must keep their bvec tables alive.
//
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_imports
//   build/fuzz/fuzz/fuzz_imports -max_total_time=60 fuzz/corpus/fuzz_imports
//   IOV_FUZZ_TRACE=1 build/fuzz/fuzz/fuzz_imports crash-...    # replay one input
#include <sys/mman.h>
#include <sys/uio.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "fuzz_model.hpp"
#include "iov/cxx/iter.hpp"
#include "iov/rcu.hpp"
#include "iov/registered_buffers.hpp"

namespace {

using fuzz::input;
using absl::StatusCode;

// Real memory, each buffer its own allocation so that ASan sees any overrun.
struct arena {
  std::vector<std::unique_ptr<unsigned char[]>> bufs;
  unsigned char* make(size_t len, uint8_t seed) {
    bufs.emplace_back(new unsigned char[len ? len : 1]);
    fuzz::fill(bufs.back().get(), len, seed);
    return bufs.back().get();
  }
};

// One extent of user memory: real (readable, and perhaps writable), or an
// address the test must never touch.
struct extent {
  uintptr_t base;
  size_t len;
  bool real;
  bool writable = false;
  bool shared = false;  // in the guarded region, which other extents may overlap
};

// Can this test touch the extent's bytes in direction `dir` (reading them for
// ITER_SOURCE, writing them for ITER_DEST)?
bool touchable(const extent& e, unsigned dir) { return e.real && (dir != iov::ITER_DEST || e.writable); }

// The harness's own memory of every kind: 64 KiB read-write, 64 KiB
// read-only, then PROT_NONE far beyond the largest buffer (1 GiB), so that an
// extent starting in the first 192 KiB is as accessible as its end says.
struct guarded_region {
  static constexpr size_t kWindow = 64 * 1024;
  uintptr_t base = 0;
  guarded_region() {
    size_t total = 3 * kWindow + iov::IOV_MAX_REG_BUFFER_SIZE + iov::PAGE_SIZE;
    void* p = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    FUZZ_CHECK(p != MAP_FAILED && mprotect(p, 2 * kWindow, PROT_READ | PROT_WRITE) == 0);
    fuzz::fill(static_cast<unsigned char*>(p), 2 * kWindow, 0x5a);
    FUZZ_CHECK(mprotect(static_cast<char*>(p) + kWindow, kWindow, PROT_READ) == 0);
    base = reinterpret_cast<uintptr_t>(p);
  }
  extent at(size_t offset, size_t len) const {
    size_t off = offset % (3 * kWindow);
    bool readable = off < 2 * kWindow && len <= 2 * kWindow - off;
    bool writable = off < kWindow && len <= kWindow - off;
    return {base + off, len, readable, writable, true};
  }
};

extent hostile_extent(input& in, arena& a) {
  static const guarded_region guarded;
  uint8_t kind = in.u8();
  if (kind % 8 < 3) {
    size_t len = in.length(fuzz::kMaxSeg);
    return {reinterpret_cast<uintptr_t>(a.make(len, in.u8())), len, true, true};
  }
  uintptr_t base;
  uint32_t guarded_offset = 0;
  switch ((kind >> 3) % 4) {
    case 0: base = 0; break;
    case 1: base = UINTPTR_MAX - in.below(1 << 16); break;      // wraps with most lengths
    case 2: guarded_offset = in.u32(); base = guarded.base; break;
    default:  // never mapped: the first 64 KiB (vm.mmap_min_addr), or the kernel half
      base = in.u64();
      base |= base >= (1 << 16) ? uintptr_t{1} << 63 : 0;
      break;
  }
  size_t len;
  switch (kind % 8) {
    case 3: len = in.u16(); break;
    case 4: len = static_cast<size_t>(SSIZE_MAX) + 1 + in.below(2); break;  // the sign bit
    case 5: len = iov::MAX_RW_COUNT - 2 + in.below(5); break;
    case 6: len = (size_t{1} << 30) - 1 + in.below(3); break;           // around 1 GiB
    default: len = in.u64() >> in.below(64); break;
  }
  if ((kind >> 3) % 4 == 2)
    return guarded.at(guarded_offset, len);
  return {base, len, false};
}

unsigned pick_direction(input& in) {
  uint8_t d = in.u8();
  return d < 250 ? d & 1 : d;  // now and then neither ITER_DEST nor ITER_SOURCE
}

bool wraps(uintptr_t base, size_t len) { return base + len < base; }
// The kernel's access_ok() on x86-64 (4-level paging): neither wraps nor ends
// above TASK_SIZE_MAX; elsewhere only the wrap. The C++ imports follow it.
bool access_ok(uintptr_t base, size_t len) {
#if defined(__x86_64__)
  return !wraps(base, len) && base + len <= (uintptr_t{1} << 47) - iov::PAGE_SIZE;
#else
  return !wraps(base, len);
#endif
}

// Walks an imported iterator on a copy: pieces must tile `want` (the
// extents' bytes, in order) and, for BVEC, stay within a page.
void check_pieces(const iov::iov_iter& it, const std::vector<extent>& want, size_t bytes) {
  iov::iov_iter copy = it;
  size_t seg = 0, off = 0, seen = 0;
  auto step = [&](void* base, size_t progress, size_t len, void*, void*) -> size_t {
    FUZZ_CHECK(progress == seen);
    if (copy.type == iov::ITER_BVEC) FUZZ_CHECK(iov::offset_in_page(base) + len <= iov::PAGE_SIZE);
    for (size_t done = 0; done < len;) {
      while (seg < want.size() && off == want[seg].len) seg++, off = 0;
      FUZZ_CHECK(seg < want.size());
      size_t n = std::min(len - done, want[seg].len - off);
      FUZZ_CHECK(reinterpret_cast<uintptr_t>(base) + done == want[seg].base + off);
      done += n;
      off += n;
    }
    seen += len;
    return 0;
  };
  FUZZ_CHECK(iov::iterate_and_advance2(&copy, bytes, nullptr, nullptr, step, step) == bytes && seen == bytes);
}

// Copies `bytes` through the iterator (real memory only) and checks both ends.
void check_copy(iov::iov_iter it, const std::vector<extent>& want, size_t bytes, uint8_t seed) {
  std::vector<unsigned char> flat, data(bytes);
  for (const extent& e : want)
    for (size_t k = 0; k < e.len && flat.size() < bytes; k++) flat.push_back(reinterpret_cast<unsigned char*>(e.base)[k]);
  FUZZ_CHECK(flat.size() == bytes);
  if (iov::iov_iter_rw(&it) == iov::ITER_SOURCE) {
    FUZZ_CHECK(iov::copy_from_iter(data.data(), bytes, &it) == bytes && data == flat);
    return;
  }
  fuzz::fill(data.data(), bytes, seed | 1);
  FUZZ_CHECK(iov::copy_to_iter(data.data(), bytes, &it) == bytes);
  size_t k = 0;
  for (const extent& e : want)
    for (size_t j = 0; j < e.len && k < bytes; j++, k++) FUZZ_CHECK(reinterpret_cast<unsigned char*>(e.base)[j] == data[k]);
}

void op_import_iovec(input& in, arena& a) {
  unsigned dir = pick_direction(in);
  size_t nr = in.u8() == 255 ? 1020 + in.below(8) : in.below(17);  // now and then about UIO_MAXIOV
  bool null_array = in.u8() == 255;
  std::vector<::iovec> segs;
  std::vector<extent> want;
  bool bad = dir > 1 || nr > UIO_MAXIOV || (null_array && nr);
  size_t total = 0, real_prefix = 0;
  bool all_real = true;
  for (size_t k = 0; k < nr; k++) {
    extent e = k < 24 ? hostile_extent(in, a) : extent{0, 0, true};
    segs.push_back({reinterpret_cast<void*>(e.base), e.len});
    // One segment is import_ubuf()'s: its length is cut before access_ok().
    size_t checked = nr == 1 ? std::min(e.len, iov::MAX_RW_COUNT) : e.len;
    bad |= e.len > static_cast<size_t>(SSIZE_MAX) || !access_ok(e.base, checked);
    total += std::min(e.len, iov::MAX_RW_COUNT - total);
    // Overlapping destinations are legal, but the model's check of a copy
    // into them is not: only the arena's separate buffers are written.
    all_real &= (touchable(e, dir) && !(dir == iov::ITER_DEST && e.shared)) || !e.len;
    if (all_real) real_prefix += e.len;
    want.push_back(e);
  }
  std::span<const ::iovec> span(null_array ? nullptr : segs.data(), nr);
  absl::StatusOr<iov::iter> got = iov::iter::import_iovec(static_cast<iov::iter_dir>(dir), span);
  fuzz::trace("import_iovec(dir %u, %zu segs%s) -> %s", dir, nr, null_array ? ", null" : "",
              got.ok() ? "ok" : got.status().ToString().c_str());
  if (bad) {
    FUZZ_CHECK(!got.ok() && got.status().code() == StatusCode::kInvalidArgument);
    return;
  }
  FUZZ_CHECK(got.ok() && got->type() == (nr == 1 ? iov::ITER_UBUF : iov::ITER_IOVEC) &&
             got->rw() == static_cast<int>(dir));
  FUZZ_CHECK(got->count() == total && got->get()->nr_segs == nr);  // UBUF: 1
  size_t bytes = std::min(total, real_prefix);
  check_pieces(got->raw(), want, bytes);
  check_copy(got->raw(), want, bytes, in.u8());
}

void op_import_ubuf(input& in, arena& a) {
  unsigned dir = pick_direction(in);
  extent e = hostile_extent(in, a);
  size_t len = std::min(e.len, iov::MAX_RW_COUNT);
  bool bad = dir > 1 || !access_ok(e.base, len);
  absl::StatusOr<iov::iter> got = iov::iter::import_ubuf(static_cast<iov::iter_dir>(dir), reinterpret_cast<void*>(e.base), e.len);
  fuzz::trace("import_ubuf(dir %u, %#lx, %zu) -> %s", dir, e.base, e.len, got.ok() ? "ok" : got.status().ToString().c_str());
  if (bad) {
    FUZZ_CHECK(!got.ok() && got.status().code() == StatusCode::kInvalidArgument);
    return;
  }
  FUZZ_CHECK(got.ok() && got->type() == iov::ITER_UBUF && got->rw() == static_cast<int>(dir) && got->count() == len);
  if (touchable(e, dir)) {
    check_pieces(got->raw(), {e}, len);
    check_copy(got->raw(), {e}, len, in.u8());
  }
}

// --- registered buffers ------------------------------------------------------

struct reg {
  extent mem;
  unsigned dir, folio_shift;
};

struct held {  // an import kept across later changes to the table
  iov::buffer_ref ref;
  iov::iov_iter it;
  std::vector<extent> want;
  reg r;
};

struct table_model {
  std::unique_ptr<iov::buffer_table> table;
  std::vector<std::optional<reg>> slots;
  std::vector<held> kept;
  bool replaced = false;  // a slot changed since the last use of the kept imports
};

// A buffer to register: sparse, real, or hostile; and the options.
::iovec pick_buffer(input& in, arena& a, extent* e) {
  if (in.u8() % 6 == 0) {
    *e = {0, 0, false};
    return {nullptr, 0};
  }
  *e = hostile_extent(in, a);
  return {reinterpret_cast<void*>(e->base), e->len};
}

iov::buffer_registration_options pick_options(input& in) {
  iov::buffer_registration_options o;
  uint8_t b = in.u8();
  o.dir = b < 240 ? 1 + b % 3 : b % 8;  // now and then 0 or a stray bit
  uint8_t s = in.u8();
  o.folio_shift = s < 200 ? 12 + s % 10 : s % 41;
  return o;
}

// Why map_buffer must refuse a buffer (none: it registers). The memory must be
// the caller's: readable, and writable if it may receive data.
bool bad_buffer(const extent& e, const iov::buffer_registration_options& o) {
  return e.len == 0 || e.len > iov::IOV_MAX_REG_BUFFER_SIZE || wraps(e.base, e.len + iov::PAGE_SIZE) ||
         o.folio_shift < 12 || o.folio_shift > 30 || o.dir == 0 || (o.dir & ~3u) || !e.real ||
         ((o.dir & iov::IOV_REG_DEST) && !e.writable);
}

// A registration's bvec table: uniform folios but the ends, each piece at the
// address it stands for.
void check_table(const iov::mapped_ubuf* imu, const reg& r) {
  FUZZ_CHECK(imu->ubuf == r.mem.base && imu->len == r.mem.len && imu->dir == r.dir && imu->folio_shift == r.folio_shift);
  uintptr_t at = r.mem.base;
  const uintptr_t folio = uintptr_t{1} << r.folio_shift;
  for (size_t k = 0; k < imu->bvec.size(); k++) {
    const iov::bio_vec& bv = imu->bvec[k];
    FUZZ_CHECK(static_cast<uintptr_t>(iov::page_address(bv.bv_page)) + bv.bv_offset == at);
    FUZZ_CHECK(bv.bv_len > 0 && (at & (folio - 1)) + bv.bv_len <= folio && (k == 0 || !(at & (folio - 1))));
    at += bv.bv_len;
  }
  FUZZ_CHECK(at == r.mem.base + r.mem.len);
}

void op_register(input& in, arena& a, table_model& t) {
  size_t n = in.below(t.slots.size() + 3);
  auto opts = pick_options(in);
  std::vector<::iovec> bufs;
  std::vector<extent> ext(n);
  bool bad = n > t.slots.size();
  for (size_t k = 0; k < n; k++) {
    bufs.push_back(pick_buffer(in, a, &ext[k]));
    fuzz::trace("  buffer %zu: %#lx + %zu", k, ext[k].base, ext[k].len);
    if (ext[k].base || ext[k].len) bad |= !ext[k].base || bad_buffer(ext[k], opts);
  }
  fuzz::trace("register_buffers(%zu, dir %u, shift %u)", n, opts.dir, opts.folio_shift);
  absl::Status s = t.table->register_buffers(bufs, opts);
  fuzz::trace("  -> %s", s.ToString().c_str());
  FUZZ_CHECK(s.ok() == !bad && (s.ok() || s.code() == StatusCode::kInvalidArgument));
  t.replaced |= s.ok() && !t.kept.empty();
  if (!s.ok()) return;
  for (size_t k = 0; k < n; k++)
    t.slots[k] = ext[k].base || ext[k].len ? std::optional<reg>(reg{ext[k], opts.dir, opts.folio_shift}) : std::nullopt;
}

void op_update(input& in, arena& a, table_model& t) {
  unsigned index = static_cast<unsigned>(in.below(t.slots.size() + 2));
  extent e;
  ::iovec buf = pick_buffer(in, a, &e);
  auto opts = pick_options(in);
  bool unregister = in.u8() % 4 == 0;
  fuzz::trace("%s(%u, %#lx + %zu, dir %u, shift %u)", unregister ? "unregister" : "update", index, e.base, e.len,
              opts.dir, opts.folio_shift);
  absl::Status s = unregister ? t.table->unregister(index) : t.table->update(index, buf, opts);
  fuzz::trace("  -> %s", s.ToString().c_str());
  t.replaced |= s.ok() && !t.kept.empty();
  if (index >= t.slots.size()) {
    FUZZ_CHECK(s.code() == StatusCode::kNotFound);
  } else if (unregister) {
    FUZZ_CHECK(s.ok() == t.slots[index].has_value());
    t.slots[index].reset();
  } else if (!e.base && !e.len) {
    FUZZ_CHECK(s.ok());
    t.slots[index].reset();
  } else {
    FUZZ_CHECK(s.ok() == (e.base && !bad_buffer(e, opts)) && (s.ok() || s.code() == StatusCode::kInvalidArgument));
    if (s.ok()) t.slots[index] = reg{e, opts.dir, opts.folio_shift};
  }
}

void op_import_fixed(input& in, table_model& t) {
  unsigned index = static_cast<unsigned>(in.below(t.slots.size() + 2));
  unsigned dir = pick_direction(in);
  const reg* r = index < t.slots.size() && t.slots[index] ? &*t.slots[index] : nullptr;
  uint64_t addr;
  size_t len;
  if (r && in.u8() % 4) {  // mostly inside the buffer
    size_t off = in.below(r->mem.len + 1);
    addr = r->mem.base + off;
    len = in.u8() & 1 ? r->mem.len - off : in.below(r->mem.len - off + 1);
  } else {
    addr = (r ? r->mem.base : 0) + in.u64() - (in.u8() & 1 ? in.u64() : 0);
    len = in.u64() >> in.below(64);
  }
  iov::iov_iter it;
  iov::iov_iter_discard(&it, iov::ITER_DEST, 12345);  // must stay untouched on error
  absl::StatusOr<iov::buffer_ref> ref = iov::import_fixed(*t.table, index, addr, len, dir, &it);
  fuzz::trace("import_fixed(%u, %#llx, %zu, dir %u) -> %s", index, static_cast<unsigned long long>(addr), len, dir,
              ref.ok() ? "ok" : ref.status().ToString().c_str());
  // Each rule the request breaks, and the code that names it.
  std::vector<StatusCode> faults;
  if (dir > 1) faults.push_back(StatusCode::kInvalidArgument);
  if (!r) faults.push_back(StatusCode::kNotFound);
  if (r && !faults.size()) {
    if (addr + len < addr || len > iov::MAX_RW_COUNT) faults.push_back(StatusCode::kInvalidArgument);
    if (!(r->dir & (1u << dir))) faults.push_back(StatusCode::kPermissionDenied);
    if (addr < r->mem.base || addr + len > r->mem.base + r->mem.len) faults.push_back(StatusCode::kOutOfRange);
  }
  if (!faults.empty()) {
    FUZZ_CHECK(!ref.ok() && std::find(faults.begin(), faults.end(), ref.status().code()) != faults.end());
    FUZZ_CHECK(it.type == iov::ITER_DISCARD && it.count == 12345);
    return;
  }
  FUZZ_CHECK(ref.ok() && it.type == iov::ITER_BVEC && it.count == len && iov::iov_iter_rw(&it) == static_cast<int>(dir));
  check_table(ref->get(), *r);
  std::vector<extent> want{{static_cast<uintptr_t>(addr), len, r->mem.real}};
  check_pieces(it, want, len);
  if (touchable(r->mem, dir)) check_copy(it, want, len, in.u8());
  if (t.kept.size() < 4 && in.u8() & 1) t.kept.push_back(held{std::move(*ref), it, want, *r});
}

// Imports kept from before: their tables must have outlived any unregister.
void op_use_kept(table_model& t) {
  fuzz::trace("use %zu kept import(s)%s", t.kept.size(), t.replaced ? " after a change" : "");
  if (t.replaced) iov::rcu_barrier();  // a premature free has happened by now: ASan sees the use
  t.replaced = false;
  for (held& h : t.kept) {
    check_table(h.ref.get(), h.r);
    check_pieces(h.it, h.want, h.it.count);
  }
  if (!t.kept.empty()) t.kept.erase(t.kept.begin());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  input in(data, size);
  arena a;  // outlives the table and every reference
  table_model t;
  uint8_t slots = in.u8();
  unsigned nr_slots = slots == 255 ? iov::IORING_MAX_REG_BUFFERS + 1 : slots % 9;  // the kernel's cap, once
  t.table = std::make_unique<iov::buffer_table>(nr_slots);
  t.slots.resize(std::min(nr_slots, iov::IORING_MAX_REG_BUFFERS));
  FUZZ_CHECK(t.table->size() == t.slots.size());
  for (int n = 0; n < 32 && !in.empty(); n++) {
    switch (in.u8() % 6) {
      case 0: op_import_iovec(in, a); break;
      case 1: op_import_ubuf(in, a); break;
      case 2: op_register(in, a, t); break;
      case 3: op_update(in, a, t); break;
      case 4: op_import_fixed(in, t); break;
      default: op_use_kept(t); break;
    }
  }
  return 0;
}
