// cxx_compile_fail_test.cc: what the C++ layer refuses at compile time, and
// what it accepts. Runs the compiler this tree was configured with on small
// programs against include/ and expects each verdict (and, for a refusal,
// the message that names the reason).
//
//   ctest -R CxxCompileFail
#include <string>

#include <gtest/gtest.h>

#include "support/compiler_run.hpp"

namespace {

using iov::test::compile_result;

compile_result compile(const std::string& body) {
  return iov::test::compile_tree(
      "-std=c++20 -fsyntax-only",
      "#include <cstdint>\n#include <string>\n#include <vector>\n#include <iov/iov.hpp>\n" + body);
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

// iov::headers (pkg-config iov-headers) defines IOV_HEADER_ONLY: a header of
// the compiled part is then refused at compile time, with one message that
// says to link iov::iov, rather than failing at link on an internal name.
TEST(CxxCompileFail, TheUmbrellaHeaderOverTheHeaderOnlyTargetNamesIovIov) {
  for (const char* header : {"iov/iov.hpp", "iov/crc32c.hpp", "iov/zero_scan.hpp", "iov/cxx/iter.hpp"}) {
    SCOPED_TRACE(header);
    compile_result r =
        iov::test::compile_tree("-std=c++20 -fsyntax-only -DIOV_HEADER_ONLY=1", iov::test::include_program(header));
    EXPECT_NE(r.status, 0) << "compiled";
    EXPECT_NE(r.output.find("link iov::iov"), std::string::npos) << r.output;
    size_t errors = 0;
    for (size_t at = r.output.find("error:"); at != std::string::npos; at = r.output.find("error:", at + 1))
      errors++;
    EXPECT_LE(errors, 2u) << "the #error and the stop, no cascade:\n" << r.output;
  }
  // The control: the header-only part compiles so.
  compile_result r = iov::test::compile_tree(
      "-std=c++20 -fsyntax-only -DIOV_HEADER_ONLY=1",
      "#include <iov/copy.hpp>\n#include <iov/extract.hpp>\n#include <iov/highmem.hpp>\n"
      "#include <iov/position.hpp>\nint main() {}\n");
  EXPECT_EQ(r.status, 0) << r.output;
}

}  // namespace
