// options.hpp: what the tools share to read their command lines: sizes with
// fio's suffixes (4k, 64m, 1g; powers of two) and --name=value splitting.
//
//   absl::StatusOr<uint64_t> bs = iov::tools::parse_size("4k");   // 4096
//   auto [name, value] = iov::tools::split_option("--bs=4k");     // "bs", "4k"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace iov::tools {

// A byte count: digits with an optional k/m/g/t suffix (either case, an
// optional trailing "b" or "ib"), as fio reads --bs and --size.
absl::StatusOr<uint64_t> parse_size(std::string_view text);

// "--name=value" -> {name, value}; "--name" -> {name, nullopt}; anything that
// does not start with "--" -> nullopt.
std::optional<std::pair<std::string, std::optional<std::string>>> split_option(std::string_view arg);

// Is --name one of the driver settings the programs pass through to
// iov::blkdev_create() (which says which driver has which)?
bool is_driver_setting(std::string_view name);

}  // namespace iov::tools
