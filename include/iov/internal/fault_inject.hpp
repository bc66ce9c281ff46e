// fault_inject.hpp: the analogue of the kernel's should_fail_usercopy(), for
// tests. Built with IOV_FAULT_INJECTION=1 (the test builds), the user-backed
// copy steps (UBUF, IOVEC) stop short once a per-thread byte budget is spent,
// so every short-copy path can be driven on purpose:
//
//   iov::internal::usercopy_fault_after(100);   // the next user copies stop after 100 bytes
//   ...
//   iov::internal::usercopy_fault_clear();
//
// Without it, usercopy_allow() is the identity and costs nothing.
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
#else
inline constexpr size_t usercopy_allow(size_t len) { return len; }
#endif

}  // namespace iov::internal
