// main.cc: iov-bench, the kunit-style benchmark suite. Runs every registered
// Google Benchmark (bench/*.cc) and prints KTAP as kunit prints the kernel's
// iov_kunit_benchmark_* cases, then a summary of ratios as '#' lines, and
// optionally Google Benchmark's JSON and a gnuplot chart.
//
//   iov-bench                                  # everything, KTAP on stdout
//   iov-bench --filter='bvec|xarray'           # a subset (a regular expression)
//   iov-bench --json=out/iov-bench.json        # also the JSON, and out/iov-bench.svg
//
// Other --benchmark_* options go to Google Benchmark unchanged.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"

namespace {

// --- Samples and names -------------------------------------------------------

struct bench_result {
  std::string name;                // e.g. iov_kunit_benchmark_bvec_outofline
  std::vector<double> samples_us;  // one per repetition: time per iteration
  double bytes = 0;                // bytes per iteration, when the case reports them
  bool error = false;
  std::string message;
  size_t kept = 0;  // samples after dropping the first
  double avg_us = 0, stddev_us = 0, median_us = 0;
};

// As iov_kunit_benchmark_print_stats(): the first sample is dropped (it pays
// for cold caches). The kernel prints int_sqrt64(sum of squares) as its
// "stddev"; this is the true (population) standard deviation of the rest.
void compute_stats(bench_result* r) {
  std::vector<double> s = r->samples_us;
  if (s.size() > 1)
    s.erase(s.begin());
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
  std::sort(s.begin(), s.end());
  size_t m = s.size() / 2;
  r->median_us = s.size() % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
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

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

enum { FORM_INLINE, FORM_OUTOFLINE, FORM_TYPED, FORM_INDIRECT, N_FORMS };

struct name_parts {
  std::string group;  // "bvec", "zero_xarray", or the whole name of a baseline
  int form = FORM_INLINE;
  bool streaming = false;
  bool baseline = false;
};

name_parts parse_name(std::string n) {
  name_parts p;
  if ((p.streaming = ends_with(n, "_streaming")))
    n.resize(n.size() - 10);
  if (n.rfind("baseline_", 0) == 0) {
    p.baseline = true;
  } else {
    const std::string prefix = "iov_kunit_benchmark_";
    if (n.rfind(prefix, 0) == 0)
      n = n.substr(prefix.size());
    if (ends_with(n, "_outofline")) {
      p.form = FORM_OUTOFLINE;
      n.resize(n.size() - 10);
    } else if (ends_with(n, "_typed")) {
      p.form = FORM_TYPED;
      n.resize(n.size() - 6);
    } else if (ends_with(n, "_indirect")) {
      p.form = FORM_INDIRECT;
      n.resize(n.size() - 9);
    }
  }
  p.group = n;
  return p;
}

// --- Summary -----------------------------------------------------------------

struct group_row {
  std::string group;
  bool streaming = false;
  const bench_result* forms[N_FORMS] = {};
  const bench_result* baseline = nullptr;
};

std::vector<group_row> group_rows(const std::vector<bench_result>& results, std::set<std::string>* used) {
  std::map<std::string, const bench_result*> by_name;
  for (const bench_result& r : results)
    if (!r.error && r.kept)
      by_name[r.name] = &r;
  std::vector<group_row> rows;
  for (const bench_result& r : results) {
    name_parts p = parse_name(r.name);
    if (p.baseline || r.error || !r.kept)
      continue;
    auto it = std::find_if(rows.begin(), rows.end(), [&](const group_row& g) {
      return g.group == p.group && g.streaming == p.streaming;
    });
    if (it == rows.end()) {
      rows.push_back({p.group, p.streaming, {}, nullptr});
      it = rows.end() - 1;
      std::string base = iov::bench::baseline_for(p.group);
      if (base.empty())
        base = "baseline_" + p.group;
      auto b = by_name.find(base + (p.streaming ? "_streaming" : ""));
      if (b != by_name.end()) {
        it->baseline = b->second;
        used->insert(b->first);
      }
    }
    it->forms[p.form] = &r;
  }
  return rows;
}

// The targets are about the tiled figures of the iteration cases.
bool is_iteration_group(const std::string& group) {
  for (iov::bench::bench_case c : iov::bench::all_cases)
    if (group == iov::bench::case_name(c) || group == std::string("zero_") + iov::bench::case_name(c))
      return true;
  return false;
}

std::string ratio(const bench_result* a, const bench_result* b) {
  if (!a || !b || b->median_us <= 0)
    return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", a->median_us / b->median_us);
  return buf;
}

std::vector<std::string> summarize(const std::vector<bench_result>& results) {
  std::set<std::string> used;
  std::vector<group_row> rows = group_rows(results, &used);
  std::vector<std::string> out;
  char line[256];
  int pass = 0, miss = 0;
  out.push_back("summary: medians (uS) of the kept samples; ratios are of medians");
  out.push_back("targets (tiled only): outofline/inline <= 1.03 on bvec and xarray; "
                "inline/baseline <= 1.05 on every iterator type");
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
    if (!r.streaming && (r.group == "bvec" || r.group == "xarray" || r.group == "zero_bvec" ||
                         r.group == "zero_xarray"))
      mark("outofline", r.forms[FORM_OUTOFLINE], in, 1.03);
    if (!r.streaming && is_iteration_group(r.group))
      mark("baseline", in, r.baseline, 1.05);
    const bench_result* any = in ? in : r.forms[FORM_OUTOFLINE] ? r.forms[FORM_OUTOFLINE] : r.forms[FORM_TYPED];
    double gbs = any && any->bytes > 0 && any->median_us > 0 ? any->bytes / (any->median_us * 1e3) : 0;
    std::snprintf(line, sizeof line, "%-26s %-9s %8s %8s %7.1f %9s %8s %8s %8s  %s", r.group.c_str(),
                  r.streaming ? "streaming" : "tiled", in ? format_us(in->median_us).c_str() : "-",
                  r.baseline ? format_us(r.baseline->median_us).c_str() : "-", gbs,
                  ratio(r.forms[FORM_OUTOFLINE], in).c_str(), ratio(r.forms[FORM_TYPED], in).c_str(),
                  ratio(r.forms[FORM_INDIRECT], in).c_str(), ratio(in, r.baseline).c_str(), marks.c_str());
    out.push_back(line);
  }
  bool first = true;
  for (const bench_result& r : results) {
    // Baselines without a row of their own, and the flat ones (which several rows share).
    bool flat = ends_with(r.name, "_flat") || ends_with(r.name, "_flat_streaming");
    if (r.error || !r.kept || !parse_name(r.name).baseline || (used.count(r.name) && !flat))
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

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

bool in_path(const char* prog) {
  const char* path = std::getenv("PATH");
  std::istringstream in(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(in, dir, ':');)
    if (executable((dir.empty() ? "." : dir) + "/" + prog))
      return true;
  return false;
}

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
  for (std::string p : {exe_dir + "/plot-bench", exe_dir + "/iov-plot-bench",
                        dirname_of(__FILE__) + "/../scripts/plot-bench"})
    if (executable(p))
      return p;
  return "";
}

// Writes the medians (ms) beside the chart, one block per memory kind, and
// runs plot-bench on them. Returns what the report says about the chart.
std::string draw_chart(const std::vector<bench_result>& results, const std::string& chart) {
  std::set<std::string> used;
  std::vector<group_row> rows = group_rows(results, &used);
  if (rows.empty())
    return "skipped (no case to draw)";
  std::string data = chart.substr(0, chart.rfind('.') == std::string::npos || chart.rfind('.') < chart.rfind('/')
                                         ? chart.size()
                                         : chart.rfind('.')) + ".dat";
  std::ofstream out(data);
  if (!out)
    return "skipped (cannot write " + data + ")";
  auto ms = [](const bench_result* r) { return r ? std::to_string(r->median_us / 1e3) : std::string("-"); };
  // One panel per family and memory kind, so that each keeps a readable scale.
  for (bool iteration : {true, false}) {
    for (bool streaming : {false, true}) {
      std::ostringstream block;
      for (const group_row& r : rows)
        if (r.streaming == streaming && is_iteration_group(r.group) == iteration)
          block << r.group << " " << ms(r.baseline) << " " << ms(r.forms[FORM_INLINE]) << " "
                << ms(r.forms[FORM_OUTOFLINE]) << " " << ms(r.forms[FORM_TYPED]) << " "
                << ms(r.forms[FORM_INDIRECT]) << "\n";
      if (block.str().empty())
        continue;
      out << "# title: " << (iteration ? "iteration cases" : "other operations") << ", "
          << (streaming ? "streaming: 256 MiB of distinct memory (bandwidth-bound)"
                        : "tiled: 256 MiB mapped onto one small tile (iteration cost)")
          << "\n# case baseline inline outofline typed indirect (median ms per 256 MiB)\n"
          << block.str() << "\n\n";
    }
  }
  out.close();
  if (!in_path("gnuplot"))
    return "skipped (gnuplot is not installed; medians in " + data + ")";
  std::string script = find_plot_script();
  if (script.empty())
    return "skipped (scripts/plot-bench not found; medians in " + data + ")";
  std::cout << std::flush;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(STDERR_FILENO, STDOUT_FILENO);  // stdout is the KTAP stream
    execl(script.c_str(), script.c_str(), data.c_str(), chart.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "failed (" + script + " " + data + " " + chart + ")";
  return chart;
}

// --- Context -----------------------------------------------------------------

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown cpu";
}

std::string compiler_version() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown compiler";
#endif
}

constexpr char kUsage[] =
    "usage: iov-bench [--filter=REGEX] [--json=PATH] [--chart=PATH|--no-chart] [--tile=SIZE]\n"
    "                 [--clock=cpu|wall] [--list]\n"
    "                 [--benchmark_...=...]\n"
    "  --filter=REGEX  run the benchmarks whose name matches (Google Benchmark's --benchmark_filter)\n"
    "  --json=PATH     also write Google Benchmark's JSON there\n"
    "  --chart=PATH    draw the medians with gnuplot (.svg or .png); by default next to --json\n"
    "  --tile=SIZE     the physical size behind the tiled 256 MiB buffers (default 16k)\n"
    "  --clock=cpu     time samples by process CPU time (the default: robust on a shared machine)\n"
    "  --clock=wall    time samples by the wall clock, as the kernel's ktime_get_real()\n"
    "  --list          print the names of the benchmarks that would run\n";

struct options {
  std::string filter = ".";
  std::string json, chart;
  bool chart_given = false, list = false;
  bool wall_clock = false;  // --clock=wall: the kernel's ktime_get_real(); default: process CPU time
  std::vector<std::string> passthrough;
};

bool parse_size(const std::string& s, size_t* out) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str())
    return false;
  std::string unit(end);
  if (unit == "k" || unit == "K")
    v <<= 10;
  else if (unit == "m" || unit == "M")
    v <<= 20;
  else if (!unit.empty())
    return false;
  *out = v;
  return true;
}

bool parse_options(int argc, char** argv, options* o) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&a](const char* flag) -> const char* {
      size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 ? a.c_str() + n : nullptr;
    };
    if (const char* v = value("--filter=")) {
      // Instance names end in settings ("/iterations:1/repeats:16/real_time"):
      // let '$' anchor at the end of the case's own name.
      o->filter.clear();
      for (const char* p = v; *p; p++) {
        if (*p == '\\' && p[1]) {
          o->filter += *p++;
          o->filter += *p;
        } else {
          o->filter += *p == '$' ? std::string("(/|$)") : std::string(1, *p);
        }
      }
    } else if (const char* v = value("--json=")) {
      o->json = v;
    } else if (const char* v = value("--chart=")) {
      o->chart = v;
      o->chart_given = true;
    } else if (a == "--no-chart") {
      o->chart.clear();
      o->chart_given = true;
    } else if (const char* v = value("--tile=")) {
      size_t tile = 0;
      if (!parse_size(v, &tile) || tile < iov::PAGE_SIZE || tile > (1u << 20) || (tile & (tile - 1))) {
        std::cerr << "iov-bench: --tile must be a power of two from 4k to 1m\n";
        return false;
      }
      iov::bench::set_tile_size(tile);
    } else if (const char* v = value("--clock=")) {
      if (std::strcmp(v, "wall") != 0 && std::strcmp(v, "cpu") != 0) {
        std::cerr << "iov-bench: --clock is wall or cpu\n";
        return false;
      }
      o->wall_clock = std::strcmp(v, "wall") == 0;
    } else if (a == "--list") {
      o->list = true;
    } else if (a.rfind("--benchmark_", 0) == 0 || a.rfind("--v=", 0) == 0) {
      o->passthrough.push_back(a);
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else {
      std::cerr << "iov-bench: unknown option " << a << "\n" << kUsage;
      return false;
    }
  }
  for (const std::string* path : {&o->json, &o->chart}) {
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::path(*path).parent_path();
    if (!path->empty() && !dir.empty() && !std::filesystem::create_directories(dir, ec) && ec) {
      std::cerr << "iov-bench: cannot create " << dir << ": " << ec.message() << "\n";
      return false;
    }
  }
  if (!o->chart_given && !o->json.empty()) {
    std::string base = o->json;
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0)
      base.resize(base.size() - 5);
    o->chart = base + ".svg";
  }
  return true;
}

// Google Benchmark parses its flags from argv; Initialize may run again later.
void initialize_benchmark(const options& o, bool list) {
  std::vector<std::string> args = {"iov-bench", "--benchmark_filter=" + o.filter,
                                   std::string("--benchmark_list_tests=") + (list ? "true" : "false")};
  if (!list && !o.json.empty()) {
    args.push_back("--benchmark_out=" + o.json);
    args.push_back("--benchmark_out_format=json");
  }
  for (const std::string& p : o.passthrough)
    args.push_back(p);
  std::vector<char*> argv;
  for (std::string& s : args)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  benchmark::Initialize(&argc, argv.data());
}

// The instance names that match the filter, from Google Benchmark's listing.
class listing_reporter : public benchmark::BenchmarkReporter {
 public:
  listing_reporter() { SetOutputStream(&out_); }
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);)
      if (!line.empty())
        v.push_back(display_name(line));
    return v;
  }

 private:
  std::ostringstream out_;
};

// KTAP, line by line as the runs finish.
class ktap_reporter : public benchmark::BenchmarkReporter {
 public:
  ktap_reporter(size_t planned, std::vector<std::string> header, bool wall_clock)
      : planned_(planned), header_(std::move(header)), wall_clock_(wall_clock) {}

  bool ReportContext(const Context& context) override {
    std::ostream& out = GetOutputStream();
    out << "KTAP version 1\n# Subtest: iov_iter\n# module: iov-bench\n";
    for (const std::string& line : header_)
      out << "# " << line << "\n";
    out << "# cpu: " << cpu_model() << ", " << context.cpu_info.num_cpus << " cpus, "
        << static_cast<long>(context.cpu_info.cycles_per_second / 1e6) << " MHz";
    for (const auto& c : context.cpu_info.caches)
      out << ", L" << c.level << (c.type == "Data" ? "d" : c.type == "Instruction" ? "i" : "") << " "
          << c.size / 1024 << " KiB";
    out << "\n1.." << planned_ << "\n" << std::flush;
    return true;
  }

  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<const Run*> samples;
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Iteration && !r.report_big_o && !r.report_rms)
        samples.push_back(&r);
    if (samples.empty())
      return;
    bench_result res;
    benchmark::BenchmarkName n;
    n.function_name = samples[0]->run_name.function_name;
    n.args = samples[0]->run_name.args;
    n.threads = samples[0]->run_name.threads;
    res.name = n.str();
    for (const Run* r : samples) {
      if (r->error_occurred) {
        res.error = true;
        res.message = r->error_message;
        continue;
      }
      double iters = r->iterations > 0 ? static_cast<double>(r->iterations) : 1.0;
      // A manual-time case times itself: its figure is in the real time.
      bool wall = wall_clock_ || r->run_name.time_type == "manual_time";
      double secs = (wall ? r->real_accumulated_time : r->cpu_accumulated_time) / iters;
      res.samples_us.push_back(secs * 1e6);
      if (res.bytes == 0) {
        auto bytes = r->counters.find("bytes");
        auto bps = r->counters.find("bytes_per_second");
        if (bytes != r->counters.end())
          res.bytes = bytes->second.value;
        else if (bps != r->counters.end())  // a rate over the time Google Benchmark chose: real here
          res.bytes = bps->second.value * r->real_accumulated_time / iters;
      }
    }
    compute_stats(&res);
    std::ostream& out = GetOutputStream();
    ++index_;
    if (res.error || res.kept == 0) {
      out << "# " << res.name << ": " << (res.message.empty() ? "no samples" : res.message) << "\n";
      out << "not ok " << index_ << " " << res.name << "\n";
      failed_++;
    } else {
      out << "# " << res.name << ": avg " << format_us(res.avg_us) << " uS, stddev "
          << format_us(res.stddev_us) << " uS\n";
      out << "ok " << index_ << " " << res.name << "\n";
    }
    out << std::flush;
    results_.push_back(std::move(res));
  }

  const std::vector<bench_result>& results() const { return results_; }
  size_t reported() const { return index_; }
  size_t failed() const { return failed_; }

 private:
  size_t planned_;
  std::vector<std::string> header_;
  bool wall_clock_;
  std::vector<bench_result> results_;
  size_t index_ = 0, failed_ = 0;
};

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  if (!parse_options(argc, argv, &opt))
    return 2;
  auto started = std::chrono::steady_clock::now();

  listing_reporter lister;
  initialize_benchmark(opt, true);
  benchmark::RunSpecifiedBenchmarks(&lister);
  std::vector<std::string> names = lister.names();
  if (opt.list) {
    for (const std::string& n : names)
      std::cout << n << "\n";
    return 0;
  }
  if (names.empty()) {
    std::cout << "KTAP version 1\n# Subtest: iov_iter\n1..0\n# no benchmark matches --filter=" << opt.filter
              << "\n";
    return 1;
  }

  std::string check_detail;
  bool check_ok = iov::bench::check_generic_iterate_out_of_line(&check_detail);
  bool hardened = iov::bench::program_has_symbol("__x86_indirect_thunk_rax") ||
                  iov::bench::program_has_symbol("__x86_return_thunk");
  std::string build = std::string(hardened ? "hardened (retpolines, return thunks)" : "plain (no thunks)") +
                      ", " + compiler_version();
  std::vector<std::string> header = {
      "date: " + now_utc(),
      "build: " + build,
      "memory: 256 MiB per buffer; tiled onto " + std::to_string(iov::bench::tile_size() / 1024) +
          " KiB (memfd, MAP_FIXED), _streaming over distinct memory",
      "samples: 16 per case, the first dropped; stddev is the standard deviation of the 15 kept",
      std::string("clock: ") + (opt.wall_clock ? "wall (ktime_get_real, as the kernel)"
                                                : "process CPU time (--clock=wall for the kernel's wall clock)"),
      std::string("check: generic_iterate is out of line: ") + (check_ok ? "ok" : "FAILED"),
      "check: " + check_detail,
  };
  benchmark::AddCustomContext("iov_build", build);
  benchmark::AddCustomContext("iov_tile_bytes", std::to_string(iov::bench::tile_size()));
  benchmark::AddCustomContext("iov_check_generic_iterate_out_of_line", check_ok ? "ok" : "FAILED");
  benchmark::AddCustomContext("iov_samples", "16 repetitions of 1 iteration; KTAP drops the first");

  ktap_reporter ktap(names.size(), header, opt.wall_clock);
  initialize_benchmark(opt, false);
  benchmark::RunSpecifiedBenchmarks(&ktap);
  benchmark::Shutdown();

  std::vector<std::string> summary = summarize(ktap.results());
  for (const std::string& line : summary)
    std::cout << "# " << line << "\n";
  if (!opt.json.empty())
    std::cout << "# json: " << opt.json << "\n";
  if (!opt.chart.empty())
    std::cout << "# chart: " << draw_chart(ktap.results(), opt.chart) << "\n";

  size_t failed = ktap.failed() + (ktap.reported() < names.size() ? names.size() - ktap.reported() : 0);
  size_t passed = ktap.reported() - ktap.failed();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("# elapsed: %.1f s\n", secs);
  std::printf("# iov_iter: pass:%zu fail:%zu skip:0 total:%zu\n", passed, failed, names.size());
  std::printf("# Totals: pass:%zu fail:%zu skip:0 total:%zu\n", passed, failed, names.size());
  std::fflush(stdout);
  return failed == 0 && check_ok ? 0 : 1;
}
