// checks_mode: a consumer built in whatever mode its own build type gives
// (scripts/run-tests builds it as Debug, without NDEBUG, against the release
// package) still gets the check mode the library was built with: IOV_CHECKS
// equals IOV_CHECKS_BUILT, and a programming error behaves as the package's
// mode says, in the headers and in the compiled library alike. (Defining
// IOV_CHECKS otherwise is a build error; examples/CMakeLists.txt proves that.)
//
//   /tmp/ex/checks_mode      # prints "example: ok (checks off)" for a release package
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <iov/iov.hpp>

namespace {
// Runs f in a child: true if the child aborted (a BUG with checks on).
template <class F>
bool aborts(F f) {
  pid_t pid = fork();
  if (pid == 0) {
    f();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status);
}
}  // namespace

int main() {
#ifndef NDEBUG
  constexpr bool debug_consumer = true;
#else
  constexpr bool debug_consumer = false;
#endif
  static_assert(IOV_CHECKS == IOV_CHECKS_BUILT, "the package's mode must win");
  const bool on = IOV_CHECKS_BUILT;
  char buf[16];
  // Header part: a revert past the start of a user buffer (the kernel's BUG()).
  bool header_aborts = aborts([&] {
    iov::iov_iter it;
    iov::iov_iter_ubuf(&it, iov::ITER_DEST, buf, sizeof buf);
    iov::iov_iter_revert(&it, 1);
  });
  // Compiled part (src/rcu.cc): waiting for a grace period inside a
  // read-side section would wait for itself: a BUG there, a refusal here.
  bool library_aborts = aborts([] {
    iov::rcu_read_lock();
    iov::synchronize_rcu();
  });
  iov::xarray xa;
  if (!iov::xa_is_err(iov::xa_store(&xa, 1, iov::xa_mk_internal(5)))) {
    std::fprintf(stderr, "example: FAILED: xa_store accepted an internal entry\n");
    return 1;
  }
  if (header_aborts != on || library_aborts != on) {
    std::fprintf(stderr, "example: FAILED: checks %s, but header %s and library %s (consumer %s)\n", on ? "on" : "off",
                 header_aborts ? "aborts" : "does not abort", library_aborts ? "aborts" : "does not abort",
                 debug_consumer ? "Debug" : "release");
    return 1;
  }
  std::printf("example: ok (checks %s, %s consumer)\n", on ? "on" : "off", debug_consumer ? "Debug" : "release");
  return 0;
}
