// copy.cc: the compiled-once walks of copy.hpp's operations (outofline_walk):
// copy_to_iter(), copy_from_iter() and iov_iter_zero() with their _full and
// page forms, and copy_page_to_iter_nofault().
#include "iov/copy.hpp"

#include "outofline_walk.hpp"

namespace iov::internal {

template size_t outofline_walk::run<copy_to_iter_steps>(iov_iter*, size_t, void*, void*);
template size_t outofline_walk::run<copy_from_iter_steps>(iov_iter*, size_t, void*, void*);
template size_t outofline_walk::run<zero_steps>(iov_iter*, size_t, void*, void*);
template size_t outofline_walk::run<copy_to_iter_nofault_steps>(iov_iter*, size_t, void*, void*);

}  // namespace iov::internal
