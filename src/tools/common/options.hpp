// options.hpp: what the tools share to read their command lines: sizes with
// fio's suffixes (4k, 64m, 1g; powers of two), read exactly as the drivers
// read theirs, and --name=value splitting.
//
//   absl::StatusOr<uint64_t> bs = iov::tools::parse_size("4k");   // 4096
//   auto [name, value] = iov::tools::split_option("--bs=4k");     // "bs", "4k"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "iov_drivers/parse_size.hpp"

namespace iov::tools {

// A byte count (4096, 4k, 64MiB): the drivers' syntax, so that --size=64m and
// a driver setting such as --zone_size=64m read alike.
using iov::parse_size;

// "--name=value" -> {name, value}; "--name" -> {name, nullopt}; anything that
// does not start with "--" -> nullopt.
std::optional<std::pair<std::string, std::optional<std::string>>> split_option(std::string_view arg);

// Is --name one of the driver settings the programs pass through to
// iov::blkdev_create() (which says which driver has which)?
bool is_driver_setting(std::string_view name);

}  // namespace iov::tools
