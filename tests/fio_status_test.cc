// Tests of iov-fio's live status line (src/tools/fio/status.hpp): fio's
// num2str and line format against values worked out by hand from fio's
// rules, and the program on a pseudo-terminal (the line, rewritten in place
// every second while it runs) and on a pipe (nothing extra).
#include "fio/status.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <regex.h>

#include <string>
#include <string_view>
#include <vector>

#include "support/child_process.hpp"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using iov::fio::num2str;

TEST(FioStatus, Num2strFollowsFio) {
  // At most 4 digits, the point counted; IEC prefixes for rates, SI for IOPS.
  EXPECT_EQ(num2str(1263616, 4, 1024, true, "B/s"), "1234MiB/s");  // KiB/s in, as fio's rate
  EXPECT_EQ(num2str(316123, 4, 1, false, ""), "316k");
  EXPECT_EQ(num2str(12345, 4, 1, false, ""), "12.3k");
  EXPECT_EQ(num2str(9999, 4, 1, false, ""), "9999");
  EXPECT_EQ(num2str(0, 4, 1024, true, "B/s"), "0KiB/s");
  EXPECT_EQ(num2str(1536, 4, 1024, true, "B/s"), "1536KiB/s");
  EXPECT_EQ(num2str(15360, 4, 1024, true, "B/s"), "15.0MiB/s");
  EXPECT_EQ(num2str(999999, 4, 1, false, ""), "1000k");  // 999.999k rounds up, as fio's carry
  EXPECT_EQ(num2str(1999, 2, 1, false, ""), "2k");
}

TEST(FioStatus, LineFormatIsFios) {
  iov::fio::status_snapshot s;
  s.running = 1;
  s.run_str = "r";
  s.elapsed_s = 45;
  s.eta_s = 55;
  s.rate[0] = 1234ull << 20;
  s.iops[0] = 316000;
  EXPECT_EQ(iov::fio::format_status(s), "Jobs: 1 (f=1): [r(1)][45.0%][r=1234MiB/s][r=316k IOPS][eta 00m:55s]");
  // Mixed directions, several jobs in runs, hours.
  s.running = 2;
  s.run_str = "mm_";
  s.elapsed_s = 1;
  s.eta_s = 3723;
  s.rate[1] = 53ull << 20;
  s.iops[1] = 13600;
  EXPECT_EQ(iov::fio::format_status(s),
            "Jobs: 2 (f=2): [m(2),_(1)][0.0%][r=1234MiB/s,w=53.0MiB/s][r=316k,w=13.6k IOPS][eta 01h:02m:03s]");
  // No I/O in the last second: no rate brackets; no estimate yet: jobs only.
  s.rate[0] = s.rate[1] = s.iops[0] = s.iops[1] = 0;
  s.run_str = "VV";
  s.elapsed_s = 10;
  s.eta_s = 0;
  EXPECT_EQ(iov::fio::format_status(s), "Jobs: 2 (f=2): [V(2)][100.0%][eta 00m:00s]");
  s.eta_s = -1;
  EXPECT_EQ(iov::fio::format_status(s), "Jobs: 2 (f=2)");
}

#ifdef IOV_FIO_PATH
iov_test::child_result run_fio(std::vector<std::string> args, iov_test::child_output output) {
  args.emplace(args.begin(), std::string_view(IOV_FIO_PATH));
  iov_test::child_options o(args);
  o.output = output;
  return iov_test::run_child(o);
}

// On a terminal: the line every second, each ending in a carriage return
// (rewritten in place), the progress rising and the time left falling, then
// the report on a line of its own.
TEST(FioStatus, ProgramShowsTheLineOnATerminal) {
  auto r = run_fio({"--rw=randread", "--size=16m", "--runtime=3.5", "--numjobs=2"}, iov_test::child_output::pty);
  ASSERT_EQ(iov_test::exit_code(r), 0) << r.output;
  regex_t line;  // POSIX: <regex> draws false uninitialized warnings from GCC 12 under ASan
  ASSERT_EQ(regcomp(&line,
                    R"(^Jobs: 2 \(f=2\): \[r\(2\)\]\[([0-9]+\.[0-9])%\]\[r=[0-9.]+[KMG]iB/s\]\[r=[0-9.]+[kM]? IOPS\])"
                    R"(\[eta 00m:([0-9][0-9])s\] *$)",
                    REG_EXTENDED),
            0);
  std::vector<double> percent;
  std::vector<int> eta;
  size_t end = r.output.find("iov-fio: (g=0)");
  ASSERT_NE(end, std::string::npos) << r.output;
  std::string status = r.output.substr(0, end);
  for (size_t pos = 0, cr; (cr = status.find('\r', pos)) != std::string::npos; pos = cr + 1) {
    std::string piece = status.substr(pos, cr - pos);
    if (piece.empty() || piece == "\n")
      continue;
    regmatch_t m[3];
    ASSERT_EQ(regexec(&line, piece.c_str(), 3, m, 0), 0) << "not fio's status line: '" << piece << "'";
    percent.push_back(std::stod(piece.substr(m[1].rm_so, m[1].rm_eo - m[1].rm_so)));
    eta.push_back(std::stoi(piece.substr(m[2].rm_so, m[2].rm_eo - m[2].rm_so)));
  }
  regfree(&line);
  ASSERT_GE(percent.size(), 2u) << r.output;
  for (size_t k = 1; k < percent.size(); k++) {
    EXPECT_GE(percent[k], percent[k - 1]);
    EXPECT_LE(eta[k], eta[k - 1]);
  }
  EXPECT_LE(eta.front(), 4);
  EXPECT_THAT(status, testing::EndsWith("\r\r\n")) << "the last line kept, the report on the next";
}

// Redirected (a pipe), or JSON on a terminal: nothing but the report.
TEST(FioStatus, ProgramPrintsNothingExtraWhenRedirected) {
  auto r = run_fio({"--rw=randread", "--size=16m", "--runtime=2"}, iov_test::child_output::pipe);
  ASSERT_EQ(iov_test::exit_code(r), 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("Jobs:")));
  EXPECT_EQ(r.output.find('\r'), std::string::npos);
  EXPECT_EQ(r.output.rfind("iov-fio: (g=0)", 0), 0u) << r.output;
  r = run_fio({"--rw=randread", "--size=16m", "--runtime=2", "--output-format=json"}, iov_test::child_output::pty);
  ASSERT_EQ(iov_test::exit_code(r), 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("Jobs:")));
  EXPECT_EQ(r.output.rfind("{", 0), 0u) << r.output;
}
#endif

}  // namespace
