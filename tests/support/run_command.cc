// run_command.cc: see run_command.hpp.
#include "support/run_command.hpp"

#include <cstdio>

namespace iov_test {

std::string run_command(const std::string& command, int* status) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  *status = pclose(p);
  return out;
}

}  // namespace iov_test
