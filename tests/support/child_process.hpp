// child_process.hpp: runs a program as a child process for the tests of the
// tools (iov-scan, iov-fio): no shell, its output collected from a pipe or a
// pseudo-terminal (to see what it prints on a terminal), limits applied in
// the child before exec (setrlimit), every wait bounded by a deadline, and
// its resource usage (wait4) at the end.
//
//   iov_test::child_options o({IOV_SCAN_PATH, "--block=1g", file});
//   o.in_child = [] { struct rlimit r{1 << 30, 1 << 30}; setrlimit(RLIMIT_AS, &r); };
//   iov_test::child_result r = iov_test::run_child(o);
//   EXPECT_EQ(iov_test::exit_code(r), 0) << r.output;
//   EXPECT_LT(r.usage.ru_maxrss, 100 * 1024);   // KiB
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "support/sanitizer.hpp"

namespace iov_test {

enum class child_output {
  pipe,  // stdout and stderr into one pipe
  pty,   // stdout and stderr on a pseudo-terminal (isatty() is true), its controlling terminal
  file,  // stdout into child_options::stdout_file; stderr into the pipe
};

struct child_options {
  explicit child_options(std::vector<std::string> args) : argv(std::move(args)) {}
  std::vector<std::string> argv;  // argv[0] is the program's path
  child_output output = child_output::pipe;
  std::string stdout_file;             // for child_output::file
  std::function<void()> in_child;      // after fork, before exec: setrlimit and the like
};

struct child_result {
  int status = -1;         // the wait status; -1 if the deadline passed (the child is then killed)
  bool timed_out = false;
  std::string output;      // what it printed (see child_output)
  struct rusage usage {};  // the child's (wait4): ru_maxrss in KiB
};

// exit status of a child that exited, else -1 (a signal, a timeout)
int exit_code(const child_result& r);

// Did the child's program use less than `kib` KiB of memory at its peak? Its
// ru_maxrss also counts the pages of this process it was forked with (Linux
// keeps the peak across exec), so the bound is this process's peak plus kib.
bool peak_rss_below(const child_result& r, long kib);

class child_process {
 public:
  explicit child_process(const child_options& o);
  ~child_process();  // SIGKILLs the child if it still runs
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Collects output until done(output) holds (true), the output ends or the
  // deadline passes (false).
  bool wait_for_output(const std::function<bool(const std::string&)>& done, int timeout_ms);
  // Collects the rest of the output and waits for the exit, killing the
  // child at the deadline.
  child_result finish(int timeout_ms);
  void kill(int sig);
  const std::string& output() const { return output_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string output_;
};

// child_process(o).finish(timeout_ms)
child_result run_child(const child_options& o, int timeout_ms = 120000);

// For in_child: removes capability `cap` (CAP_IPC_LOCK, CAP_SYS_RESOURCE, ...)
// from this process for good, bounding set included, so that root's exec
// does not grant it again and the limits it bypasses apply.
void drop_capability(int cap);

// For in_child: as root, becomes the unprivileged user nobody (65534), to
// whom the per-user limits apply (root's processes are exempt from
// RLIMIT_NPROC whatever their capabilities); otherwise does nothing.
void become_unprivileged();

// Whether the user become_unprivileged() makes can execute `path` (a tree
// checked out under a directory only its owner may search, as mktemp -d
// makes, cannot be reached): a test that drops privileges skips without it.
bool unprivileged_can_execute(const char* path);

// Whether this test program was built with a sanitizer (whose programs
// reserve terabytes of address space: no RLIMIT_AS test can run under one).
#if defined(IOV_TEST_ASAN) || defined(IOV_TEST_TSAN)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

}  // namespace iov_test
