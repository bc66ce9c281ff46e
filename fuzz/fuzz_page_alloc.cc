// fuzz_page_alloc: a random sequence of alloc_pages (every order 0..11,
// __GFP_ZERO, __GFP_COMP, GFP_NOWAIT), __free_pages, get_page/put_page on
// any frame of a block, writes, free_pages_rcu, thread-cache drains and
// explicit releases, against a model of the live blocks: each is naturally
// aligned, overlaps no other, keeps its bytes until freed, reads zero when
// __GFP_ZERO asked for it; reference counts, compound heads and orders are
// the kernel's; the frames-in-use counter is the model's sum.
//
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_page_alloc
//   build/fuzz/fuzz/fuzz_page_alloc -max_total_time=60 fuzz/corpus/fuzz_page_alloc
#include <cstdint>
#include <cstring>
#include <map>

#include "fuzz_model.hpp"
#include "iov/folio.hpp"
#include "iov/page_alloc.hpp"
#include "iov/rcu.hpp"

namespace {

using fuzz::input;
using iov::PAGE_SIZE;

struct block {
  unsigned order;
  bool compound;
  int refs;
  uint8_t tag;  // every frame's first and last byte
};
using model_t = std::map<uintptr_t, block>;

iov::page* page_at(uintptr_t a) { return reinterpret_cast<iov::page*>(a); }
size_t frames(const block& b) { return size_t{1} << b.order; }

void check_block(uintptr_t a, const block& b) {
  for (size_t f = 0; f < frames(b); f++) {
    auto* bytes = reinterpret_cast<const uint8_t*>(page_at(a) + f);
    FUZZ_CHECK(bytes[0] == b.tag && bytes[PAGE_SIZE - 1] == b.tag);
  }
  FUZZ_CHECK(iov::page_ref_count(page_at(a)) == b.refs);
  FUZZ_CHECK(iov::compound_order(page_at(a)) == (b.compound ? b.order : 0));
  size_t f = frames(b) - 1;  // the last frame
  FUZZ_CHECK(iov::compound_head(page_at(a) + f) == (b.compound ? page_at(a) : page_at(a) + f));
}

void tag(uintptr_t a, block& b, uint8_t t) {
  b.tag = t;
  for (size_t f = 0; f < frames(b); f++) {
    auto* bytes = reinterpret_cast<uint8_t*>(page_at(a) + f);
    bytes[0] = bytes[PAGE_SIZE - 1] = t;
  }
}

void alloc(model_t& m, input& in) {
  uint8_t r = in.u8();
  unsigned order = r < 160 ? 0 : r < 250 ? 1 + (r % 9) : 10 + (r & 1);
  uint8_t flags = in.u8();
  iov::gfp_t gfp = (flags & 4) ? iov::GFP_NOWAIT : iov::GFP_KERNEL;
  if (flags & 1) gfp |= iov::__GFP_ZERO;
  if (flags & 2) gfp |= iov::__GFP_COMP;
  iov::page* p = iov::alloc_pages(gfp, order);
  if (!p) {
    FUZZ_CHECK(!iov::gfpflags_allow_blocking(gfp));  // only a non-blocking one may fail here
    return;
  }
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  size_t bytes = PAGE_SIZE << order;
  FUZZ_CHECK(a % bytes == 0);
  auto next = m.lower_bound(a);
  FUZZ_CHECK(next == m.end() || next->first >= a + bytes);
  if (next != m.begin()) {
    auto prev = std::prev(next);
    FUZZ_CHECK(prev->first + (PAGE_SIZE << prev->second.order) <= a);
  }
  if (gfp & iov::__GFP_ZERO)
    for (size_t off = 0; off < bytes; off += 512)
      FUZZ_CHECK(reinterpret_cast<const uint8_t*>(p)[off] == 0 &&
                 reinterpret_cast<const uint8_t*>(p)[off + 511] == 0);
  block b{order, order > 0 && (gfp & iov::__GFP_COMP), 1, 0};
  tag(a, b, static_cast<uint8_t>(in.u8() | 1));
  m[a] = b;
}

model_t::iterator pick(model_t& m, input& in) {
  auto it = m.begin();
  std::advance(it, static_cast<long>(in.below(m.size())));
  return it;
}

// Drops one reference the model holds on the block; the last frees it.
void put(model_t& m, model_t::iterator it, input& in) {
  check_block(it->first, it->second);
  uintptr_t a = it->first;
  block& b = it->second;
  unsigned order = b.order;
  bool via_put_page = b.refs > 1 || in.u8() & 1;
  size_t frame = b.compound ? in.below(frames(b)) : 0;  // any frame of a compound page
  if (--b.refs == 0)
    m.erase(it);
  if (via_put_page)
    iov::put_page(page_at(a) + frame);
  else
    iov::__free_pages(page_at(a), order);
}

// Frames freed with free_pages_rcu that may not be back yet: by this input,
// and by earlier ones (a grace period is waited for now and then, not per input).
size_t rcu_pending_frames = 0, rcu_carried_frames = 0;

// frames_in_use is the model's sum, give or take the frames still in a grace period.
void check_in_use(size_t base, const model_t& m) {
  size_t live = 0;
  for (const auto& [a, b] : m) live += frames(b);
  size_t in_use = iov::page_alloc_read_stats().frames_in_use;
  FUZZ_CHECK(in_use + rcu_carried_frames >= base + live && in_use <= base + live + rcu_pending_frames);
}

void run_op(model_t& m, input& in) {
  uint8_t op = in.u8() % 10;
  if (m.empty() && op > 1 && op < 7) op = 0;
  switch (op) {
    case 0:
    case 1: alloc(m, in); break;
    case 2:
    case 3: put(m, pick(m, in), in); break;
    case 4: {  // lend it out
      auto it = pick(m, in);
      block& b = it->second;
      size_t frame = b.compound ? in.below(frames(b)) : 0;
      iov::get_page(page_at(it->first) + frame);
      b.refs++;
      break;
    }
    case 5: {  // rewrite its tags
      auto it = pick(m, in);
      check_block(it->first, it->second);
      tag(it->first, it->second, static_cast<uint8_t>(in.u8() | 1));
      break;
    }
    case 6: {  // the owner frees after a grace period
      auto it = pick(m, in);
      if (it->second.refs != 1) break;
      check_block(it->first, it->second);
      iov::free_pages_rcu(page_at(it->first), it->second.order);
      rcu_pending_frames += frames(it->second);
      m.erase(it);
      break;
    }
    case 7: iov::page_alloc_drain_thread_cache(); break;
    case 8: iov::page_alloc_release_free(); break;
    default: {  // folios are compound allocations
      iov::folio* f = iov::folio_alloc(iov::GFP_KERNEL, in.below(4));
      FUZZ_CHECK(f != nullptr);
      FUZZ_CHECK(iov::folio_ref_count(f) == 1 && iov::page_folio(iov::folio_page(f, iov::folio_nr_pages(f) - 1)) == f);
      iov::folio_put(f);
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  input in(data, size);
  if (rcu_carried_frames > 4096) {
    iov::rcu_barrier();
    rcu_carried_frames = 0;
  }
  size_t base = iov::page_alloc_read_stats().frames_in_use;
  rcu_pending_frames = 0;
  model_t m;
  for (int n = 0; n < 512 && !in.empty(); n++) {
    run_op(m, in);
    check_in_use(base, m);
  }
  for (const auto& [a, b] : m) {
    check_block(a, b);
    for (int r = 0; r < b.refs; r++) iov::put_page(page_at(a));
  }
  m.clear();
  check_in_use(base, m);
  rcu_carried_frames += rcu_pending_frames;
  return 0;
}
