// cxx17_consumer_test.cc: a program built as C++17 that includes any public
// iov header gets one message, that iov needs C++20 (config.hpp), and no
// cascade of errors from the rest of the header. Runs the compiler this tree
// was configured with on a one-line program per header.
//
//   ctest -R cxx17_consumer_test
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

struct compile_result {
  int status;
  std::string output;
};

// The compiler, in `standard`, on a program that includes <header> and does nothing.
std::string compile_command(const char* standard, const std::string& header) {
  std::string cmd = "printf '#include <";
  cmd += header;
  cmd += ">\\nint main() { return 0; }\\n' | ";
  for (const char* part : {IOV_TEST_CXX, " -std=", standard, " -fsyntax-only -I", IOV_TEST_INCLUDE, " -I",
                           IOV_TEST_GENERATED_INCLUDE, " ", IOV_TEST_EXTRA_INCLUDES, " -x c++ - 2>&1"})
    cmd += part;
  return cmd;
}

compile_result compile_cxx17(const std::string& header) {
  const std::string cmd = compile_command("c++17", header);
  compile_result r{-1, ""};
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p)
    return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  r.status = ::pclose(p);
  return r;
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
    compile_result r = compile_cxx17(h);
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
  const std::string cmd = compile_command("c++20", "iov/iov_iter.hpp");
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "the check itself must not refuse C++20";
}

}  // namespace
