// iov-nbd: serves a brd or null_blk device over NBD (options pinned in the
// API contract): --driver, --size, the driver's settings as for iov-fio,
// --socket=PATH (-U) or --port=N (-p; 10809 by default), --read-only (-r).
// Prints "listening on ADDRESS" when ready and runs until SIGINT/SIGTERM.
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "common/options.hpp"
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
               "               [--socket=PATH | -U PATH | --port=N | -p N] [--read-only | -r]\n"
               "  driver settings: --blocksize=512 --memory_backed=0|1 --cache_size=MB --zoned --zone_size=MB\n"
               "                   --zone_nr_conv=N --detect_zeroes=off|on|unmap\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string driver = "brd", size = "64m";
  iov::nbd::server_options opts;
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
      if (!next(&opts.socket_path))
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
      opts.socket_path = value;
    } else if (name == "port") {
      uint32_t port;
      if (!absl::SimpleAtoi(value, &port) || port > 65535)
        return usage("--port needs a port number");
      opts.port = static_cast<uint16_t>(port);
    } else if (name == "read-only") {
      opts.exp.read_only = true;
    } else if (iov::tools::is_driver_setting(name)) {
      settings.emplace_back(name, opt->second ? value : "1");
    } else {
      return usage("unknown option --" + name);
    }
  }
  auto bytes = iov::tools::parse_size(size);
  if (!bytes.ok())
    return usage("--size: " + std::string(bytes.status().message()));
  settings.emplace_back("size", std::to_string(*bytes));
  auto dev = iov::blkdev_create(driver, settings);
  if (!dev.ok())
    return usage(std::string(dev.status().message()));
  opts.exp.name = "";
  opts.exp.description = "iov " + driver;

  iov::nbd::server server(**dev, opts);
  if (absl::Status st = server.listen(); !st.ok()) {
    std::fprintf(stderr, "iov-nbd: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  g_server = &server;
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::printf("listening on %s\n", server.address().c_str());
  std::fflush(stdout);
  server.run();
  g_server = nullptr;
  return 0;
}
