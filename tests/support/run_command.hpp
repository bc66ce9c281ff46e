// run_command.hpp: runs a shell command line to completion and collects what
// it writes on stdout, for the tests of the installed programs (iov-fio,
// iov-scan), which check their output and exit status. Add "2>&1" to the
// command to collect stderr too, or "2>/dev/null" to silence it.
//
//   int status;
//   std::string out = iov_test::run_command(std::string(IOV_SCAN_PATH) + " " + file, &status);
//   EXPECT_EQ(status, 0) << out;   // a wait status: WEXITSTATUS(status) for the exit code
#pragma once

#include <string>

namespace iov_test {

// The command's stdout; *status is its wait status (pclose), -1 when the
// shell could not be started.
std::string run_command(const std::string& command, int* status);

}  // namespace iov_test
