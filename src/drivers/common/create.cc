// create.cc: blkdev_create(), a device from name=value settings, so that every
// tool accepts the same driver options with the same messages.
//
//   auto dev = iov::blkdev_create("null_blk", {{"size", "1g"}, {"zoned", "1"}, {"zone_size", "64"}});
//   if (!dev.ok()) { std::cerr << dev.status() << "\n"; return 2; }   // "... does not apply to ..."
#include <cerrno>
#include <charconv>
#include <climits>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "iov_drivers/blkdev.hpp"
#include "iov_drivers/brd.hpp"
#include "iov_drivers/null_blk.hpp"
#include "iov_drivers/parse_size.hpp"

namespace iov {

namespace {

absl::Status bad_value(std::string_view name, std::string_view value, std::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat("setting ", std::string(name), "=", std::string(value), ": expected ", std::string(want)));
}

// A byte count in parse_size's syntax, with the settings' message.
absl::Status parse_bytes(std::string_view name, std::string_view value, uint64_t* out) {
  absl::StatusOr<uint64_t> n = iov::parse_size(value);
  if (!n.ok()) return bad_value(name, value, "a size such as 4096, 64k or 1g");
  *out = *n;
  return absl::OkStatus();
}

template <class T>
absl::Status parse_uint(std::string_view name, std::string_view value, T* out) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n > std::numeric_limits<T>::max())
    return bad_value(name, value, "a non-negative integer");
  *out = static_cast<T>(n);
  return absl::OkStatus();
}

// A size in MiB: a plain number is MiB, one with a suffix is bytes.
absl::Status parse_mib(std::string_view name, std::string_view value, unsigned long* out) {
  if (!value.empty() && absl::ascii_isdigit(value.back())) return parse_uint(name, value, out);
  uint64_t bytes;
  if (absl::Status s = parse_bytes(name, value, &bytes); !s.ok()) return s;
  if (bytes % (uint64_t{1} << 20)) return bad_value(name, value, "a whole number of MiB");
  *out = static_cast<unsigned long>(bytes >> 20);
  return absl::OkStatus();
}

absl::Status parse_bool(std::string_view name, std::string_view value, bool* out) {
  std::string v = absl::AsciiStrToLower(std::string(value));
  if (v == "1" || v == "true" || v == "yes" || v == "on") {
    *out = true;
  } else if (v == "0" || v == "false" || v == "no" || v == "off") {
    *out = false;
  } else {
    return bad_value(name, value, "0 or 1");
  }
  return absl::OkStatus();
}

// The settings both drivers take. False when `name` is not one of them.
bool common_setting(std::string_view name, std::string_view value, copy_mode* mode, iteration_mode* iter,
                    absl::Status* status) {
  if (name == "copy_mode") {
    if (value == "modern")
      *mode = copy_mode::modern;
    else if (value == "legacy")
      *mode = copy_mode::legacy;
    else if (value == "nocache")
      *mode = copy_mode::nocache;
    else
      *status = bad_value(name, value, "modern, legacy or nocache");
    return true;
  }
  if (name == "iteration") {
    if (value == "inline")
      *iter = iteration_mode::inlined;
    else if (value == "outofline")
      *iter = iteration_mode::outofline;
    else
      *status = bad_value(name, value, "inline or outofline");
    return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<blkdev>> create_brd(const blkdev_settings& settings) {
  brd_config c;
  for (const auto& [name, value] : settings) {
    absl::Status s;
    if (common_setting(name, value, &c.copy_mode, &c.iteration, &s)) {
    } else if (name == "size") {
      s = parse_bytes(name, value, &c.size);
    } else if (name == "max_pages") {
      s = parse_uint(name, value, &c.max_pages);
    } else if (name == "detect_zeroes") {
      if (value == "off")
        c.detect_zeroes = detect_zeroes::off;
      else if (value == "on")
        c.detect_zeroes = detect_zeroes::on;
      else if (value == "unmap")
        c.detect_zeroes = detect_zeroes::unmap;
      else
        s = bad_value(name, value, "off, on or unmap");
    } else {
      s = absl::InvalidArgumentError(absl::StrCat("setting ", name, " does not apply to brd"));
    }
    if (!s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<brd_device>> dev = brd_device::create(c);
  if (!dev.ok()) return dev.status();
  return std::unique_ptr<blkdev>(std::move(*dev));
}

absl::StatusOr<std::unique_ptr<blkdev>> create_null_blk(const blkdev_settings& settings) {
  null_blk_config c;
  c.memory_backed = true;  // the programs' default; the kernel's is 0
  bool discard_set = false;
  for (const auto& [name, value] : settings) {
    absl::Status s;
    if (common_setting(name, value, &c.copy_mode, &c.iteration, &s)) {
    } else if (name == "size") {
      s = parse_bytes(name, value, &c.size);
    } else if (name == "blocksize") {
      uint64_t bs;
      s = parse_bytes(name, value, &bs);
      c.blocksize = static_cast<unsigned>(std::min<uint64_t>(bs, UINT_MAX));
    } else if (name == "memory_backed") {
      s = parse_bool(name, value, &c.memory_backed);
    } else if (name == "cache_size") {
      s = parse_mib(name, value, &c.cache_size);
    } else if (name == "fua") {
      s = parse_bool(name, value, &c.fua);
    } else if (name == "discard") {
      s = parse_bool(name, value, &c.discard);
      discard_set = true;
    } else if (name == "zoned") {
      s = parse_bool(name, value, &c.zoned);
    } else if (name == "zone_size") {
      s = parse_mib(name, value, &c.zone_size);
    } else if (name == "zone_capacity") {
      s = parse_mib(name, value, &c.zone_capacity);
    } else if (name == "zone_nr_conv") {
      s = parse_uint(name, value, &c.zone_nr_conv);
    } else if (name == "zone_max_open") {
      s = parse_uint(name, value, &c.zone_max_open);
    } else if (name == "zone_max_active") {
      s = parse_uint(name, value, &c.zone_max_active);
    } else if (name == "max_pages") {
      s = parse_uint(name, value, &c.max_pages);
    } else {
      s = absl::InvalidArgumentError(absl::StrCat("setting ", name, " does not apply to null_blk"));
    }
    if (!s.ok()) return s;
  }
  if (!discard_set) c.discard = c.memory_backed && !c.zoned;
  absl::StatusOr<std::unique_ptr<nullb_device>> dev = nullb_device::create(c);
  if (!dev.ok()) return dev.status();
  return std::unique_ptr<blkdev>(std::move(*dev));
}

}  // namespace

absl::StatusOr<std::unique_ptr<blkdev>> blkdev_create(std::string_view driver, const blkdev_settings& settings) {
  if (driver == "brd") return create_brd(settings);
  if (driver == "null_blk") return create_null_blk(settings);
  return absl::InvalidArgumentError(absl::StrCat("unknown driver ", std::string(driver), " (brd or null_blk)"));
}

}  // namespace iov
