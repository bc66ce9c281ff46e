// installed_headers_test.cc: every installed header compiles alone, as a
// strict consumer includes it: -std=c++20 -Wall -Wextra -Wpedantic -Wshadow
// -Wconversion -Werror, with the installed tree on -I (not -isystem), so that
// a warning in our headers is an error. The tree is `cmake --install` of this
// build's `lib` component into build/installed-headers-test/ (under a lock, as
// ctest runs the cases in parallel); one case per header of the source tree,
// which must therefore be installed too. The build's compiler compiles each
// header alone: that it includes what it uses, and its warnings. clang-14 (a
// project dependency; its warnings differ: -Wconversion there includes
// -Wsign-conversion) compiles them all in one program, for its warnings: a
// header's includes are the same under both compilers (one libstdc++), and
// one compile of them all costs a tenth of one compile each (README.md, CI
// time). That case runs only in unsanitized builds, as a compile-only case
// gains nothing from a sanitizer.
//
//   ctest -R InstalledHeaders
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "support/child_process.hpp"
#include "support/compiler_run.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path prefix = fs::path(IOV_TEST_BINARY_DIR) / "installed-headers-test";

// The public headers as the source tree has them, relative to their include
// directory: include/iov/, and src/drivers/iov_drivers/ but for its internal/.
std::vector<std::string> source_headers() {
  std::vector<std::string> out;
  for (auto [root, dir] : {std::pair{IOV_TEST_INCLUDE, "iov"}, std::pair{IOV_TEST_DRIVERS_INCLUDE, "iov_drivers"}}) {
    const fs::path top = fs::path(root) / dir;
    if (!*root || !fs::is_directory(top))
      continue;
    for (const auto& e : fs::recursive_directory_iterator(top)) {
      const std::string rel = fs::relative(e.path(), root).string();
      if (e.path().extension() == ".hpp" && (std::string(dir) == "iov" || rel.find("/internal/") == std::string::npos))
        out.push_back(rel);
    }
  }
  return out;
}

// Installs once per test program, before its first case.
class InstalledTree : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string cmd = "flock " + prefix.string() + ".lock cmake --install " IOV_TEST_BINARY_DIR
                            " --component lib --prefix " + prefix.string() + " >/dev/null 2>&1";
    install_status = std::system(cmd.c_str());
  }
  static inline int install_status = -1;
};

// A strict consumer's compile (C++20, syntax only, every warning an error)
// with these include options.
std::string strict_flags(const std::string& includes) {
  std::string flags = "-std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror ";
  flags += includes;
  return flags;
}

// The strict consumer's flags over the installed tree.
std::string strict_flags() { return strict_flags("-I" + (prefix / "include").string() + " " IOV_TEST_EXTRA_INCLUDES); }

class InstalledHeaders : public InstalledTree, public ::testing::WithParamInterface<std::string> {};

TEST_P(InstalledHeaders, CompilesAloneWithStrictWarnings) {
  const std::string& header = GetParam();
  ASSERT_EQ(install_status, 0) << "cmake --install " << IOV_TEST_BINARY_DIR << " failed";
  ASSERT_TRUE(fs::exists(prefix / "include" / header)) << header << " is not installed";
  iov::test::compile_result r =
      iov::test::run_compiler(IOV_TEST_CXX, strict_flags(), iov::test::include_program(header));
  EXPECT_EQ(r.status, 0) << r.output;
}

// Every header in one program, under clang-14's warnings; the kernel's macro
// names (iov/linux/) last, as a kernel-style source includes them after ours.
class InstalledHeadersTogether : public InstalledTree {};

TEST_F(InstalledHeadersTogether, WithClang14StrictWarnings) {
  const std::string compiler = "clang++-14";
  if (iov_test::kSanitized)
    GTEST_SKIP() << "compile-only: the unsanitized build runs it";
  if (std::system(("command -v " + compiler + " >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << compiler << " is not installed (scripts/install-deps installs it)";
  ASSERT_EQ(install_status, 0) << "cmake --install " << IOV_TEST_BINARY_DIR << " failed";
  std::vector<std::string> headers = source_headers();
  ASSERT_GT(headers.size(), 20u);
  std::stable_partition(headers.begin(), headers.end(),
                        [](const std::string& h) { return h.rfind("iov/linux/", 0) != 0; });
  std::string program;
  for (const std::string& h : headers) {
    ASSERT_TRUE(fs::exists(prefix / "include" / h)) << h << " is not installed";
    program += "#include <" + h + ">\n";
  }
  program += "int main() { return 0; }\n";
  iov::test::compile_result r = iov::test::run_compiler(compiler, strict_flags(), program);
  EXPECT_EQ(r.status, 0) << r.output;
}

// The checked build's checks_mode.hpp, first on iov-checked's include path.
TEST_F(InstalledTree, TheCheckedModeHeaderSaysOne) {
  ASSERT_EQ(install_status, 0) << "cmake --install " << IOV_TEST_BINARY_DIR << " failed";
  const fs::path include = prefix / "include";
  const std::string flags = strict_flags("-I" + (include / "iov-checked").string() + " -I" + include.string());
  iov::test::compile_result r = iov::test::run_compiler(
      IOV_TEST_CXX, flags, "#include <iov/config.hpp>\nstatic_assert(IOV_CHECKS == 1);\nint main() {}\n");
  EXPECT_EQ(r.status, 0) << r.output;
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryHeader, InstalledHeaders, ::testing::ValuesIn(source_headers()), case_name);

}  // namespace
