// iov-nbd: serves a brd or null_blk device over NBD (options pinned in the
// API contract): --driver, --size, the driver's settings as for iov-fio,
// --socket=PATH (-U) or --port=N (-p; 10809 by default) on --bind=ADDRESS
// (127.0.0.1 by default), --read-only (-r), --export-name, --description,
// --pidfile=FILE, --run 'CMD' (captive.hpp), TLS (--tls=off|on|require with
// --tls-psk=FILE or --tls-certificates=DIR; tls.hpp), and the server's limits:
// --max-connections, --handshake-timeout, --idle-timeout, --request-timeout,
// --payload-memory, --threads. Prints "listening on ADDRESS" when ready and
// runs until SIGINT, SIGTERM, SIGHUP or SIGQUIT (SIGUSR1 and SIGUSR2 are
// ignored), or until CMD ends, removing its socket and pidfile. A listening
// socket handed over by systemd (LISTEN_PID, LISTEN_FDS) is served instead of
// one of its own (listener.hpp).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "common/options.hpp"
#include "common/version.hpp"
#include "iov/page_alloc.hpp"
#include "iov_drivers/blkdev.hpp"
#include "nbd/captive.hpp"
#include "nbd/server.hpp"

namespace {

iov::nbd::server* g_server = nullptr;
void on_signal(int) {
  if (g_server)
    g_server->stop();
}

constexpr char kUsage[] =
    "usage: iov-nbd [--driver=brd|null_blk] [--size=64m] [driver settings]\n"
    "               [--socket=PATH | -U PATH | --port=N | -p N] [--bind=ADDRESS] [--read-only | -r]\n"
    "               [--export-name=NAME] [--description=TEXT] [--pidfile=FILE] [--run 'CMD'] [limits]\n"
    "               [--tls=off|on|require --tls-psk=FILE | --tls-certificates=DIR [--tls-verify-peer]]\n"
    "  driver settings: --blocksize=512 --memory_backed=0|1 --cache_size=MB --zoned --zone_size=MB\n"
    "                   --zone_nr_conv=N --detect_zeroes=off|on|unmap\n"
    "  limits: --max-connections=256 --handshake-timeout=10 --idle-timeout=0 --request-timeout=30\n"
    "          (seconds; 0: none) --payload-memory=64m --threads=N (default: one per CPU, at most 8)\n"
    "  --help, --version  this text; the program's version and commit\n"
    "  The disk lives in this process's memory: its contents are gone when the server exits.\n"
    "  A socket systemd hands over (LISTEN_PID, LISTEN_FDS=1) is served instead of one of its own.\n"
    "Exit status: 0 stopped by SIGINT, SIGTERM, SIGHUP or SIGQUIT; with --run, CMD's status (128 + the\n"
    "signal's number when a signal ended it); 1 the server could not start (the address or the socket\n"
    "handed over, the TLS credentials, the pidfile, or CMD's shell); 2 a bad command line or settings the\n"
    "device refuses.\n";

// A bad command line: the reason and the usage on stderr, status 2.
int usage(const std::string& msg) {
  std::fprintf(stderr, "iov-nbd: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

// The pid, written once the server listens; removed at exit if still ours.
class pidfile {
 public:
  bool write(const std::string& path) {
    const std::string text = std::to_string(getpid()) + "\n";
    const std::string tmp = path + ".tmp";
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      return false;
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0)
      return unlink(tmp.c_str()), false;
    path_ = path;
    return true;
  }
  ~pidfile() {
    char buf[32] = {};
    int fd = path_.empty() ? -1 : open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return;
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0 && std::atoi(buf) == getpid())
      unlink(path_.c_str());
  }

 private:
  std::string path_;
};

// Serves until CMD ends (its status) or a signal stops the server (CMD is
// then sent SIGTERM, and its status is still the one returned).
int run_captive(iov::nbd::server& server, const std::string& cmd, const std::string& export_name, int tls) {
  const pid_t child = iov::nbd::start_captive(cmd, server.where(), export_name, tls);
  if (child < 0) {
    std::fprintf(stderr, "iov-nbd: --run: cannot start /bin/sh: %s\n", std::strerror(static_cast<int>(-child)));
    return 1;
  }
  std::atomic<bool> ended{false};
  int status = 0;
  std::thread waiter([&] {
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    ended = true;
    server.stop();
  });
  server.run();
  if (!ended)
    kill(child, SIGTERM);
  waiter.join();
  return iov::nbd::captive_exit_status(status);
}

bool parse_count(const std::string& value, unsigned min, unsigned* out) {
  uint32_t v;
  if (!absl::SimpleAtoi(value, &v) || v < min)
    return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string driver = "brd", size = "64m";
  iov::nbd::server_options opts;
  iov::nbd::server_limits& lim = opts.limits;
  iov::blkdev_settings settings;
  std::string pidfile_path, run_cmd, tls_psk, tls_certificates;
  bool named_export = false, described = false, port_given = false, verify_peer = false;
  for (int a = 1; a < argc; a++) {
    std::string arg = argv[a];
    auto next = [&](std::string* out) {
      if (a + 1 >= argc)
        return false;
      *out = argv[++a];
      return true;
    };
    std::string value;
    if (arg == "-U") {
      if (!next(&opts.socket_path) || opts.socket_path.empty())
        return usage("-U needs a path");
      continue;
    }
    if (arg == "-p") {
      uint32_t port;
      if (!next(&value) || !absl::SimpleAtoi(value, &port) || port > 65535)
        return usage("-p needs a port number");
      opts.port = static_cast<uint16_t>(port);
      port_given = true;
      continue;
    }
    if (arg == "--run") {  // nbdkit's form: the command as the next argument
      if (!next(&run_cmd) || run_cmd.empty())
        return usage("--run needs a command");
      continue;
    }
    if (arg == "-r") {
      opts.exp.read_only = true;
      continue;
    }
    if (arg == "--help")
      return std::fputs(kUsage, stdout), 0;
    if (arg == "--version")
      return iov::tools::print_version("iov-nbd"), 0;
    auto opt = iov::tools::split_option(arg);
    if (!opt)
      return usage("unexpected argument " + arg);
    const std::string& name = opt->first;
    value = opt->second.value_or("");
    if (name == "driver") {
      driver = value;
    } else if (name == "size") {
      size = value;
    } else if (name == "socket") {
      if (value.empty())  // an unset variable: never fall back to TCP, which any local user can reach
        return usage("--socket needs a path");
      opts.socket_path = value;
    } else if (name == "port") {
      uint32_t port;
      if (!absl::SimpleAtoi(value, &port) || port > 65535)
        return usage("--port needs a port number");
      opts.port = static_cast<uint16_t>(port);
      port_given = true;
    } else if (name == "bind") {
      if (value.empty())
        return usage("--bind needs an address");
      opts.bind_address = value;
    } else if (name == "export-name" || name == "description") {
      if (value.size() > 4096)  // the protocol's limit on a string
        return usage("--" + name + " is longer than 4096 bytes");
      (name == "export-name" ? opts.exp.name : opts.exp.description) = value;
      (name == "export-name" ? named_export : described) = true;
    } else if (name == "tls") {
      if (value == "off")
        opts.tls = iov::nbd::tls_mode::off;
      else if (value == "on")
        opts.tls = iov::nbd::tls_mode::on;
      else if (value == "require")
        opts.tls = iov::nbd::tls_mode::require;
      else
        return usage("--tls needs off, on or require");
    } else if (name == "tls-psk" || name == "tls-certificates") {
      if (value.empty())
        return usage("--" + name + " needs a " + (name == "tls-psk" ? "file" : "directory"));
      (name == "tls-psk" ? tls_psk : tls_certificates) = value;
    } else if (name == "pidfile") {
      if (value.empty())
        return usage("--pidfile needs a path");
      pidfile_path = value;
    } else if (name == "run") {
      if (value.empty())
        return usage("--run needs a command");
      run_cmd = value;
    } else if (name == "tls-verify-peer") {
      if (opt->second)
        return usage("--tls-verify-peer takes no value");
      verify_peer = true;
    } else if (name == "read-only") {
      opts.exp.read_only = true;
    } else if (name == "max-connections") {
      if (!parse_count(value, 1, &lim.max_connections))
        return usage("--max-connections needs a number of at least 1");
    } else if (name == "handshake-timeout" || name == "idle-timeout" || name == "request-timeout") {
      unsigned* field = name == "handshake-timeout" ? &lim.handshake_timeout
                        : name == "idle-timeout"    ? &lim.idle_timeout
                                                    : &lim.request_timeout;
      if (!parse_count(value, 0, field) || *field > 86400 * 365)
        return usage("--" + name + " needs a number of seconds (0: none)");
    } else if (name == "payload-memory") {
      auto bytes = iov::tools::parse_size(value);
      if (!bytes.ok())
        return usage("--payload-memory: " + std::string(bytes.status().message()));
      if (*bytes < iov::nbd::kInlinePayload)
        return usage("--payload-memory must be at least 64k");
      lim.payload_memory = *bytes;
    } else if (name == "threads") {
      if (!parse_count(value, 1, &lim.threads) || lim.threads > 1024)
        return usage("--threads needs a number from 1 to 1024");
    } else if (iov::tools::is_driver_setting(name)) {
      settings.emplace_back(name, opt->second ? value : "1");
    } else {
      return usage("unknown option --" + name);
    }
  }
  auto bytes = iov::tools::parse_size(size);
  if (!bytes.ok())
    return usage("--size: " + std::string(bytes.status().message()));
  if (*bytes >> 63)
    return usage("--size: NBD cannot carry a size of 2^63 bytes or more");
  settings.emplace_back("size", std::to_string(*bytes));
  auto dev = iov::blkdev_create(driver, settings);
  if (!dev.ok())
    return usage(std::string(dev.status().message()));
  if (!opts.socket_path.empty() && !opts.bind_address.empty())
    return usage("--bind is for TCP: it cannot go with --socket");
  auto inherited = iov::nbd::inherited_listen_fd();
  if (!inherited.ok()) {
    std::fprintf(stderr, "iov-nbd: %s\n", std::string(inherited.status().message()).c_str());
    return 1;
  }
  opts.inherited_fd = *inherited;
  if (opts.inherited_fd >= 0 && (!opts.socket_path.empty() || port_given || !opts.bind_address.empty()))
    return usage("a socket handed over by systemd (LISTEN_FDS) cannot go with --socket, --port or --bind");
  if (!tls_psk.empty() && !tls_certificates.empty())
    return usage("--tls-psk and --tls-certificates: one or the other");
  const bool credentials = !tls_psk.empty() || !tls_certificates.empty();
  if (opts.tls != iov::nbd::tls_mode::off && !credentials)
    return usage("--tls=on and --tls=require need --tls-psk=FILE or --tls-certificates=DIR");
  if (opts.tls == iov::nbd::tls_mode::off && credentials)
    return usage("--tls-psk and --tls-certificates need --tls=on or --tls=require");
  if (verify_peer && tls_certificates.empty())
    return usage("--tls-verify-peer checks X.509 client certificates: it needs --tls-certificates=DIR");
  if (credentials) {
    auto creds = tls_psk.empty() ? iov::nbd::tls_credentials::load_x509(tls_certificates, verify_peer)
                                 : iov::nbd::tls_credentials::load_psk(tls_psk);
    if (!creds.ok()) {
      std::fprintf(stderr, "iov-nbd: %s\n", std::string(creds.status().message()).c_str());
      return 1;
    }
    opts.credentials = std::move(*creds);
  }
  if (!named_export)
    opts.exp.name = "";
  if (!described)
    opts.exp.description = "iov " + driver;

  // Before the socket exists: a signal from now on ends the server cleanly.
  iov::nbd::server server(**dev, opts);
  g_server = &server;
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    sigaction(sig, &sa, nullptr);
  for (int sig : {SIGUSR1, SIGUSR2, SIGPIPE})
    signal(sig, SIG_IGN);
  if (absl::Status st = server.listen(); !st.ok()) {
    std::fprintf(stderr, "iov-nbd: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  // Encryption alone lets in whoever connects: only a PSK or a checked
  // client certificate keeps a client out.
  if (server.where().reachable_from_network() && opts.tls != iov::nbd::tls_mode::require)
    std::fprintf(stderr,
                 "iov-nbd: warning: the export is reachable from the network on %s without --tls=require: "
                 "anyone who can reach it can read and write the disk\n",
                 server.address().c_str());
  else if (server.where().reachable_from_network() && !opts.credentials->authenticates_clients())
    std::fprintf(stderr,
                 "iov-nbd: warning: the export is reachable from the network on %s and clients are not "
                 "authenticated (X.509 without --tls-verify-peer): anyone who can reach it can read and write "
                 "the disk\n",
                 server.address().c_str());
  pidfile pid;
  if (!pidfile_path.empty() && !pid.write(pidfile_path)) {
    std::fprintf(stderr, "iov-nbd: --pidfile=%s: %s\n", pidfile_path.c_str(), std::strerror(errno));
    return 1;
  }
  std::printf("listening on %s\n", server.address().c_str());
  std::fflush(stdout);
  const int status = run_cmd.empty() ? (server.run(), 0) : run_captive(server, run_cmd, opts.exp.name, static_cast<int>(opts.tls));
  g_server = nullptr;
  iov::page_alloc_stats m = iov::page_alloc_read_stats();  // the disk's pages, still held
  std::fprintf(stderr, "iov-nbd: pages in use %zu (%zu KiB), chunks %zu, returned %zu KiB\n", m.frames_in_use,
               m.frames_in_use * iov::PAGE_SIZE >> 10, m.chunks_held, m.bytes_returned >> 10);
  return status;
}
