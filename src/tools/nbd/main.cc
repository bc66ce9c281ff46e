// iov-nbd: serves a brd or null_blk device over NBD (options pinned in the
// API contract): --driver, --size, the driver's settings as for iov-fio,
// --socket=PATH (-U) or --port=N (-p; 10809 by default), --read-only (-r),
// and the server's limits: --max-connections, --handshake-timeout,
// --idle-timeout, --request-timeout, --payload-memory, --threads. Prints
// "listening on ADDRESS" when ready and runs until SIGINT, SIGTERM, SIGHUP
// or SIGQUIT (SIGUSR1 and SIGUSR2 are ignored), removing its socket.
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "common/options.hpp"
#include "iov/page_alloc.hpp"
#include "iov_drivers/blkdev.hpp"
#include "nbd/server.hpp"

namespace {

iov::nbd::server* g_server = nullptr;
void on_signal(int) {
  if (g_server)
    g_server->stop();
}

int usage(const std::string& msg) {
  if (!msg.empty())
    std::fprintf(stderr, "iov-nbd: %s\n", msg.c_str());
  std::fprintf(stderr,
               "usage: iov-nbd [--driver=brd|null_blk] [--size=64m] [driver settings]\n"
               "               [--socket=PATH | -U PATH | --port=N | -p N] [--read-only | -r] [limits]\n"
               "  driver settings: --blocksize=512 --memory_backed=0|1 --cache_size=MB --zoned --zone_size=MB\n"
               "                   --zone_nr_conv=N --detect_zeroes=off|on|unmap\n"
               "  limits: --max-connections=256 --handshake-timeout=10 --idle-timeout=0 --request-timeout=30\n"
               "          (seconds; 0: none) --payload-memory=64m --threads=N (default: one per CPU, at most 8)\n"
               "  The disk lives in this process's memory: its contents are gone when the server exits.\n");
  return 2;
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
      continue;
    }
    if (arg == "-r") {
      opts.exp.read_only = true;
      continue;
    }
    if (arg == "--help")
      return usage(""), 0;
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
  opts.exp.name = "";
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
  std::printf("listening on %s\n", server.address().c_str());
  std::fflush(stdout);
  server.run();
  g_server = nullptr;
  iov::page_alloc_stats m = iov::page_alloc_read_stats();  // the disk's pages, still held
  std::fprintf(stderr, "iov-nbd: pages in use %zu (%zu KiB), chunks %zu, returned %zu KiB\n", m.frames_in_use,
               m.frames_in_use * iov::PAGE_SIZE >> 10, m.chunks_held, m.bytes_returned >> 10);
  return 0;
}
