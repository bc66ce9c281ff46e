// installed_headers_test.cc: every installed header compiles alone, as a
// strict consumer includes it: -std=c++20 -Wall -Wextra -Wpedantic -Wshadow
// -Wconversion -Werror, with the installed tree on -I (not -isystem), so that
// a warning in our headers is an error. The tree is `cmake --install` of this
// build's `lib` component into build/installed-headers-test/ (under a lock, as
// ctest runs the cases in parallel); one case per header of the source tree,
// which must therefore be installed too. Each header is compiled by the
// build's compiler and by clang-14 (a project dependency; its warnings
// differ: -Wconversion there includes -Wsign-conversion), the second only in
// unsanitized builds, as a compile-only case gains nothing from a sanitizer.
//
//   ctest -R InstalledHeaders
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

// (compiler, header): the build's compiler is "", clang-14 "clang++-14".
using header_case = std::pair<std::string, std::string>;

class InstalledHeaders : public InstalledTree, public ::testing::WithParamInterface<header_case> {};

TEST_P(InstalledHeaders, CompilesAloneWithStrictWarnings) {
  const auto& [compiler, header] = GetParam();
  if (!compiler.empty()) {
    if (iov_test::kSanitized)
      GTEST_SKIP() << "compile-only: the unsanitized build runs it";
    if (std::system(("command -v " + compiler + " >/dev/null 2>&1").c_str()) != 0)
      GTEST_SKIP() << compiler << " is not installed (scripts/install-deps installs it)";
  }
  ASSERT_EQ(install_status, 0) << "cmake --install " << IOV_TEST_BINARY_DIR << " failed";
  const fs::path include = prefix / "include";
  ASSERT_TRUE(fs::exists(include / header)) << header << " is not installed";
  const std::string flags = "-std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror -I" +
                            include.string() + " " IOV_TEST_EXTRA_INCLUDES;
  iov::test::compile_result r = iov::test::run_compiler(compiler.empty() ? IOV_TEST_CXX : compiler.c_str(), flags,
                                                        "#include <" + header + ">\nint main() { return 0; }\n");
  EXPECT_EQ(r.status, 0) << r.output;
}

// The checked build's checks_mode.hpp, first on iov-checked's include path.
TEST_F(InstalledTree, TheCheckedModeHeaderSaysOne) {
  ASSERT_EQ(install_status, 0) << "cmake --install " << IOV_TEST_BINARY_DIR << " failed";
  const fs::path include = prefix / "include";
  const std::string flags = "-std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror -I" +
                            (include / "iov-checked").string() + " -I" + include.string();
  iov::test::compile_result r = iov::test::run_compiler(
      IOV_TEST_CXX, flags, "#include <iov/config.hpp>\nstatic_assert(IOV_CHECKS == 1);\nint main() {}\n");
  EXPECT_EQ(r.status, 0) << r.output;
}

std::vector<header_case> every_header_and_compiler() {
  std::vector<header_case> out;
  for (const char* compiler : {"", "clang++-14"})
    for (const std::string& h : source_headers())
      out.emplace_back(compiler, h);
  return out;
}

std::string case_name(const ::testing::TestParamInfo<header_case>& info) {
  std::string name = (info.param.first.empty() ? "" : "clang14_") + info.param.second;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryHeader, InstalledHeaders, ::testing::ValuesIn(every_header_and_compiler()), case_name);

}  // namespace
