// resident.hpp: the process's resident set, for the tests and benchmarks that
// check memory is given back to the system.
#pragma once

#include <cstddef>
#include <cstdio>

#include "iov/page.hpp"

namespace iov_test {

// Bytes of the process resident in memory (/proc/self/statm); 0 if unknown.
inline size_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (f) {
    if (std::fscanf(f, "%lu %lu", &size, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return resident * iov::PAGE_SIZE;
}

}  // namespace iov_test
