// parse_size.hpp: the size syntax of the drivers' settings (blkdev_create's
// size, blocksize, cache_size, ...), which the tools also use for their own
// sizes (--size, --bs, --block), so that every size on a command line reads
// the same way.
//
//   absl::StatusOr<uint64_t> bs = iov::parse_size("4k");     // 4096
//   absl::StatusOr<uint64_t> sz = iov::parse_size("64MiB");  // 64 << 20
//   iov::parse_size("12x").status().message();             // "'12x': unknown size suffix 'x'"
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace iov {

// A byte count: decimal digits with an optional k/m/g/t suffix (powers of
// 1024, either case), which may be followed by "b" or "ib" as fio allows
// ("4kb", "4KiB"; a lone "b" means bytes). Anything else, or a count beyond
// 64 bits, is an InvalidArgumentError quoting the text.
absl::StatusOr<uint64_t> parse_size(std::string_view text);

}  // namespace iov
