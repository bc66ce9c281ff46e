// report.cc: the statistics, the summary of ratios and the chart of iov-bench
// (see report.hpp).
#include "report.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "case_names.hpp"

// The source tree's scripts/plot-bench, for iov-bench in its build tree (the
// top-level CMakeLists.txt defines it); installed, iov-bench finds
// iov-plot-bench beside itself.
#ifndef IOV_PLOT_BENCH_SOURCE
#define IOV_PLOT_BENCH_SOURCE ""
#endif

namespace iov::bench {
// --- Samples and names -------------------------------------------------------


// As iov_kunit_benchmark_print_stats(): the first sample is dropped (it pays
// for cold caches). The kernel prints int_sqrt64(sum of squares) as its
// "stddev"; this is the true (population) standard deviation of the rest.
void compute_stats(bench_result* r) {
  std::vector<double> s;
  size_t round = r->round_size ? r->round_size : r->samples_us.size();
  for (size_t k = 0; k < r->samples_us.size(); k++)
    if (k % round != 0 || round == 1)
      s.push_back(r->samples_us[k]);
  r->kept = s.size();
  if (s.empty())
    return;
  double sum = 0, sumsq = 0;
  for (double x : s)
    sum += x;
  r->avg_us = sum / static_cast<double>(s.size());
  for (double x : s)
    sumsq += (x - r->avg_us) * (x - r->avg_us);
  r->stddev_us = std::sqrt(sumsq / static_cast<double>(s.size()));
  r->median_us = median_of(std::move(s));
}

double median_of(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Whole microseconds, as kunit prints them, unless that would round to nothing.
std::string format_us(double us) {
  char buf[32];
  if (us >= 10)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(std::llround(us)));
  else
    std::snprintf(buf, sizeof buf, "%.2f", us);
  return buf;
}

// A Google Benchmark instance name without the settings it appends
// ("/iterations:1/repeats:16/real_time").
std::string display_name(const std::string& full) {
  std::string out;
  std::istringstream in(full);
  for (std::string part; std::getline(in, part, '/');) {
    static const char* settings[] = {"iterations:", "repeats:", "min_time:", "min_warmup_time:"};
    bool drop = part == "real_time" || part == "manual_time";
    for (const char* s : settings)
      drop = drop || part.rfind(s, 0) == 0;
    if (!drop)
      out += (out.empty() ? "" : "/") + part;
  }
  return out;
}

namespace {

enum { FORM_INLINE, FORM_OUTOFLINE, FORM_TYPED, FORM_INDIRECT, N_FORMS };

// The summary's column of a form.
int form_column(const std::string& form) {
  if (form == "outofline")
    return FORM_OUTOFLINE;
  if (form == "typed")
    return FORM_TYPED;
  if (form == "indirect")
    return FORM_INDIRECT;
  return FORM_INLINE;
}

// --- Summary -----------------------------------------------------------------

struct group_row {
  std::string group;
  std::string memory;
  const bench_result* forms[N_FORMS] = {};
  const bench_result* baseline = nullptr;
};

std::vector<group_row> group_rows(const std::vector<bench_result>& results, const std::set<std::string>& all_names,
                                  std::set<std::string>* used) {
  std::map<std::string, const bench_result*> by_name;
  for (const bench_result& r : results)
    if (!r.error && r.kept)
      by_name[r.name] = &r;
  std::vector<group_row> rows;
  for (const bench_result& r : results) {
    case_name_parts p = split_case_name(r.name, all_names);
    if (p.baseline || r.error || !r.kept)
      continue;
    auto it = std::find_if(rows.begin(), rows.end(), [&](const group_row& g) {
      return g.group == p.group && g.memory == p.memory;
    });
    if (it == rows.end()) {
      rows.push_back({p.group, p.memory, {}, nullptr});
      it = rows.end() - 1;
      std::string base = iov::bench::baseline_for(p.group);
      if (base.empty())
        base = "baseline_" + p.group;
      auto b = by_name.find(base + p.suffix);
      if (b != by_name.end()) {
        it->baseline = b->second;
        used->insert(b->first);
      }
    }
    it->forms[form_column(p.form)] = &r;
  }
  return rows;
}

std::string ratio(const bench_result* a, const bench_result* b) {
  if (!a || !b || b->median_us <= 0)
    return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", a->median_us / b->median_us);
  return buf;
}

}  // namespace

std::vector<std::string> summarize(const std::vector<bench_result>& results, const std::set<std::string>& all_names) {
  std::set<std::string> used;
  std::vector<group_row> rows = group_rows(results, all_names, &used);
  std::vector<std::string> out;
  char line[256];
  int pass = 0, miss = 0;
  out.push_back("summary: medians (uS) of the kept samples; ratios are of medians");
  out.push_back("targets (tiled): outofline/inline <= 1.03 on bvec and xarray; "
                "inline/baseline <= 1.05 on every iterator type; (l1) inline/baseline <= 1.02 on the copies");
  std::snprintf(line, sizeof line, "%-26s %-9s %8s %8s %7s %9s %8s %8s %8s  %s", "case", "memory", "inline",
                "baseline", "GB/s", "outofl/in", "typed/in", "indir/in", "in/base", "targets");
  out.push_back(line);
  for (const group_row& r : rows) {
    const bench_result* in = r.forms[FORM_INLINE];
    std::string marks;
    auto mark = [&](const char* what, const bench_result* a, const bench_result* b, double limit) {
      if (!a || !b)
        return;
      bool ok = a->median_us <= limit * b->median_us;
      (ok ? pass : miss)++;
      marks += std::string(marks.empty() ? "" : ", ") + what + (ok ? " PASS" : " MISS");
    };
    if (r.memory == "tiled" && (r.group == "bvec" || r.group == "xarray" || r.group == "zero_bvec" ||
                         r.group == "zero_xarray"))
      mark("outofline", r.forms[FORM_OUTOFLINE], in, 1.03);
    if (r.memory == "tiled" && is_iteration_group(r.group))
      mark("baseline", in, r.baseline, 1.05);
    if (r.memory == "l1" && is_iteration_group(r.group))
      mark("baseline", in, r.baseline, 1.02);
    const bench_result* any = in ? in : r.forms[FORM_OUTOFLINE] ? r.forms[FORM_OUTOFLINE] : r.forms[FORM_TYPED];
    double gbs = any && any->bytes > 0 && any->median_us > 0 ? any->bytes / (any->median_us * 1e3) : 0;
    std::snprintf(line, sizeof line, "%-26s %-9s %8s %8s %7.1f %9s %8s %8s %8s  %s", r.group.c_str(),
                  r.memory.c_str(), in ? format_us(in->median_us).c_str() : "-",
                  r.baseline ? format_us(r.baseline->median_us).c_str() : "-", gbs,
                  ratio(r.forms[FORM_OUTOFLINE], in).c_str(), ratio(r.forms[FORM_TYPED], in).c_str(),
                  ratio(r.forms[FORM_INDIRECT], in).c_str(), ratio(in, r.baseline).c_str(), marks.c_str());
    out.push_back(line);
  }
  bool first = true;
  for (const bench_result& r : results) {
    // Baselines without a row of their own, and the flat ones (which several rows share).
    bool flat = r.name.ends_with("_flat") || r.name.ends_with("_flat_streaming");
    if (r.error || !r.kept || !split_case_name(r.name, all_names).baseline || (used.count(r.name) && !flat))
      continue;
    if (std::exchange(first, false)) {
      std::snprintf(line, sizeof line, "%-45s %8s %7s", "flat and other baselines", "median", "GB/s");
      out.push_back(line);
    }
    double gbs = r.bytes > 0 ? r.bytes / (r.median_us * 1e3) : 0;
    std::snprintf(line, sizeof line, "%-45s %8s %7.1f", r.name.c_str(), format_us(r.median_us).c_str(), gbs);
    out.push_back(line);
  }
  std::snprintf(line, sizeof line, "targets: %d PASS, %d MISS (benchmarks, not tests: a MISS does not fail the run)",
                pass, miss);
  out.push_back(line);
  return out;
}

// --- Chart -------------------------------------------------------------------

namespace {

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

std::string dirname_of(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// scripts/plot-bench: beside the program when installed, else in the source tree.
std::string find_plot_script() {
  if (const char* env = std::getenv("IOV_PLOT_BENCH"); env && executable(env))
    return env;
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string exe_dir = n > 0 ? dirname_of(std::string(buf, static_cast<size_t>(n))) : ".";
  for (std::string p : {exe_dir + "/plot-bench", exe_dir + "/iov-plot-bench", std::string(IOV_PLOT_BENCH_SOURCE)})
    if (executable(p))
      return p;
  return "";
}

}  // namespace

std::string draw_chart(const std::string& json, const std::string& chart) {
  std::string script = find_plot_script();
  if (script.empty())
    return "skipped (scripts/plot-bench not found)";
  std::cout << std::flush;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(STDERR_FILENO, STDOUT_FILENO);  // stdout is the KTAP stream
    execl(script.c_str(), script.c_str(), json.c_str(), chart.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "failed (" + script + " " + json + " " + chart + ")";
  return chart;
}
}  // namespace iov::bench
