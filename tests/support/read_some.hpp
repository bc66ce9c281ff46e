// read_some.hpp: one read of a child's output with a deadline, for the
// helpers that run programs (child_process, nbd_process).
//
//   while (iov_test::read_some(fd, &output, deadline) > 0) {}
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace iov_test {

// One read of what fd has, appended to *out, waiting no later than the
// deadline: the bytes read (> 0); 0 at the end of the output (EOF, a read
// error, or EIO from a pty whose other side closed); -1 when the deadline
// passes first.
ssize_t read_some(int fd, std::string* out, std::chrono::steady_clock::time_point deadline);

}  // namespace iov_test
