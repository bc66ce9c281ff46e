// fault_inject.hpp: the analogues of the kernel's should_fail_usercopy() and
// should_fail_alloc_page(), for tests. Built with IOV_FAULT_INJECTION=1 (the
// test builds), the user-backed copy steps (UBUF, IOVEC) stop short once a
// per-thread byte budget is spent, and alloc_pages() fails once a per-thread
// allocation budget is spent, so every short-copy and out-of-memory path can
// be driven on purpose:
//
//   iov::internal::usercopy_fault_after(100);   // the next user copies stop after 100 bytes
//   iov::internal::page_alloc_fault_after(2);   // the third alloc_pages() on this thread fails
//   ...
//   iov::internal::usercopy_fault_clear();
//   iov::internal::page_alloc_fault_clear();
//
// Without it, usercopy_allow() is the identity, should_fail_alloc_page() is
// false, and both cost nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#ifndef IOV_FAULT_INJECTION
#define IOV_FAULT_INJECTION 0
#endif

namespace iov::internal {

#if IOV_FAULT_INJECTION
extern thread_local size_t usercopy_budget;  // SIZE_MAX: no fault armed

inline void usercopy_fault_after(size_t bytes) { usercopy_budget = bytes; }
inline void usercopy_fault_clear() { usercopy_budget = SIZE_MAX; }

// How many of len bytes a user copy may move before the armed fault.
inline size_t usercopy_allow(size_t len) {
  size_t budget = usercopy_budget;
  if (budget == SIZE_MAX)
    return len;
  size_t n = len < budget ? len : budget;
  usercopy_budget = budget - n;
  return n;
}

extern thread_local size_t page_alloc_budget;  // SIZE_MAX: no fault armed

inline void page_alloc_fault_after(size_t allocations) { page_alloc_budget = allocations; }
inline void page_alloc_fault_clear() { page_alloc_budget = SIZE_MAX; }

// Whether this alloc_pages() call fails: once the budget is spent, every call
// fails until page_alloc_fault_clear().
inline bool should_fail_alloc_page() {
  size_t budget = page_alloc_budget;
  if (budget == SIZE_MAX)
    return false;
  if (budget == 0)
    return true;
  page_alloc_budget = budget - 1;
  return false;
}
#else
inline constexpr size_t usercopy_allow(size_t len) { return len; }
inline constexpr bool should_fail_alloc_page() { return false; }
#endif

}  // namespace iov::internal
