// compiler_run.cc: see compiler_run.hpp.
#include "support/compiler_run.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace iov::test {

compile_result run_compiler(const std::string& cxx, const std::string& flags, const std::string& program) {
  compile_result r;
  // A file rather than the compiler's standard input: the program may hold
  // any character, and no shell quoting has to survive it.
  char path[] = "/tmp/iov-compile-XXXXXX.cc";
  int fd = ::mkstemps(path, 3);
  if (fd < 0) {
    r.output = "mkstemps failed";
    return r;
  }
  bool written = ::write(fd, program.data(), program.size()) == static_cast<ssize_t>(program.size());
  ::close(fd);
  if (written) {
    const std::string cmd = cxx + " " + flags + " " + path + " 2>&1";
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
      r.status = ::pclose(p);
    }
  } else {
    r.output = "could not write " + std::string(path);
  }
  ::unlink(path);
  return r;
}

}  // namespace iov::test
