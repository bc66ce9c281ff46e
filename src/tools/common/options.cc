// options.cc: size and option parsing for the tools (see options.hpp).
#include "common/options.hpp"

#include <cctype>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace iov::tools {

absl::StatusOr<uint64_t> parse_size(std::string_view view) {
  const std::string text(view);  // this absl's string_view is its own type
  std::string s = absl::AsciiStrToLower(text);
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits])))
    digits++;
  uint64_t value;
  if (digits == 0 || !absl::SimpleAtoi(s.substr(0, digits), &value))
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a size (e.g. 4096, 4k, 64m, 1g)"));
  std::string suffix = s.substr(digits);
  if (suffix.ends_with("ib") && suffix.size() == 3)
    suffix.resize(1);  // "kib" -> "k"
  else if (suffix.ends_with("b"))
    suffix.pop_back();  // "kb" -> "k", "b" -> ""
  unsigned shift = 0;
  if (suffix.empty())
    shift = 0;
  else if (suffix == "k")
    shift = 10;
  else if (suffix == "m")
    shift = 20;
  else if (suffix == "g")
    shift = 30;
  else if (suffix == "t")
    shift = 40;
  else
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': unknown size suffix '", suffix, "'"));
  if (shift && value > (UINT64_MAX >> shift))
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is too large"));
  return value << shift;
}

std::optional<std::pair<std::string, std::optional<std::string>>> split_option(std::string_view arg) {
  if (!arg.starts_with("--") || arg.size() == 2)
    return std::nullopt;
  arg.remove_prefix(2);
  size_t eq = arg.find('=');
  if (eq == std::string_view::npos)
    return std::make_pair(std::string(arg), std::optional<std::string>());
  return std::make_pair(std::string(arg.substr(0, eq)), std::optional<std::string>(std::string(arg.substr(eq + 1))));
}

bool is_driver_setting(std::string_view name) {
  static const std::set<std::string, std::less<>> kDriverSettings = {
      "blocksize",     "memory_backed", "cache_size",    "zoned",     "zone_size",
      "zone_capacity", "zone_nr_conv",  "zone_max_open", "zone_max_active", "detect_zeroes",
      "fua",           "discard",       "max_pages",     "copy_mode", "iteration"};
  return kDriverSettings.find(name) != kDriverSettings.end();
}

}  // namespace iov::tools
