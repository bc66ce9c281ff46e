// main.cc: iov-bench, the kunit-style benchmark suite. Runs every registered
// Google Benchmark (bench/*.cc) and prints KTAP as kunit prints the kernel's
// iov_kunit_benchmark_* cases, then a summary of ratios as '#' lines, and
// optionally Google Benchmark's JSON and a gnuplot chart.
//
//   iov-bench                                  # everything, KTAP on stdout
//   iov-bench --filter='bvec|xarray'           # a subset (a regular expression)
//   iov-bench --json=out/iov-bench.json        # also the JSON, and out/iov-bench.svg
//
// Other --benchmark_* options go to Google Benchmark unchanged. What is made of
// the samples afterwards (statistics, summary, chart) is in report.cc.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "report.hpp"

namespace {

using iov::bench::bench_result;
using iov::bench::compute_stats;
using iov::bench::display_name;
using iov::bench::draw_chart;
using iov::bench::format_us;
using iov::bench::summarize;

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
    "  --rounds=N      run the selection N times over and merge each case's samples: steadier\n"
    "                  medians on a shared machine (the JSON holds the last round)\n"
    "  --list          print the names of the benchmarks that would run\n";

struct options {
  std::string filter = ".";
  std::string json, chart;
  bool chart_given = false, list = false;
  bool wall_clock = false;  // --clock=wall: the kernel's ktime_get_real(); default: process CPU time
  int rounds = 1;
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
    } else if (const char* v = value("--rounds=")) {
      char* end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (end == v || *end || n < 1 || n > 100) {
        std::cerr << "iov-bench: --rounds is a number from 1 to 100\n";
        return false;
      }
      o->rounds = static_cast<int>(n);
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
void initialize_benchmark(const options& o, bool list, bool write_json) {
  std::vector<std::string> args = {"iov-bench", "--benchmark_filter=" + o.filter,
                                   std::string("--benchmark_list_tests=") + (list ? "true" : "false")};
  if (!list && write_json && !o.json.empty()) {
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

// KTAP, line by line as the runs of the last round finish; earlier rounds
// only collect samples.
class ktap_reporter : public benchmark::BenchmarkReporter {
 public:
  ktap_reporter(size_t planned, std::vector<std::string> header, bool wall_clock, int rounds)
      : planned_(planned), header_(std::move(header)), wall_clock_(wall_clock), rounds_(rounds) {}

  void start_round(int round) { round_ = round; }

  bool ReportContext(const Context& context) override {
    if (round_ != 1)
      return true;
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
    // Merge with the earlier rounds; only the last one reports.
    bench_result& merged = rounds_seen_[res.name];
    size_t round_size = res.samples_us.size();
    merged.name = res.name;
    merged.samples_us.insert(merged.samples_us.end(), res.samples_us.begin(), res.samples_us.end());
    merged.bytes = merged.bytes ? merged.bytes : res.bytes;
    if (res.error) {
      merged.error = true;
      merged.message = res.message;
    }
    if (round_ < rounds_)
      return;
    res = std::move(merged);
    res.round_size = rounds_ > 1 ? round_size : 0;
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
  int rounds_, round_ = 1;
  std::map<std::string, bench_result> rounds_seen_;  // samples of the rounds so far
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
  initialize_benchmark(opt, true, false);
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
      opt.rounds == 1 ? "samples: 16 per case, the first dropped; stddev is the standard deviation of the 15 kept"
                      : "samples: 16 per case in each of " + std::to_string(opt.rounds) +
                            " rounds, the first of each dropped; avg, stddev and median over all kept",
      std::string("clock: ") + (opt.wall_clock ? "wall (ktime_get_real, as the kernel)"
                                                : "process CPU time (--clock=wall for the kernel's wall clock)"),
      std::string("check: generic_iterate is out of line: ") + (check_ok ? "ok" : "FAILED"),
      "check: " + check_detail,
  };
  benchmark::AddCustomContext("iov_build", build);
  benchmark::AddCustomContext("iov_tile_bytes", std::to_string(iov::bench::tile_size()));
  benchmark::AddCustomContext("iov_check_generic_iterate_out_of_line", check_ok ? "ok" : "FAILED");
  benchmark::AddCustomContext("iov_samples", "16 repetitions of 1 iteration; KTAP drops the first");

  ktap_reporter ktap(names.size(), header, opt.wall_clock, opt.rounds);
  for (int round = 1; round <= opt.rounds; round++) {
    ktap.start_round(round);
    initialize_benchmark(opt, false, round == opt.rounds);
    benchmark::RunSpecifiedBenchmarks(&ktap);
  }
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
