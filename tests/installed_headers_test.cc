// installed_headers_test.cc: every installed header compiles alone, as a
// strict consumer includes it: -std=c++20 -Wall -Wextra -Wpedantic -Wshadow
// -Wconversion -Werror, with the installed tree on -I (not -isystem), so that
// a warning in our headers is an error. The tree is `cmake --install` of this
// build's `lib` component into build/installed-headers-test/ (under a lock, as
// ctest runs the cases in parallel); one case per header of the source tree,
// which must therefore be installed too.
//
//   ctest -R InstalledHeaders
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

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

class InstalledHeaders : public InstalledTree, public ::testing::WithParamInterface<std::string> {};

TEST_P(InstalledHeaders, CompilesAloneWithStrictWarnings) {
  ASSERT_EQ(install_status, 0) << "cmake --install " << IOV_TEST_BINARY_DIR << " failed";
  const fs::path include = prefix / "include";
  ASSERT_TRUE(fs::exists(include / GetParam())) << GetParam() << " is not installed";
  const std::string flags = "-std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror -I" +
                            include.string() + " " IOV_TEST_EXTRA_INCLUDES;
  iov::test::compile_result r =
      iov::test::run_compiler(IOV_TEST_CXX, flags, "#include <" + GetParam() + ">\nint main() { return 0; }\n");
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

std::string case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryHeader, InstalledHeaders, ::testing::ValuesIn(source_headers()), case_name);

}  // namespace
