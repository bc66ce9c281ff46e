// iov-scan FILE...: prints each file's CRC32C and its data/zero extents, read
// through registered buffers. Output (pinned in the API contract):
//   FILE:                      (only when more than one file is given)
//   crc32c: xxxxxxxx           (~crc32c(~0, data), lower-case hex)
//   OFFSET LENGTH data|zero    (maximal runs, in order; holes read as zero)
// Each file's lines are flushed as soon as it is done, so that what was
// printed survives if the program is stopped later.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/options.hpp"
#include "common/version.hpp"
#include "scan/scan.hpp"

namespace {

constexpr char kUsage[] =
    "usage: iov-scan [--block=SIZE] [--] FILE...\n"
    "  --block=SIZE  zero-detection granularity, 1 byte to 1g (default 4k)\n"
    "  --help, --version  this text; the program's version and commit\n"
    "  --       the arguments that follow are FILEs, even those starting with '-'\n"
    "Reads regular files only (not devices, FIFOs, sockets or /proc files).\n"
    "Exit status: 0 every file scanned; 1 a file could not be scanned (its error is\n"
    "on stderr, the other files are still reported) or io_uring could not be set up;\n"
    "2 a bad command line.\n";

int usage(const char* msg) {
  if (msg)
    std::fprintf(stderr, "iov-scan: %s\n", msg);
  std::fputs(kUsage, msg ? stderr : stdout);
  return msg ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  iov::tools::scan_options opts;
  std::vector<std::string> files;
  bool options_ended = false;  // after "--", every argument is a FILE, as getopt has it
  for (int a = 1; a < argc; a++) {
    std::string arg = argv[a];
    if (!options_ended && arg == "--") {
      options_ended = true;
      continue;
    }
    auto opt = options_ended ? std::nullopt : iov::tools::split_option(arg);
    if (!opt) {
      if (!options_ended && arg.size() > 1 && arg[0] == '-')
        return usage(("unknown option " + arg + " (a FILE whose name starts with '-' goes after --)").c_str());
      files.push_back(arg);
      continue;
    }
    if (opt->first == "help")
      return usage(nullptr);
    if (opt->first == "version")
      return iov::tools::print_version("iov-scan"), 0;
    if (opt->first != "block")
      return usage(("unknown option --" + opt->first).c_str());
    if (!opt->second)
      return usage("--block needs a value: --block=SIZE");
    auto block = iov::tools::parse_size(*opt->second);
    if (!block.ok())
      return usage(("--block: " + std::string(block.status().message())).c_str());
    if (*block == 0 || *block > iov::tools::kMaxScanBlock)
      return usage(("--block=" + *opt->second + ": must be 1 byte to 1g").c_str());
    opts.block = *block;
  }
  if (files.empty())
    return usage("no FILE given");
  auto scanner = iov::tools::file_scanner::create(opts);
  if (!scanner.ok()) {
    std::fprintf(stderr, "iov-scan: %s\n", std::string(scanner.status().message()).c_str());
    return 1;
  }
  int rc = 0;
  for (const std::string& file : files) {
    auto r = (*scanner)->scan(file);
    if (!r.ok()) {
      std::fprintf(stderr, "iov-scan: %s\n", std::string(r.status().message()).c_str());
      rc = 1;
      continue;
    }
    if (files.size() > 1)
      std::printf("%s:\n", file.c_str());
    std::printf("crc32c: %08x\n", r->crc32c);
    for (const auto& e : r->extents)
      std::printf("%llu %llu %s\n", static_cast<unsigned long long>(e.offset),
                  static_cast<unsigned long long>(e.length), e.zero ? "zero" : "data");
    if (std::fflush(stdout) != 0) {
      std::fprintf(stderr, "iov-scan: writing the output: %s\n", std::strerror(errno));
      return 1;
    }
  }
  return rc;
}
