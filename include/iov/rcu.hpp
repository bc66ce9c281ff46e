// rcu.hpp: read-copy-update, the kernel's way of letting readers run without
// locks while writers retire what the readers may still hold.
//
// A reader brackets its accesses with rcu_read_lock()/rcu_read_unlock() (or an
// rcu_read_guard); a writer unpublishes an object, then frees it only after a
// grace period, when every reader that could have seen it has left: with
// synchronize_rcu() (waits), call_rcu() on an embedded rcu_head, or the
// deferred frees below (kfree_rcu-style, for objects without an rcu_head).
//
//   { iov::rcu_read_guard g; page* p = iov::xa_load(xa, idx); use(p); }   // reader
//   iov::free_page_rcu(iov::xa_erase(xa, idx));                           // writer
//
// Built on liburcu's bulletproof flavour: any thread may read without
// registering. Sections nest; only the outermost pair reaches liburcu, so a
// nested one (an xa_load inside a driver's walk) costs a thread-local
// increment. Never wait for a grace period (synchronize_rcu, rcu_barrier)
// inside a read-side section: it would wait for itself.
//
// The outermost pair is two calls into liburcu-bp.so, each finding its
// thread's reader through __tls_get_addr (a shared object's TLS): about 85
// instructions, 44 of them __tls_get_addr, some 1 % of a 4 KiB brd read (the
// kernel's is a preempt count). Measured and not taken: liburcu's inline
// read side (_LGPL_SOURCE), 42 fewer, compiles its LGPL-2.1 code into iov,
// which its README allows only to LGPL- or GPL-compatible code; linking
// liburcu-bp.a, 58 fewer, puts iov's programs under LGPL-2.1's relinking
// terms. iov states no licence, so the choice is not made here
// (docs/brd-limit.md, "The RCU read side").
#pragma once

#include "iov/config.hpp"
#include "iov/page.hpp"

namespace iov {

namespace internal {
// This thread's read-side nesting depth.
inline constinit thread_local unsigned rcu_read_depth = 0;
// In src/rcu.cc, on liburcu. Weak, so that a program using only the header
// part of iov links without the library (the ITER_XARRAY walk, which every
// iterate_and_advance2() carries, takes a read-side section). Where they are
// absent, nothing of iov's RCU is in the program: no writer waits for
// readers, and a section has nothing to do.
[[gnu::weak]] void rcu_read_lock_outermost() noexcept;
[[gnu::weak]] void rcu_read_unlock_outermost() noexcept;
// Callbacks queued by call_rcu() and the deferred frees that have not run yet.
unsigned long rcu_callbacks_pending() noexcept;
}  // namespace internal

IOV_ALWAYS_INLINE void rcu_read_lock() noexcept {
  if (internal::rcu_read_depth++ == 0 && internal::rcu_read_lock_outermost)
    internal::rcu_read_lock_outermost();
}

IOV_ALWAYS_INLINE void rcu_read_unlock() noexcept {
  if (IOV_BUG_ON(internal::rcu_read_depth == 0, "rcu_read_unlock: not in a read-side section"))
    return;
  if (--internal::rcu_read_depth == 0 && internal::rcu_read_unlock_outermost)
    internal::rcu_read_unlock_outermost();
}

// The kernel's lockdep query, exact here: is this thread inside a section?
inline bool rcu_read_lock_held() noexcept { return internal::rcu_read_depth != 0; }

// Waits until every read-side section that began before the call has ended.
void synchronize_rcu() noexcept;

// Waits until every callback queued before the call (call_rcu, the deferred
// frees) has run. Tests call it before counting what was freed.
void rcu_barrier() noexcept;

// Starts the thread that runs call_rcu() callbacks (and the deferred frees)
// now rather than at the first call_rcu(): liburcu ends the process when it
// cannot create that thread, so a program that will free after grace
// periods makes it while it starts, not when memory or threads run short
// (user space only; brd calls it when it is made). Where no thread can be
// created now it does nothing and returns false: the program then meets
// the limit in its own thread creation first, with its own error.
bool rcu_start_callback_thread() noexcept;

// Embed one in an object to free it with call_rcu(), as in the kernel
// (struct callback_head). `node` belongs to liburcu while the callback is pending.
struct rcu_head {
  alignas(void*) unsigned char node[2 * sizeof(void*)];
  void (*func)(rcu_head* head);
};

// Runs func(head) after a grace period, on liburcu's callback thread.
void call_rcu(rcu_head* head, void (*func)(rcu_head* head)) noexcept;

// Deferred frees for objects without an rcu_head (the kernel embeds one in
// struct page; iov's page is its bare frame): fn(p) runs after a grace period.
// A small holder is allocated; if that fails, the call waits for the grace
// period itself (outside a read-side section) and frees at once.
void defer_free(void* p, void (*fn)(void* p)) noexcept;
void free_page_rcu(page* p) noexcept;                    // free_page(p) after a grace period
void free_pages_rcu(page* p, unsigned order) noexcept;  // free_pages(p, order) after a grace period

// C++ layer: `delete p` after a grace period.
template <class T>
void defer_delete(T* p) noexcept {
  defer_free(p, [](void* q) { delete static_cast<T*>(q); });
}

// RAII read-side section.
class rcu_read_guard {
 public:
  rcu_read_guard() noexcept { rcu_read_lock(); }
  ~rcu_read_guard() { rcu_read_unlock(); }
  rcu_read_guard(const rcu_read_guard&) = delete;
  rcu_read_guard& operator=(const rcu_read_guard&) = delete;
};

}  // namespace iov
