// nbd_process.hpp: processes for the tests of the iov-nbd program and of real
// NBD clients (fio, qemu-img, nbdinfo, nbdcopy). The program runs with its
// output collected, so that a failure can show what it printed; every wait
// has a deadline, so that a program that hangs fails a test instead of
// stalling it.
//
//   iov_test::nbd::temp_dir dir;
//   iov_test::nbd::server_process srv(IOV_NBD_PATH, {"--driver=brd", "-U", dir.path("s")});
//   ASSERT_TRUE(srv.wait_listening()) << srv.output();
//   auto r = iov_test::nbd::run({"nbdinfo", "--map", iov_test::nbd::unix_uri(dir.path("s"))});
//   EXPECT_EQ(r.status, 0) << r.output;
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace iov_test::nbd {

// A directory under $TMPDIR (or /tmp), removed with what it holds.
class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// A resource limit (setrlimit) the program starts under: {RLIMIT_NOFILE, 64}.
struct resource_limit {
  int resource;
  rlim_t value;
};

// What /proc says of a running process.
struct process_figures {
  uint64_t vsz_kib = 0;    // VmSize: the address space in use
  uint64_t rss_kib = 0;    // VmRSS: resident now
  uint64_t hwm_kib = 0;    // VmHWM: the most resident so far
  unsigned threads = 0;
  double cpu_seconds = 0;  // user + system, all threads
  std::vector<int> open_fds;  // the descriptors' numbers
};
process_figures figures_of(pid_t pid);

// The iov-nbd program, run with `args` (and `limits`, set in the child
// before it starts); its stdout and stderr are collected.
class server_process {
 public:
  server_process(const std::string& program, const std::vector<std::string>& args,
                 const std::vector<resource_limit>& limits = {});
  ~server_process();  // SIGKILLs it if still running
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;
  bool started() const { return pid_ > 0; }
  process_figures figures() const { return figures_of(pid_); }
  // Waits for "listening on ADDRESS"; false if it exits or times out first.
  bool wait_listening(int timeout_ms = 60000);
  const std::string& address() const { return address_; }
  // Sends sig and waits for the exit; the wait status, or -1 on a timeout
  // (the process is then killed).
  int signal_and_wait(int sig, int timeout_ms = 30000);
  std::string output();  // what it printed so far
  pid_t pid() const { return pid_; }

 private:
  void drain(int timeout_ms);
  pid_t pid_ = -1;
  int out_ = -1;
  std::string output_, address_;
};

// Runs a program to completion (bounded: killed after timeout_ms).
struct run_result {
  int status = -1;  // exit status; -1 on a signal, a timeout or a failed start
  bool timed_out = false;
  std::string output;  // stdout and stderr
};
run_result run(const std::vector<std::string>& argv, int timeout_ms = 300000);
// The program's path on $PATH, or "" when it is not installed.
std::string which(const std::string& program);
// A 127.0.0.1 TCP port nothing listens on now (the kernel's choice for a
// probe socket), or 0 when none could be had.
uint16_t free_tcp_port();
// nbd+unix:///?socket=PATH
inline std::string unix_uri(const std::string& socket) { return "nbd+unix:///?socket=" + socket; }

}  // namespace iov_test::nbd
