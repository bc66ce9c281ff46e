// page_ref.cc: what the kernel keeps in struct page, kept beside the frames:
// reference counts, compound heads and orders (mm.h), the frees they lead to
// (__free_pages, put_page) and the frees after a grace period that use the
// frame's own rcu_head (free_pages_rcu).
#include "iov/page.hpp"

#include "iov/config.hpp"
#include "page_alloc_internal.hpp"

namespace iov {
namespace internal {

frame_meta* frame_meta_of(const page* p, frame_meta** tail_of) noexcept {
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  *tail_of = nullptr;
  void* r = region_of(addr);
  if (!r)
    return nullptr;
  if (*static_cast<region_kind*>(r) == region_kind::chunk) {
    auto* c = static_cast<chunk*>(r);
    return &c->frames[(addr - c->base) >> PAGE_SHIFT];
  }
  auto* d = static_cast<direct_mapping*>(r);
  if (addr == d->base)
    return &d->head;
  *tail_of = &d->head;
  return nullptr;
}

namespace {

// The frame_meta that holds p's reference count: its compound head's, or its
// own. nullptr for a frame the allocator did not hand out; *no_count when p
// is a later frame of a non-compound allocation (the kernel's refcount 0).
frame_meta* counted_meta(const page* p, bool* no_count) {
  frame_meta* tail_of;
  frame_meta* m = frame_meta_of(p, &tail_of);
  *no_count = false;
  if (tail_of) {
    if (tail_of->flags & F_COMPOUND)
      return tail_of;
    *no_count = true;
    return nullptr;
  }
  if (m && (m->flags & F_TAIL))
    return m - (m->index - m->head_index);
  return m;
}

// Drops one reference; the last frees the allocation.
void put_meta(frame_meta* m, [[maybe_unused]] const char* what) {
  int old = m->refcount.fetch_sub(1, std::memory_order_acq_rel);
  if (old == 1) {
    free_allocation(m);
    return;
  }
  if (IOV_BUG_ON(old <= 0, what))
    m->refcount.fetch_add(1, std::memory_order_relaxed);  // the put never happened
}

void free_after_grace_period(rcu_head* head) {
  auto* m = reinterpret_cast<frame_meta*>(reinterpret_cast<unsigned char*>(head) -
                                          offsetof(frame_meta, rcu));
  free_allocation(m);
}

}  // namespace

bool free_pages_after_grace_period(page* p, unsigned order) noexcept {
  frame_meta* tail_of;
  frame_meta* m = frame_meta_of(p, &tail_of);
  if (!m || !(m->flags & F_HEAD) || m->order != order)
    return false;
  int expected = 1;
  if (!m->refcount.compare_exchange_strong(expected, 0, std::memory_order_acq_rel))
    return false;
  call_rcu(&m->rcu, free_after_grace_period);
  return true;
}

}  // namespace internal

void __free_pages(page* p, unsigned order) noexcept {
  using namespace internal;
  if (!p)
    return;
  frame_meta* tail_of;
  frame_meta* m = frame_meta_of(p, &tail_of);
  if (IOV_BUG_ON(!m || !(m->flags & F_HEAD), "__free_pages: not a page from alloc_pages (or freed twice)"))
    return;
  if (IOV_BUG_ON(m->order != order, "__free_pages: order differs from the allocation's"))
    return;
  put_meta(m, "__free_pages: no reference left");
}

void get_page(page* p) noexcept {
  using namespace internal;
  bool no_count;
  frame_meta* m = counted_meta(p, &no_count);
  if (IOV_BUG_ON(no_count, "get_page: a later page of a non-compound allocation has no count"))
    return;
  if (!m)
    return;  // not from the allocator: its owner keeps it alive
  if (IOV_BUG_ON(m->refcount.load(std::memory_order_relaxed) <= 0, "get_page: page is free"))
    return;
  m->refcount.fetch_add(1, std::memory_order_relaxed);
}

void put_page(page* p) noexcept {
  using namespace internal;
  bool no_count;
  frame_meta* m = counted_meta(p, &no_count);
  if (IOV_BUG_ON(no_count, "put_page: a later page of a non-compound allocation has no count"))
    return;
  if (m)
    put_meta(m, "put_page: page is free");
}

bool get_page_unless_zero(page* p) noexcept {
  using namespace internal;
  bool no_count;
  frame_meta* m = counted_meta(p, &no_count);
  if (no_count)
    return false;
  if (!m)
    return true;  // not from the allocator: its owner keeps it alive
  int c = m->refcount.load(std::memory_order_relaxed);
  do {
    if (c <= 0)
      return false;
  } while (!m->refcount.compare_exchange_weak(c, c + 1, std::memory_order_acquire, std::memory_order_relaxed));
  return true;
}

int page_ref_count(const page* p) noexcept {
  using namespace internal;
  bool no_count;
  frame_meta* m = counted_meta(p, &no_count);
  if (no_count)
    return 0;
  return m ? m->refcount.load(std::memory_order_acquire) : 1;
}

page* compound_head(const page* p) noexcept {
  using namespace internal;
  frame_meta* tail_of;
  frame_meta* m = frame_meta_of(p, &tail_of);
  if (tail_of && (tail_of->flags & F_COMPOUND))
    return page_of(tail_of);
  if (m && (m->flags & F_TAIL))
    return page_of(m - (m->index - m->head_index));
  return const_cast<page*>(p);
}

unsigned compound_order(const page* p) noexcept {
  using namespace internal;
  frame_meta* tail_of;
  frame_meta* m = frame_meta_of(p, &tail_of);
  return m && (m->flags & F_COMPOUND) ? m->order.load(std::memory_order_relaxed) : 0u;
}

}  // namespace iov
