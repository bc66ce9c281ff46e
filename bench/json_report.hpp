// json_report.hpp: iov-bench's JSON, Google Benchmark's format as its own
// JSONReporter writes it, with what a reader needs to group and judge the
// cases without knowing their names (the chart, scripts/plot-bench; the
// comparison, scripts/bench-compare):
//
// - each run's label describes its case as `key=value` words:
//     kind=iteration op=copy iter=bvec form=outofline memory=tiled
//     vs=iov_kunit_benchmark_bvec ratio=time target=<=1.03
//   kind     iteration, operation, driver, memory or baseline
//   op       what the case does (copy, zero, crc32c, ...), or the whole
//            group when it names no iterator type
//   iter     the iterator type (ubuf ... folioq), when the group ends in one
//   form     inline, or the suffix of another form (outofline, typed, ...)
//   memory   tiled, streaming or l1
//   vs       the case its ratio is taken against: a form's inline case, an
//            inline case's baseline
//   ratio    time (case / vs: lower is better) or throughput (vs / case)
//   target   the bound the ratio is meant to keep, as <=X or >=X
//   target.COUNTER  the same for a memory counter (kind=memory)
// - each case's runs carry the counter iov_median_us: the median the KTAP
//   report gives (kept samples of every round, by the report's clock);
// - the samples themselves only with --json-samples: by default a case is
//   its aggregates (mean, median, stddev, cv), a twentieth of the size.
//
//   iov::bench::json_reporter json(names, /*samples=*/false, [&](const std::string& n) { ... });
//   benchmark::RunSpecifiedBenchmarks(&ktap, &json);
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace iov::bench {

// The label of case `name` (without Google Benchmark's settings), given the
// names of every case registered and whether it reports rss_* counters.
std::string case_label(const std::string& name, const std::set<std::string>& all_names, bool memory_counters);

class json_reporter : public benchmark::JSONReporter {
 public:
  // median_us(name) is the KTAP report's median of a case it has reported
  // (0 when none).
  json_reporter(std::set<std::string> all_names, bool samples, std::function<double(const std::string&)> median_us)
      : all_names_(std::move(all_names)), samples_(samples), median_us_(std::move(median_us)) {}

  void ReportRuns(const std::vector<Run>& runs) override;

 private:
  std::set<std::string> all_names_;
  bool samples_;
  std::function<double(const std::string&)> median_us_;
};

}  // namespace iov::bench
