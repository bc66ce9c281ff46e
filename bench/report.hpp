// report.hpp: what iov-bench makes of the samples once the runs are done:
// the kernel's statistics per case, the summary of ratios against inline and
// against the baselines (with the targets), and the chart.
//
//   iov::bench::bench_result r{.name = "iov_kunit_benchmark_bvec", .samples_us = {...}};
//   iov::bench::compute_stats(&r);
//   for (const std::string& line : iov::bench::summarize({r}, {r.name})) std::cout << "# " << line << "\n";
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace iov::bench {

struct bench_result {
  std::string name;                // e.g. iov_kunit_benchmark_bvec_outofline
  std::vector<double> samples_us;  // one per repetition: time per iteration
  double bytes = 0;                // bytes per iteration, when the case reports them
  bool error = false;
  std::string message;
  size_t round_size = 0;  // samples per round with --rounds (0: one round)
  size_t kept = 0;        // samples after dropping the first (of each round)
  double avg_us = 0, stddev_us = 0, median_us = 0;
  // Memory figures a case reports as counters named rss_*: every sample's value.
  std::map<std::string, std::vector<double>> memory;
};

// As iov_kunit_benchmark_print_stats(): the first sample (of each round) is
// dropped (it pays for cold caches); fills kept, avg_us, stddev_us and median_us.
void compute_stats(bench_result* r);

// The median of the values (the mean of the middle two for an even count); 0 for none.
double median_of(std::vector<double> v);

// Whole microseconds, as kunit prints them, unless that would round to nothing.
std::string format_us(double us);

// A Google Benchmark instance name without the settings it appends
// ("/iterations:1/repeats:16/real_time").
std::string display_name(const std::string& full);

// The summary's lines (without the leading "# "): per group and memory kind,
// the medians, the ratios of the forms and against the baseline, and the
// targets with PASS/MISS. all_names: every case registered, whatever ran
// (the names are read as case_names.hpp says).
std::vector<std::string> summarize(const std::vector<bench_result>& results, const std::set<std::string>& all_names);

// Runs plot-bench on the JSON the run wrote; returns what the report says
// about the chart (its path, or why there is none).
std::string draw_chart(const std::string& json, const std::string& chart);

}  // namespace iov::bench
