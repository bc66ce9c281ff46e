// case_names.hpp: how iov-bench's case names read, the one parser behind the
// KTAP summary (report.cc), the JSON's labels (json_report.cc) and the names
// the iteration cases are registered under (iterate_bench.cc):
//
//   iov_kunit_benchmark_<group>[_<form>][_streaming | _l1]
//   baseline_<what>[_streaming | _l1]
//
//   iov::bench::case_name_parts p = iov::bench::split_case_name("iov_kunit_benchmark_bvec_outofline_streaming", all);
//   // p.group == "bvec", p.form == "outofline", p.memory == "streaming", p.suffix == "_streaming"
#pragma once

#include <set>
#include <string>

#include "bench_common.hpp"

namespace iov::bench {

inline constexpr char kCasePrefix[] = "iov_kunit_benchmark_";

struct case_name_parts {
  // "bvec", "zero_xarray", "crc32c_bvec_split"; a baseline's whole name without the memory suffix
  std::string group;
  std::string form = "inline";   // or the suffix of another form ("outofline", "typed", ...); "baseline"
  std::string memory = "tiled";  // or "streaming", "l1"
  std::string suffix;            // the name's suffix for the memory: "", "_streaming" or "_l1"
  bool baseline = false;
};

// The parts of case `name` (without Google Benchmark's settings), given the
// names of every case registered: another form of a case is the case's name
// and a suffix of its own (_outofline, _typed, ...), unless the whole is a
// group with a baseline of its own (brd_randread_batch16) or ends in an
// iterator type (crc32c_bvec_split is not a form of crc32c_bvec). A trailing
// _l1 is the memory only for the cases registered over it (note_l1_case()).
case_name_parts split_case_name(std::string name, const std::set<std::string>& all_names);

// The iterator type a group ends in (the longest: bvec_split, not bvec), or "".
std::string iterator_type_of(const std::string& group);

// What an iteration case does with its iterators: copy_from_iter(),
// copy_to_iter() or iov_iter_zero().
enum class iteration_op { copy, copy_to, zero };
inline constexpr iteration_op all_iteration_ops[] = {iteration_op::copy, iteration_op::copy_to, iteration_op::zero};

// An iteration case's group: "bvec", "copy_to_bvec", "zero_bvec".
std::string iteration_group(iteration_op o, bench_case c);
// Whether a group is one of those (the cases the summary's targets are about).
bool is_iteration_group(const std::string& group);

}  // namespace iov::bench
