// compiler_run.hpp: the compiler this tree was configured with, run on a small
// program, for the tests of what compiles and what is refused
// (cxx_compile_fail_test, cxx17_consumer_test, installed_headers_test).
//
//   compile_result r = compile_tree("-std=c++20 -fsyntax-only", "#include <iov/iov.hpp>\n");
//   EXPECT_EQ(r.status, 0) << r.output;
//
// The test's CMake block (tests/CMakeLists.txt) defines IOV_TEST_CXX (the
// compiler), IOV_TEST_INCLUDE and IOV_TEST_GENERATED_INCLUDE (this tree's
// include directories) and IOV_TEST_EXTRA_INCLUDES (-isystem for Abseil and
// range-v3).
#pragma once

#include <string>

namespace iov::test {

struct compile_result {
  int status = -1;     // the compiler's exit status; 0: it compiled
  std::string output;  // its diagnostics
};

// Runs `cxx flags <file>` on a temporary file that holds program.
compile_result run_compiler(const std::string& cxx, const std::string& flags, const std::string& program);

// A program that includes <header> and does nothing. Built by append, as the
// strings below: GCC 12 takes chains of std::string operator+ for overflows
// (a false -Warray-bounds in libstdc++'s char_traits).
inline std::string include_program(const std::string& header) {
  std::string program = "#include <";
  program += header;
  program += ">\nint main() { return 0; }\n";
  return program;
}

#ifdef IOV_TEST_CXX
// This tree's include path, as -I (ours) and -isystem (the dependencies').
inline std::string tree_include_flags() {
  std::string flags = " -I";
  flags += IOV_TEST_INCLUDE;
  flags += " -I";
  flags += IOV_TEST_GENERATED_INCLUDE;
  flags += " ";
  flags += IOV_TEST_EXTRA_INCLUDES;
  return flags;
}

// The configured compiler on program, with flags and this tree's include path.
inline compile_result compile_tree(const std::string& flags, const std::string& program) {
  std::string all = flags;
  all += tree_include_flags();
  return run_compiler(IOV_TEST_CXX, all, program);
}
#endif

}  // namespace iov::test
