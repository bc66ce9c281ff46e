// version.hpp: the version and commit the programs print with --version, as
// nbdkit prints its own (cmake/IovVersion.cmake fills them in at configure
// time).
//
//   if (arg == "--version") return iov::tools::print_version("iov-nbd"), 0;
//   // iov-nbd 0.1.0 (f6b5195)
#pragma once

#include <cstdio>

namespace iov::tools {

const char* version();  // the project's VERSION, "0.1.0"
const char* commit();   // `git describe --always --dirty --tags` of the tree built, or "unknown"

// Prints "PROGRAM VERSION (COMMIT)" and a newline on stdout.
inline void print_version(const char* program) {
  std::printf("%s %s (%s)\n", program, version(), commit());
  std::fflush(stdout);
}

}  // namespace iov::tools
