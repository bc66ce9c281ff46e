// child_process.cc: see child_process.hpp.
#include "support/child_process.hpp"
#include "support/read_some.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace iov_test {

namespace {

using clock_type = std::chrono::steady_clock;

[[noreturn]] void exec_child(const child_options& o, int out_fd, int pty_slave) {
  int devnull = open("/dev/null", O_RDONLY);
  dup2(devnull, STDIN_FILENO);
  if (pty_slave >= 0) {
    setsid();
    ioctl(pty_slave, TIOCSCTTY, 0);
    dup2(pty_slave, STDOUT_FILENO);
    dup2(pty_slave, STDERR_FILENO);
  } else if (o.output == child_output::file) {
    int f = open(o.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(f, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
  } else {
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
  }
  if (o.in_child)
    o.in_child();
  std::vector<char*> argv;
  for (const std::string& a : o.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

}  // namespace

int exit_code(const child_result& r) {
  return r.status >= 0 && WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
}

bool peak_rss_below(const child_result& r, long kib) {
  struct rusage self;
  getrusage(RUSAGE_SELF, &self);
  return r.usage.ru_maxrss < self.ru_maxrss + kib;
}

child_process::child_process(const child_options& o) {
  int read_end = -1, write_end = -1, slave = -1;
  if (o.output == child_output::pty) {
    struct winsize ws{24, 200, 0, 0};
    if (openpty(&read_end, &slave, nullptr, nullptr, &ws) != 0)
      return;
  } else {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
      return;
    read_end = p[0];
    write_end = p[1];
  }
  fcntl(read_end, F_SETFD, FD_CLOEXEC);
  pid_ = fork();
  if (pid_ == 0)
    exec_child(o, write_end, slave);
  if (write_end >= 0)
    close(write_end);
  if (slave >= 0)
    close(slave);
  if (pid_ < 0) {
    close(read_end);
    return;
  }
  out_ = read_end;
}

child_process::~child_process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_ >= 0)
    close(out_);
}

void child_process::kill(int sig) {
  if (pid_ > 0)
    ::kill(pid_, sig);
}

bool child_process::wait_for_output(const std::function<bool(const std::string&)>& done, int timeout_ms) {
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  while (!done(output_))
    if (out_ < 0 || read_some(out_, &output_, deadline) <= 0)
      return done(output_);
  return true;
}

child_result child_process::finish(int timeout_ms) {
  child_result r;
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  ssize_t n = 1;
  while (out_ >= 0 && (n = read_some(out_, &output_, deadline)) > 0) {
  }
  r.output = output_;
  if (pid_ <= 0)
    return r;
  for (;;) {
    int status;
    pid_t got = wait4(pid_, &status, WNOHANG, &r.usage);
    if (got == pid_) {
      r.status = status;
      pid_ = -1;
      return r;
    }
    if (n < 0 || clock_type::now() >= deadline) {
      r.timed_out = true;
      ::kill(pid_, SIGKILL);
      wait4(pid_, &status, 0, &r.usage);
      pid_ = -1;
      return r;
    }
    usleep(2000);
  }
}

child_result run_child(const child_options& o, int timeout_ms) { return child_process(o).finish(timeout_ms); }

void become_unprivileged() {
  if (geteuid() != 0)
    return;
  setgroups(0, nullptr);
  setgid(65534);
  setuid(65534);
}

bool unprivileged_can_execute(const char* path) {
  if (geteuid() != 0)
    return access(path, X_OK) == 0;
  pid_t pid = fork();
  if (pid < 0)
    return false;
  if (pid == 0) {
    become_unprivileged();
    _exit(access(path, X_OK) == 0 ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void drop_capability(int cap) {
  prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);  // fails without CAP_SETPCAP: then there is nothing to drop
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  syscall(SYS_capget, &hdr, data);
  const unsigned bit = 1U << (cap % 32);
  data[cap / 32].effective &= ~bit;
  data[cap / 32].permitted &= ~bit;
  data[cap / 32].inheritable &= ~bit;
  syscall(SYS_capset, &hdr, data);
}

}  // namespace iov_test
