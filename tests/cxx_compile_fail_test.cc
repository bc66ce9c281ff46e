// cxx_compile_fail_test.cc: what the C++ layer refuses at compile time, and
// what it accepts. Runs the compiler this tree was configured with on small
// programs against include/ and expects each verdict (and, for a refusal,
// the message that names the reason).
//
//   ctest -R CxxCompileFail
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace {

struct compile_result {
  int status;
  std::string output;
};

compile_result compile(const std::string& body) {
  std::string program = "#include <cstdint>\n#include <string>\n#include <vector>\n#include <iov/iov.hpp>\n" + body;
  std::string cmd = "printf '%s' '" + program + "' | ";
  for (const char* part : {IOV_TEST_CXX, " -std=c++20 -fsyntax-only -I", IOV_TEST_INCLUDE, " -I",
                           IOV_TEST_GENERATED_INCLUDE, " ", IOV_TEST_EXTRA_INCLUDES, " -x c++ - 2>&1"})
    cmd += part;
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

void expect_compiles(const std::string& body) {
  compile_result r = compile(body);
  EXPECT_EQ(r.status, 0) << body << "\n" << r.output;
}

void expect_refused(const std::string& body, const std::string& message) {
  compile_result r = compile(body);
  EXPECT_NE(r.status, 0) << body << " compiled";
  EXPECT_NE(r.output.find(message), std::string::npos) << body << "\nwants \"" << message << "\" in\n" << r.output;
}

// The control: the same programs with the right arguments compile, so a
// refusal below is the argument's and not a broken program's.
TEST(CxxCompileFail, RightDirectionAndByteRangesCompile) {
  expect_compiles(
      "int main() { std::vector<std::byte> b(8); iov::iter it = iov::iter::ubuf(iov::iter_dir::dest, b);"
      " return (int)it.count(); }\n");
  // A std::vector<uint8_t>, a std::string and a char array are bytes.
  expect_compiles(
      "int main() { std::vector<uint8_t> v(8); std::string s(\"abc\"); char a[4] = {};"
      " iov::iter it = iov::iter::ubuf(iov::iter_dir::source, v);"
      " size_t n = it.copy_from(v) + it.copy_from(a); uint32_t crc = 0;"
      " iov::iter d = iov::iter::ubuf(iov::iter_dir::dest, a);"
      " n += d.copy_to(s) + d.crc32c_and_copy_to(v, crc); return (int)n; }\n");
}

TEST(CxxCompileFail, ANumberIsNotADirection) {
  expect_refused("int main() { std::vector<std::byte> b(8); auto it = iov::iter::ubuf(7, b); (void)it; }\n",
                 "iter_dir");
  expect_refused(
      "int main() { std::vector<std::byte> b(8); auto it = iov::iter::ubuf(iov::ITER_DEST, b); (void)it; }\n",
      "iter_dir");
}

TEST(CxxCompileFail, ReadOnlyOrNonByteRangesAreRefused) {
  // A const range cannot be copied into; a range of ints is not bytes.
  expect_refused(
      "int main() { const std::vector<uint8_t> v(8); iov::iter it; return (int)it.copy_from(v); }\n", "byte_sink");
  expect_refused("int main() { std::vector<int> v(8); iov::iter it; return (int)it.copy_to(v); }\n",
                 "byte_source");
  expect_refused("int main() { std::vector<bool> v(8); iov::iter it; return (int)it.copy_to(v); }\n",
                 "byte_source");
}

TEST(CxxCompileFail, PageOwnersAreNotCopied) {
  expect_refused(
      "int main() { iov::unique_pages a = iov::unique_pages::alloc(iov::GFP_KERNEL); iov::unique_pages b = a; }\n",
      "deleted");
}

}  // namespace
