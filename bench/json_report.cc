// json_report.cc: the labels of iov-bench's JSON and the reporter that
// writes them (see json_report.hpp).
#include "json_report.hpp"

#include <map>
#include <utility>

#include "bench_common.hpp"
#include "case_names.hpp"

namespace iov::bench {

namespace {

struct case_info {
  std::string kind, op, iter, form = "inline", memory = "tiled", vs, ratio = "time", target;
  std::map<std::string, std::string> counter_targets;
};

// The bounds the figures are meant to keep (docs/benchmarks.md,
// docs/operations.md, docs/memory.md); the KTAP summary marks the two of the
// iteration cases.
void set_targets(case_info* c, const std::string& group) {
  if (c->kind == "iteration" && c->memory == "tiled") {
    if (c->form == "outofline" && (c->iter == "bvec" || c->iter == "xarray"))
      c->target = "<=1.03";
    else if (c->form == "inline")
      c->target = "<=1.05";
    return;
  }
  if (c->kind == "iteration" && c->memory == "l1") {
    if (c->form == "inline")
      c->target = "<=1.02";
    return;
  }
  static const std::map<std::string, std::string> inline_targets = {
      {"crc32c_l2_4k", "<=1.03"},           {"crc32c_l2_512", "<=1.10"},
      {"crc32c_copy_l2_4k", "<=1.10"},      {"crc32c_copy_l2_512", "<=1.10"},
      {"crc32c_copy_64m_streaming", "<=1.05"}, {"copy_nocache_bvec_streaming", "<=1.05"},
      {"zero_scan_flat_l1", "<=0.50"},      {"zero_scan_flat_streaming", "<=0.80"},
      {"brd_randread", ">=0.80"},
  };
  static const std::map<std::string, std::map<std::string, std::string>> counter_targets = {
      {"brd_resident", {{"rss_per_byte_stored", "<=1.10"}}},
      {"brd_churn", {{"rss_per_byte_stored", "<=1.10"}, {"rss_ratio_last_first", "<=1.10"}}},
  };
  std::string key = group + (c->memory == "streaming" ? "_streaming" : "");
  if (auto t = inline_targets.find(key); t != inline_targets.end() && c->form == "inline")
    c->target = t->second;
  if (auto t = counter_targets.find(key); t != counter_targets.end() && c->kind == "memory")
    c->counter_targets = t->second;
}

case_info describe(const std::string& name, const std::set<std::string>& all, bool memory_counters) {
  const case_name_parts p = split_case_name(name, all);
  case_info c;
  c.form = p.form;
  c.memory = p.memory;
  if (p.baseline) {
    c.kind = "baseline";
    c.op = p.group.substr(sizeof "baseline_" - 1);
    return c;
  }
  const std::string& group = p.group;
  c.iter = iterator_type_of(group);
  c.op = c.iter.empty() ? group : group == c.iter ? "copy" : group.substr(0, group.size() - c.iter.size() - 1);
  if (memory_counters)
    c.kind = "memory";
  else if (is_iteration_group(group))
    c.kind = "iteration";
  else if (group.starts_with("brd_") || group.starts_with("null_blk_"))
    c.kind = "driver";
  else
    c.kind = "operation";
  if (c.form != "inline") {
    c.vs = kCasePrefix + group + p.suffix;
  } else {
    std::string base = baseline_for(group);
    c.vs = (base.empty() ? "baseline_" + group : base) + p.suffix;
  }
  if (!all.count(c.vs) || c.kind == "memory")
    c.vs.clear();
  if (c.kind == "driver")
    c.ratio = "throughput";  // the device's pace as a fraction of its memcpy limit
  set_targets(&c, group);
  return c;
}

}  // namespace

std::string case_label(const std::string& name, const std::set<std::string>& all_names, bool memory_counters) {
  case_info c = describe(name, all_names, memory_counters);
  std::string label = "kind=" + c.kind + " op=" + c.op;
  if (!c.iter.empty())
    label += " iter=" + c.iter;
  label += " form=" + c.form + " memory=" + c.memory;
  if (!c.vs.empty())
    label += " vs=" + c.vs + " ratio=" + c.ratio;
  if (!c.target.empty() && !c.vs.empty())
    label += " target=" + c.target;
  for (const auto& [counter, bound] : c.counter_targets)
    label += " target." + counter + "=" + bound;
  return label;
}

void json_reporter::ReportRuns(const std::vector<Run>& runs) {
  if (runs.empty())
    return;
  // Google Benchmark reports a case's samples, then (with repetitions) its
  // aggregates: the samples go only when asked for, or when there is
  // nothing else.
  const Run& first = runs.front();
  if (first.run_type == Run::RT_Iteration && !samples_ && first.repetitions > 1 && !first.error_occurred)
    return;
  std::vector<Run> out = runs;
  for (Run& r : out) {
    benchmark::BenchmarkName n = r.run_name;
    n.repetitions.clear();
    n.iterations.clear();
    n.min_time.clear();
    n.min_warmup_time.clear();
    n.time_type.clear();
    std::string name = n.str();
    bool memory = false;
    for (const auto& [key, counter] : r.counters)
      memory = memory || key.starts_with("rss_");
    r.report_label = case_label(name, all_names_, memory);
    if (double m = median_us_(name); m > 0)
      r.counters["iov_median_us"] = benchmark::Counter(m);
  }
  benchmark::JSONReporter::ReportRuns(out);
}

}  // namespace iov::bench
