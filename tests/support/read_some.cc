// read_some.cc: see read_some.hpp.
#include "support/read_some.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace iov_test {

ssize_t read_some(int fd, std::string* out, std::chrono::steady_clock::time_point deadline) {
  using clock_type = std::chrono::steady_clock;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
    pollfd pf{fd, POLLIN, 0};
    int r = poll(&pf, 1, left < 0 ? 0 : static_cast<int>(left));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return 0;
    out->append(buf, static_cast<size_t>(n));
    return n;
  }
}

}  // namespace iov_test
