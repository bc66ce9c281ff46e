// fault_inject.cc: the per-thread budgets behind internal/fault_inject.hpp.
#include "iov/internal/fault_inject.hpp"

#if IOV_FAULT_INJECTION
namespace iov::internal {
thread_local size_t usercopy_budget = SIZE_MAX;
thread_local size_t page_alloc_budget = SIZE_MAX;
}  // namespace iov::internal
#endif
