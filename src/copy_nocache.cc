// copy_nocache.cc: the compiled-once walk of copy_nocache.hpp's operations
// (outofline_walk): copy_from_iter_nocache() and its _full form, and
// copy_to_iter_nocache().
#include "iov/copy_nocache.hpp"

#include "outofline_walk.hpp"

namespace iov::internal {

template size_t outofline_walk::run<copy_nocache_steps>(iov_iter*, size_t, void*, void*);
template size_t outofline_walk::run<copy_to_nocache_steps>(iov_iter*, size_t, void*, void*);

}  // namespace iov::internal
