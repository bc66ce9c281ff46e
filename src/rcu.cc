// rcu.cc: iov's RCU layer over liburcu's bulletproof flavour (liburcu-bp).
//
// liburcu's headers rename rcu_read_lock, call_rcu and friends with macros, so
// they stay in this file: <urcu/urcu-bp.h> (unlike <urcu-bp.h>) clears those
// macros at its end and leaves the urcu_bp_* names.
//
// ThreadSanitizer cannot see a grace period: liburcu is not instrumented, so a
// free on the callback thread after readers left looks like a race with their
// accesses. In TSan builds the outermost rcu_read_unlock() releases a sync
// object that every grace-period waiter and callback acquires, and call_rcu()
// releases the head that its callback acquires (the retiring writer's stores).
// liburcu's own hand-offs (rcu_barrier's completion, its queues) are invisible
// to TSan too, so TSan builds ignore what liburcu itself calls (malloc, free,
// pthread locks); what our callbacks do stays checked.
#include "iov/rcu.hpp"

#include "page_alloc_internal.hpp"

#include <pthread.h>
#include <urcu/urcu-bp.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>

#if defined(__SANITIZE_THREAD__)
#define IOV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IOV_TSAN 1
#endif
#endif

#ifdef IOV_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
// Read by the TSan runtime at start-up.
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:liburcu-bp.so\n"
         "called_from_lib:liburcu-common.so\n";
}
#endif

namespace iov {
namespace {

static_assert(sizeof(::rcu_head) <= sizeof(iov::rcu_head::node) &&
                  alignof(::rcu_head) <= alignof(iov::rcu_head),
              "liburcu's rcu_head must fit in iov::rcu_head::node");
static_assert(offsetof(iov::rcu_head, node) == 0);
static_assert(std::is_standard_layout_v<iov::rcu_head>);

std::atomic<unsigned long> pending{0};

#ifdef IOV_TSAN
char readers_left;      // released by every outermost unlock
char callbacks_ran;     // released by every callback, acquired by rcu_barrier
void tsan_acquire(void* a) { __tsan_acquire(a); }
void tsan_release(void* a) { __tsan_release(a); }
#else
void tsan_acquire(void*) {}
void tsan_release(void*) {}
#endif

void* readers_left_addr() {
#ifdef IOV_TSAN
  return &readers_left;
#else
  return nullptr;
#endif
}
void* callbacks_ran_addr() {
#ifdef IOV_TSAN
  return &callbacks_ran;
#else
  return nullptr;
#endif
}

// What is still queued at exit is run before LeakSanitizer looks.
void barrier_at_exit() {
  if (pending.load(std::memory_order_acquire) != 0 && internal::rcu_read_depth == 0)
    urcu_bp_barrier();
}

void register_exit_barrier() {
  static const bool registered = (std::atexit(barrier_at_exit), true);
  (void)registered;
}

// liburcu hands back its own head; ours starts at the same address.
void trampoline(::rcu_head* u) {
  auto* head = reinterpret_cast<iov::rcu_head*>(reinterpret_cast<unsigned char*>(u) -
                                                 offsetof(iov::rcu_head, node));
  tsan_acquire(head);
  tsan_acquire(readers_left_addr());
  head->func(head);
  tsan_release(callbacks_ran_addr());
  pending.fetch_sub(1, std::memory_order_release);
}

// The holder of a deferred free: fn(p), or free_pages(p, order) when fn is null.
struct deferred {
  iov::rcu_head head;
  void (*fn)(void* p);
  void* p;
  unsigned order;
};
static_assert(offsetof(deferred, head) == 0);

void release(const deferred& d) {
  if (d.fn)
    d.fn(d.p);
  else
    free_pages(static_cast<page*>(d.p), d.order);
}

void run_deferred(iov::rcu_head* head) {
  auto* d = reinterpret_cast<deferred*>(head);
  release(*d);
  std::free(d);
}

void defer(const deferred& what) noexcept {
  if (!what.p) return;  // as kfree_rcu(NULL)
  auto* d = static_cast<deferred*>(std::malloc(sizeof(deferred)));
  if (!d) {
    // No holder: wait for the grace period here, as kvfree_rcu_mightsleep() does.
    if (IOV_BUG_ON(internal::rcu_read_depth != 0,
                   "defer_free: out of memory inside a read-side section"))
      return;
    synchronize_rcu();
    release(what);
    return;
  }
  d->fn = what.fn;
  d->p = what.p;
  d->order = what.order;
  call_rcu(&d->head, run_deferred);
}

}  // namespace

namespace internal {
void rcu_read_lock_outermost() noexcept { urcu_bp_read_lock(); }

void rcu_read_unlock_outermost() noexcept {
  tsan_release(readers_left_addr());
  urcu_bp_read_unlock();
}

unsigned long rcu_callbacks_pending() noexcept { return pending.load(std::memory_order_acquire); }
}  // namespace internal

void synchronize_rcu() noexcept {
  if (IOV_BUG_ON(internal::rcu_read_depth != 0, "synchronize_rcu: inside a read-side section"))
    return;
  urcu_bp_synchronize_rcu();
  tsan_acquire(readers_left_addr());
}

void rcu_barrier() noexcept {
  if (IOV_BUG_ON(internal::rcu_read_depth != 0, "rcu_barrier: inside a read-side section"))
    return;
  urcu_bp_barrier();
  tsan_acquire(callbacks_ran_addr());
}

bool rcu_start_callback_thread() noexcept {
  static std::atomic<bool> started{false};  // liburcu keeps the thread: probe and make it once
  if (started.load(std::memory_order_acquire)) return true;
  pthread_t probe;
  if (pthread_create(&probe, nullptr, [](void*) -> void* { return nullptr; }, nullptr) != 0) return false;
  pthread_join(probe, nullptr);
  (void)urcu_bp_get_default_call_rcu_data();
  started.store(true, std::memory_order_release);
  return true;
}

void call_rcu(iov::rcu_head* head, void (*func)(iov::rcu_head*)) noexcept {
  register_exit_barrier();
  head->func = func;
  auto* u = new (head->node)::rcu_head;
  pending.fetch_add(1, std::memory_order_relaxed);
  tsan_release(head);
  urcu_bp_call_rcu(u, trampoline);
}

void defer_free(void* p, void (*fn)(void*)) noexcept {
  if (IOV_BUG_ON(fn == nullptr, "defer_free: no function to run")) return;
  defer({.head = {}, .fn = fn, .p = p, .order = 0});
}

void free_page_rcu(page* p) noexcept { free_pages_rcu(p, 0); }

// A page from the allocator waits on the rcu_head in its metadata, as the
// kernel's on the one in struct page; anything else (a page still lent out)
// gets a holder.
void free_pages_rcu(page* p, unsigned order) noexcept {
  if (p && internal::free_pages_after_grace_period(p, order))
    return;
  defer({.head = {}, .fn = nullptr, .p = p, .order = order});
}

}  // namespace iov
