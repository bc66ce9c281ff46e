// case_names.cc: the parser of iov-bench's case names (see case_names.hpp).
#include "case_names.hpp"

namespace iov::bench {

namespace {

constexpr char kStreaming[] = "_streaming";

}  // namespace

std::string iterator_type_of(const std::string& group) {
  std::string best;
  for (bench_case c : all_cases) {
    std::string t = case_name(c);
    if ((group == t || group.ends_with("_" + t)) && t.size() > best.size())
      best = t;
  }
  return best;
}

case_name_parts split_case_name(std::string name, const std::set<std::string>& all_names) {
  case_name_parts p;
  if (name.ends_with(kStreaming)) {
    p.memory = "streaming";
    p.suffix = kStreaming;
  } else if (is_l1_case(name)) {
    p.memory = "l1";
    p.suffix = "_l1";
  }
  name.resize(name.size() - p.suffix.size());
  if (name.starts_with("baseline_")) {
    p.baseline = true;
    p.form = "baseline";
    p.group = name;
    return p;
  }
  if (name.starts_with(kCasePrefix))
    name.erase(0, sizeof kCasePrefix - 1);
  size_t cut = name.rfind('_');
  if (cut != std::string::npos && baseline_for(name).empty() && iterator_type_of(name).empty() &&
      all_names.count(kCasePrefix + name.substr(0, cut) + p.suffix)) {
    p.form = name.substr(cut + 1);
    name.resize(cut);
  }
  p.group = name;
  return p;
}

std::string iteration_group(iteration_op o, bench_case c) {
  const char* prefix[] = {"", "copy_to_", "zero_"};
  return prefix[static_cast<int>(o)] + std::string(case_name(c));
}

bool is_iteration_group(const std::string& group) {
  for (iteration_op o : all_iteration_ops)
    for (bench_case c : all_cases)
      if (group == iteration_group(o, c))
        return true;
  return false;
}

}  // namespace iov::bench
