// nbd_process.cc: the tests' process helpers (see nbd_process.hpp).
//
//   auto r = iov_test::nbd::run({"qemu-img", "compare", a, b});
#include "support/nbd_process.hpp"
#include "support/read_some.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

extern char** environ;

namespace iov_test::nbd {

namespace {

using clock_type = std::chrono::steady_clock;

clock_type::time_point after_ms(int ms) { return clock_type::now() + std::chrono::milliseconds(ms); }

// fork() and exec() under resource limits: between the two only
// async-signal-safe calls, as the test program has threads.
pid_t spawn_limited(std::vector<char*>& args, const std::vector<resource_limit>& limits, int out) {
  const pid_t pid = fork();
  if (pid != 0)
    return pid;
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
    _exit(127);
  for (const resource_limit& l : limits) {
    const rlimit r{l.value, l.value};
    if (setrlimit(l.resource, &r) != 0)
      _exit(126);
  }
  execve(args[0], args.data(), environ);
  _exit(127);
}

// Spawns argv with stdin from /dev/null and stdout+stderr into a pipe;
// returns the pid and the pipe's read end in *out.
pid_t spawn(const std::vector<std::string>& argv, bool search_path, int* out,
            const std::vector<resource_limit>& limits = {}) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0)
    return -1;
  if (!limits.empty()) {
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t pid = spawn_limited(args, limits, p[1]);
    close(p[1]);
    if (pid < 0) {
      close(p[0]);
      return -1;
    }
    *out = p[0];
    return pid;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_adddup2(&fa, p[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int err = search_path ? posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ)
                        : posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  if (err != 0) {
    close(p[0]);
    return -1;
  }
  *out = p[0];
  return pid;
}

// waitpid with a deadline; the wait status, or -1 on the deadline.
int wait_deadline(pid_t pid, clock_type::time_point deadline) {
  for (;;) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return status;
    if (r < 0 && errno != EINTR)
      return -1;
    if (clock_type::now() >= deadline)
      return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

temp_dir::temp_dir() {
  const char* base = std::getenv("TMPDIR");
  // A short base keeps a socket path inside sockaddr_un's 108 bytes.
  std::string tmpl = std::string(base && *base && std::strlen(base) < 60 ? base : "/tmp") + "/iov-nbd-XXXXXX";
  if (mkdtemp(tmpl.data()))
    dir_ = tmpl;
}

temp_dir::~temp_dir() {
  std::error_code ec;
  if (!dir_.empty())
    std::filesystem::remove_all(dir_, ec);
}

server_process::server_process(const std::string& program, const std::vector<std::string>& args,
                               const std::vector<resource_limit>& limits) {
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = spawn(argv, false, &out_, limits);
}

server_process::~server_process() {
  if (pid_ > 0)
    kill_and_reap(pid_);
  if (out_ >= 0)
    close(out_);
}

// What is there now, waiting up to timeout_ms for the first of it only.
void server_process::drain(int timeout_ms) {
  if (out_ < 0)
    return;
  for (auto deadline = after_ms(timeout_ms); read_some(out_, &output_, deadline) > 0;)
    deadline = clock_type::now();
}

bool server_process::wait_listening(int timeout_ms) {
  if (pid_ <= 0)
    return false;
  const auto deadline = after_ms(timeout_ms);
  static constexpr char kReady[] = "listening on ";
  for (;;) {
    size_t at = output_.find(kReady);
    if (at != std::string::npos) {
      size_t eol = output_.find('\n', at);
      if (eol != std::string::npos) {
        address_ = output_.substr(at + sizeof kReady - 1, eol - at - (sizeof kReady - 1));
        return true;
      }
    }
    if (read_some(out_, &output_, deadline) <= 0)
      return false;  // it exited, or did not get ready in time
  }
}

int server_process::signal_and_wait(int sig, int timeout_ms) {
  if (pid_ <= 0)
    return -1;
  kill(pid_, sig);
  int status = wait_deadline(pid_, after_ms(timeout_ms));
  if (status == -1)
    kill_and_reap(pid_);
  pid_ = -1;
  drain(100);
  return status;
}

std::string server_process::output() {
  drain(0);
  return output_;
}

run_result run(const std::vector<std::string>& argv, int timeout_ms) {
  run_result res;
  int out = -1;
  pid_t pid = spawn(argv, true, &out);
  if (pid < 0) {
    res.output = "cannot start " + argv[0];
    return res;
  }
  const auto deadline = after_ms(timeout_ms);
  ssize_t n;
  while ((n = read_some(out, &res.output, deadline)) > 0) {
  }
  close(out);
  int status = n == 0 ? wait_deadline(pid, deadline) : -1;  // n < 0: the deadline passed
  if (status == -1) {
    res.timed_out = true;
    kill_and_reap(pid);
    return res;
  }
  res.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return res;
}

process_figures figures_of(pid_t pid) {
  process_figures f;
  const std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream status(dir + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmSize:")
      status >> f.vsz_kib;
    else if (key == "VmRSS:")
      status >> f.rss_kib;
    else if (key == "VmHWM:")
      status >> f.hwm_kib;
    else if (key == "Threads:")
      status >> f.threads;
    status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  std::ifstream stat(dir + "/stat");
  std::string line;
  std::getline(stat, line);
  // Fields after the command (which may hold spaces): state is field 3,
  // utime 14 and stime 15.
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::vector<std::string> fields{"", "", ""};
  for (std::string v; rest >> v;)
    fields.push_back(v);
  if (fields.size() > 15)
    f.cpu_seconds = (std::stod(fields[14]) + std::stod(fields[15])) / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/fd", ec))
    f.open_fds.push_back(std::atoi(e.path().filename().c_str()));
  return f;
}

std::string which(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return "";
}

uint16_t free_tcp_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0)
    port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

}  // namespace iov_test::nbd
