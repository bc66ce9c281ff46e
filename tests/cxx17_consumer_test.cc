// cxx17_consumer_test.cc: a program built as C++17 that includes any public
// iov header gets one message, that iov needs C++20 (config.hpp), and no
// cascade of errors from the rest of the header. Runs the compiler this tree
// was configured with on a one-line program per header.
//
//   ctest -R Cxx17Consumer
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/compiler_run.hpp"

namespace {

namespace fs = std::filesystem;
using iov::test::compile_result;

// The compiler, in `standard`, on a program that includes <header> and does nothing.
compile_result compile(const char* standard, const std::string& header) {
  std::string flags = "-std=";
  flags += standard;
  flags += " -fsyntax-only";
  return iov::test::compile_tree(flags, iov::test::include_program(header));
}

std::vector<std::string> public_headers() {
  std::vector<std::string> out;
  for (const char* dir : {"iov", "iov/cxx"})
    for (const auto& e : fs::directory_iterator(fs::path(IOV_TEST_INCLUDE) / dir))
      if (e.path().extension() == ".hpp")
        out.push_back(std::string(dir) + "/" + e.path().filename().string());
  return out;
}

TEST(Cxx17Consumer, EveryPublicHeaderSaysIovNeedsCxx20AndNothingElse) {
  auto headers = public_headers();
  ASSERT_GT(headers.size(), 10u);
  for (const auto& h : headers) {
    SCOPED_TRACE(h);
    compile_result r = compile("c++17", h);
    EXPECT_NE(r.status, 0) << "a C++17 build must fail";
    EXPECT_NE(r.output.find("iov needs C++20"), std::string::npos) << r.output;
    std::istringstream lines(r.output);
    int errors = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.find(": error:") == std::string::npos && line.find(": fatal error:") == std::string::npos)
        continue;
      errors++;
      EXPECT_NE(line.find("C++20"), std::string::npos) << "an error line about something else: " << line;
    }
    EXPECT_LE(errors, 2) << "the #error, and the stop that ends the compilation:\n" << r.output;
  }
}

TEST(Cxx17Consumer, Cxx20CompilesTheSameProgram) {
  compile_result r = compile("c++20", "iov/iov_iter.hpp");
  EXPECT_EQ(r.status, 0) << "the check itself must not refuse C++20:\n" << r.output;
}

}  // namespace
