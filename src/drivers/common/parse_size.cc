// parse_size.cc: the size syntax of settings and options (see parse_size.hpp).
// In its own file so that a tool that only reads sizes (iov-scan) links none of
// the drivers.
#include "iov_drivers/parse_size.hpp"

#include <cctype>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace iov {

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

}  // namespace iov
