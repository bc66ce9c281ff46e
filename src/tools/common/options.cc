// options.cc: option parsing for the tools (see options.hpp).
#include "common/options.hpp"

#include <functional>
#include <set>

namespace iov::tools {

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
