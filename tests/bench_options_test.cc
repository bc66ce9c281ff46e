// Tests of iov-bench's command line (bench/main.cc), the program run as a
// child process: every bad value is a usage error (exit 2) naming the option,
// --json and --chart are checked before anything runs (an unwritable place is
// refused, a missing directory is never created), and a JSON that could not
// be written whole fails the run. IOV_BENCH_PATH is set by bench/CMakeLists.txt
// when iov-bench is built.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "support/child_process.hpp"

namespace {

#ifdef IOV_BENCH_PATH
using ::testing::HasSubstr;

class BenchOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/iov-bench-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  static iov_test::child_result bench(std::vector<std::string> args, std::function<void()> in_child = nullptr) {
    args.emplace(args.begin(), std::string_view(IOV_BENCH_PATH));
    iov_test::child_options o(args);
    o.in_child = std::move(in_child);
    return iov_test::run_child(o);
  }

  std::string dir_;
};

// Each is refused before a benchmark runs (the filter would match nothing
// anyway): exit 2 and the option named.
TEST_F(BenchOptions, BadValuesAreUsageErrors) {
  std::string missing = dir_ + "/missing/out.json";
  for (auto [arg, text] : std::vector<std::pair<std::string, std::string>>{
           {"--json=/proc/version", "--json=/proc/version: cannot write in /proc"},
           {"--json=" + missing, "directory " + dir_ + "/missing does not exist (iov-bench does not create it)"},
           {"--json=" + dir_, "is a directory"},
           {"--json=/dev/null", "is not a regular file"},
           {"--json=", "--json= needs a path"},
           {"--chart=/proc/chart.svg", "--chart=/proc/chart.svg: cannot write in /proc"},
           {"--chart=" + dir_ + "/missing/c.svg", "does not exist"},
           {"--filter=(", "--filter=(: not a regular expression"},
           {"--filter=", "--filter= needs a regular expression"},
           {"--rounds=0", "--rounds=0: expected a number from 1 to 100"},
           {"--rounds=101", "--rounds=101"},
           {"--rounds=+5", "--rounds=+5"},
           {"--tile=3k", "--tile=3k: expected a power of two from 4k to 1m"},
           {"--tile=18014398509481988k", "--tile=18014398509481988k"},  // (2^54 + 4) << 10 wrapped to 4096
           {"--tile=-4k", "--tile=-4k"},
           {"--clock=sundial", "--clock=sundial: expected wall or cpu"},
           {"--benchmark_repetitions=x", "unrecognized command-line flag: --benchmark_repetitions=x"},
           {"--benchmark_bogus=1", "unrecognized command-line flag: --benchmark_bogus=1"},
           {"--bogus", "unknown option --bogus"},
       }) {
    auto r = bench({"--filter=^nothing_matches$", arg});
    EXPECT_EQ(iov_test::exit_code(r), 2) << arg << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(text)) << arg;
  }
  struct stat sb;
  EXPECT_NE(stat((dir_ + "/missing").c_str(), &sb), 0) << "iov-bench created the missing directory";
  auto r = bench({"--filter=^nothing_matches$", "--tile=1m", "--rounds=100", "--json=" + dir_ + "/ok.json"});
  EXPECT_EQ(iov_test::exit_code(r), 1) << "good values; no case matches: " << r.output;
  EXPECT_THAT(r.output, HasSubstr("no benchmark matches"));
}

// One case with its JSON: written whole, exit 0; and under a file size limit
// that cuts the JSON short (Google Benchmark does not check its writes),
// exit 1 naming the file.
TEST_F(BenchOptions, TheJsonIsWrittenWholeOrTheRunFails) {
  const std::string one = "--filter=^baseline_memset_ubuf$", json = dir_ + "/out.json";
  auto r = bench({one, "--no-chart", "--json=" + json});
  ASSERT_EQ(iov_test::exit_code(r), 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# json: " + json + "\n"));
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("\"name\": \"baseline_memset_ubuf"));
  EXPECT_EQ(text.str().rfind("}\n"), text.str().size() - 2);

  // A case that maps no benchmark buffer: their memfds count against the
  // limit too (and a tile small enough for it, mapped through 256 MiB, took
  // seconds a sample under a hypervisor with shadow paging). A long context
  // entry and the samples make the JSON longer than the limit.
  r = bench({"--filter=^iov_kunit_benchmark_alloc_pages_order0$", "--no-chart", "--json=" + json, "--json-samples",
             "--benchmark_context=padding=" + std::string(8000, 'x')}, [] {
    signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
    struct rlimit fsize{16384, 16384};
    setrlimit(RLIMIT_FSIZE, &fsize);
  });
  EXPECT_EQ(iov_test::exit_code(r), 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("iov-bench: --json=" + json + ": the JSON was not written whole"));
  EXPECT_THAT(r.output, HasSubstr("# json: " + json + " (NOT WRITTEN: see stderr)"));
}
#endif

}  // namespace
