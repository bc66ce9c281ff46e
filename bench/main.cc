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
// the samples afterwards (statistics, summary, chart) is in report.cc; the
// JSON's labels in json_report.cc.
#include <regex.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "common/version.hpp"
#include "iov/internal/simd_level.hpp"
#include "json_report.hpp"
#include "report.hpp"
#include "simd_choices.hpp"
#include "slow_case.hpp"
#include "symbols.hpp"

namespace {

using iov::bench::bench_result;
using iov::bench::compute_stats;
using iov::bench::display_name;
using iov::bench::draw_chart;
using iov::bench::format_us;
using iov::bench::median_of;
using iov::bench::summarize;

// --- Context -----------------------------------------------------------------

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown cpu";
}

// The model name with the family and model numbers, which tell CPU
// generations apart where a virtual machine's model name does not.
std::string cpu_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string family, model;
  for (std::string line; std::getline(in, line) && !line.empty();) {
    size_t colon = line.find(':');
    if (colon == std::string::npos || colon + 2 > line.size())
      continue;
    if (line.rfind("cpu family", 0) == 0)
      family = line.substr(colon + 2);
    else if (line.rfind("model\t", 0) == 0)
      model = line.substr(colon + 2);
  }
  return cpu_model() + (family.empty() ? "" : " (family " + family + ", model " + model + ")");
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
    "usage: iov-bench [--filter=REGEX] [--json=PATH [--json-samples]] [--chart=PATH|--no-chart]\n"
    "                 [--tile=SIZE] [--clock=cpu|wall] [--rounds=N] [--list]\n"
    "                 [--benchmark_...=...]\n"
    "  --filter=REGEX  run the benchmarks whose name matches (Google Benchmark's filter, a POSIX\n"
    "                  extended regular expression)\n"
    "  --json=PATH     also write Google Benchmark's JSON there (the directory must exist): each\n"
    "                  case's aggregates, labelled with its kind, form, baseline and target\n"
    "  --json-samples  every sample in the JSON too (for compare.py's U test)\n"
    "  --chart=PATH    draw the chart of the JSON's ratios (.svg, or .png through rsvg-convert);\n"
    "                  by default next to --json (without --json, the JSON goes next to the chart)\n"
    "  --tile=SIZE     the physical size behind the tiled 256 MiB buffers: a power of two from 4k to 1m\n"
    "                  (default 512k)\n"
    "  --clock=cpu     time samples by process CPU time (the default: robust on a shared machine)\n"
    "  --clock=wall    time samples by the wall clock, as the kernel's ktime_get_real()\n"
    "  --rounds=N      run the selection N times over (1 to 100) and merge each case's samples:\n"
    "                  steadier medians on a shared machine (the JSON holds the last round)\n"
    "  --list          print the names of the benchmarks that would run\n"
    "  --help, --version  this text; the program's version and commit\n"
    "Exit status: 0 every case ran; 1 a case failed, none matched, or the JSON could not be\n"
    "written; 2 a bad command line (an unwritable --json or --chart included).\n";

struct options {
  std::string filter = ".";
  std::string json, chart;
  bool chart_given = false, list = false, json_samples = false;
  bool wall_clock = false;  // --clock=wall: the kernel's ktime_get_real(); default: process CPU time
  int rounds = 1;
  std::vector<std::string> passthrough;
};

// A whole number, digits only (no sign, no space), that fits in 64 bits.
bool parse_digits(std::string_view s, uint64_t* out) {
  if (s.empty())
    return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && std::isdigit(static_cast<unsigned char>(s[0]));
}

// A size with an optional k or m, checked for overflow.
bool parse_size(std::string s, size_t* out) {
  unsigned shift = 0;
  if (!s.empty() && (s.back() == 'k' || s.back() == 'K' || s.back() == 'm' || s.back() == 'M')) {
    shift = s.back() == 'k' || s.back() == 'K' ? 10 : 20;
    s.pop_back();
  }
  uint64_t v;
  if (!parse_digits(s, &v) || v > (SIZE_MAX >> shift))
    return false;
  *out = static_cast<size_t>(v << shift);
  return true;
}

// Whether `path` can take the output of --name: its directory exists (it is
// never created), the path is a regular file or nothing yet, and a file can
// be created beside it (a probe, removed at once). Files such as
// /proc/version open for writing and then refuse every write: the probe in
// their directory refuses first.
std::string output_path_error(const char* name, const std::string& path) {
  std::string prefix = std::string("--") + name + "=" + path + ": ";
  if (path.empty())
    return std::string("--") + name + "= needs a path";
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty())
    dir = ".";
  struct stat sb;
  if (stat(dir.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode))
    return prefix + "directory " + dir.string() + " does not exist (iov-bench does not create it)";
  if (stat(path.c_str(), &sb) == 0 && !S_ISREG(sb.st_mode))
    return prefix + (S_ISDIR(sb.st_mode) ? "is a directory" : "is not a regular file");
  std::string probe = (dir / ".iov-bench-XXXXXX").string();
  int fd = mkstemp(probe.data());
  if (fd < 0)
    return prefix + "cannot write in " + dir.string() + ": " + std::strerror(errno);
  close(fd);
  unlink(probe.c_str());
  return "";
}

// Does `path` hold a whole JSON document (Google Benchmark does not check
// its writes: a full disk leaves a truncated file behind)? Its braces must
// balance, outside strings, by its last character.
bool json_complete(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t last = text.find_last_not_of(" \n\r\t");
  if (text.empty() || text[0] != '{' || last == std::string::npos)
    return false;
  int depth = 0;
  bool in_string = false;
  for (size_t k = 0; k <= last; k++) {
    char c = text[k];
    if (in_string) {
      if (c == '\\')
        k++;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if ((c == '}' || c == ']') && --depth == 0 && k != last) {
      return false;
    }
  }
  return depth == 0 && !in_string;
}

// PATH without the extension of its last component.
std::string without_extension(const std::string& path) {
  size_t dot = path.rfind('.'), slash = path.rfind('/');
  return dot == std::string::npos || (slash != std::string::npos && dot < slash) ? path : path.substr(0, dot);
}

// Parses the command line into *o; an error message, or "" when it is good.
std::string parse_options(int argc, char** argv, options* o) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&a](const char* flag) -> const char* {
      size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 ? a.c_str() + n : nullptr;
    };
    if (const char* v = value("--filter=")) {
      if (!*v)
        return "--filter= needs a regular expression (--filter=. runs everything)";
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
      regex_t re;  // as Google Benchmark compiles it; it would match nothing, silently
      if (int err = regcomp(&re, o->filter.c_str(), REG_EXTENDED | REG_NOSUB)) {
        char why[128];
        regerror(err, &re, why, sizeof why);
        return a + ": not a regular expression (" + why + ")";
      }
      regfree(&re);
    } else if (const char* v = value("--json=")) {
      o->json = v;
      if (std::string err = output_path_error("json", o->json); !err.empty())
        return err;
    } else if (a == "--json-samples") {
      o->json_samples = true;
    } else if (const char* v = value("--chart=")) {
      o->chart = v;
      o->chart_given = true;
      if (std::string err = output_path_error("chart", o->chart); !err.empty())
        return err;
    } else if (a == "--no-chart") {
      o->chart.clear();
      o->chart_given = true;
    } else if (const char* v = value("--tile=")) {
      size_t tile = 0;
      if (!parse_size(v, &tile) || tile < iov::PAGE_SIZE || tile > (1u << 20) || (tile & (tile - 1)))
        return a + ": expected a power of two from 4k to 1m";
      iov::bench::set_tile_size(tile);
    } else if (const char* v = value("--clock=")) {
      if (std::strcmp(v, "wall") != 0 && std::strcmp(v, "cpu") != 0)
        return a + ": expected wall or cpu";
      o->wall_clock = std::strcmp(v, "wall") == 0;
    } else if (const char* v = value("--rounds=")) {
      uint64_t n;
      if (!parse_digits(v, &n) || n < 1 || n > 100)
        return a + ": expected a number from 1 to 100";
      o->rounds = static_cast<int>(n);
    } else if (a == "--list") {
      o->list = true;
    } else if (a.rfind("--benchmark_", 0) == 0 || a.rfind("--v=", 0) == 0) {
      o->passthrough.push_back(a);
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--version") {
      iov::tools::print_version("iov-bench");
      std::exit(0);
    } else {
      return "unknown option " + a;
    }
  }
  if (!o->chart_given && !o->json.empty())
    o->chart = without_extension(o->json) + ".svg";
  // The chart is drawn from the JSON.
  if (o->json.empty() && !o->chart.empty())
    o->json = without_extension(o->chart) + ".json";
  if (o->json_samples && o->json.empty())
    return "--json-samples needs --json=PATH";
  return "";
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
  // What Google Benchmark did not take (a misspelt flag, a value it could
  // not read) is left in argv: a bad command line, not a silent default.
  if (benchmark::ReportUnrecognizedArguments(argc, argv.data())) {
    std::cerr << kUsage;
    std::exit(2);
  }
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

// A memory figure over its samples, the median first: a ratio as
// "1.0042 (0.9942..1.0101, 4 samples)", bytes as whole numbers.
std::string memory_figure(const std::vector<double>& v) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  bool bytes = std::abs(*lo) >= 100 || std::abs(*hi) >= 100;
  const char* format = bytes ? "%.0f (%.0f..%.0f, %zu samples)" : "%.4f (%.4f..%.4f, %zu samples)";
  char buf[128];
  std::snprintf(buf, sizeof buf, format, median_of(v), *lo, *hi, v.size());
  return buf;
}

// KTAP, line by line as the runs of the last round finish; earlier rounds
// only collect samples.
class ktap_reporter : public benchmark::BenchmarkReporter {
 public:
  ktap_reporter(size_t planned, std::vector<std::string> header, bool wall_clock, int rounds)
      : planned_(planned), header_(std::move(header)), wall_clock_(wall_clock), rounds_(rounds) {}

  void start_round(int round) { round_ = round; }

  // The cases in the order they run, for slow_case_next().
  void set_order(std::vector<std::string> order) {
    order_ = std::move(order);
    if (!order_.empty())
      iov::bench::slow_case_next(order_[0]);
  }

  bool ReportContext(const Context& context) override {
    if (round_ != 1)
      return true;
    std::ostream& out = GetOutputStream();
    out << "KTAP version 1\n# Subtest: iov_iter\n# module: iov-bench\n";
    for (const std::string& line : header_)
      out << "# " << line << "\n";
    out << "# cpu: " << cpu_description() << ", " << context.cpu_info.num_cpus << " cpus, "
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
    if (!order_.empty())
      iov::bench::slow_case_next(order_[++seen_ % order_.size()]);
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
      for (const auto& [key, counter] : r->counters)
        if (key.rfind("rss_", 0) == 0)
          res.memory[key].push_back(counter.value);
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
    for (auto& [key, values] : res.memory)
      merged.memory[key].insert(merged.memory[key].end(), values.begin(), values.end());
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
      for (const auto& [key, values] : res.memory)
        out << "# " << res.name << ": " << key << " " << memory_figure(values) << "\n";
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
  std::vector<std::string> order_;
  size_t seen_ = 0;
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
  if (std::string err = parse_options(argc, argv, &opt); !err.empty()) {
    std::cerr << "iov-bench: " << err << "\n" << kUsage;
    return 2;
  }
  auto started = std::chrono::steady_clock::now();

  listing_reporter lister, all_lister;
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
          " KiB (memfd, MAP_FIXED), _streaming over distinct memory, _l1 both on one 32 KiB tile (8 MiB "
          "mapped onto it, walked 32 times)",
      opt.rounds == 1 ? "samples: 16 per case, the first dropped; stddev is the standard deviation of the 15 kept"
                      : "samples: 16 per case in each of " + std::to_string(opt.rounds) +
                            " rounds, the first of each dropped; avg, stddev and median over all kept",
      std::string("clock: ") + (opt.wall_clock ? "wall (ktime_get_real, as the kernel)"
                                                : "process CPU time (--clock=wall for the kernel's wall clock)"),
      std::string("check: generic_iterate is out of line: ") + (check_ok ? "ok" : "FAILED"),
      "check: " + check_detail,
  };
  // Each dispatched family's level, chosen by measurement before any case runs.
  const auto choices = iov::bench::simd_choices();
  for (const auto& [family, what] : choices)
    header.push_back("simd " + family + ": " + what);
  benchmark::AddCustomContext("iov_build", build);
  benchmark::AddCustomContext("iov_tile_bytes", std::to_string(iov::bench::tile_size()));
  benchmark::AddCustomContext("iov_check_generic_iterate_out_of_line", check_ok ? "ok" : "FAILED");
  benchmark::AddCustomContext("iov_samples", "16 repetitions of 1 iteration; KTAP drops the first");
  // What the chart's title and a comparison of two runs read.
  benchmark::AddCustomContext("iov_version", iov::tools::version());
  benchmark::AddCustomContext("iov_commit", iov::tools::commit());
  benchmark::AddCustomContext("iov_cpu", cpu_description());
  // The ceiling of the families' levels; the iov_simd_<family> values say what runs.
  benchmark::AddCustomContext("iov_simd", iov::internal::simd_level_name(iov::internal::simd_ceiling()));
  for (const auto& [family, what] : choices)
    benchmark::AddCustomContext("iov_simd_" + family, what);
  benchmark::AddCustomContext("iov_clock", opt.wall_clock ? "wall" : "cpu");
  benchmark::AddCustomContext("iov_rounds", std::to_string(opt.rounds));

  // The JSON's labels know every registered case, whatever the filter.
  options every = opt;
  every.filter = ".";
  initialize_benchmark(every, true, false);
  benchmark::RunSpecifiedBenchmarks(&all_lister);
  std::vector<std::string> listed = all_lister.names();
  const std::set<std::string> all_names(listed.begin(), listed.end());

  ktap_reporter ktap(names.size(), header, opt.wall_clock, opt.rounds);
  iov::bench::json_reporter json(all_names, opt.json_samples,
                                 [&ktap](const std::string& name) {
                                   const auto& r = ktap.results();
                                   auto it = std::find_if(r.rbegin(), r.rend(),
                                                          [&](const bench_result& b) { return b.name == name; });
                                   return it == r.rend() ? 0.0 : it->median_us;
                                 });
  iov::bench::slow_case_setup();
  ktap.set_order(names);
  for (int round = 1; round <= opt.rounds; round++) {
    ktap.start_round(round);
    bool last = round == opt.rounds;
    initialize_benchmark(opt, false, last);
    if (last && !opt.json.empty())
      benchmark::RunSpecifiedBenchmarks(&ktap, &json);
    else
      benchmark::RunSpecifiedBenchmarks(&ktap);
  }
  benchmark::Shutdown();

  std::vector<std::string> summary = summarize(ktap.results(), all_names);
  for (const std::string& line : summary)
    std::cout << "# " << line << "\n";
  bool json_ok = opt.json.empty() || json_complete(opt.json);
  if (!opt.json.empty())
    std::cout << "# json: " << opt.json << (json_ok ? "" : " (NOT WRITTEN: see stderr)") << "\n";
  if (!json_ok)
    std::cerr << "iov-bench: --json=" << opt.json << ": the JSON was not written whole (a full disk, a file size limit?)\n";
  if (!opt.chart.empty())
    std::cout << "# chart: " << (json_ok ? draw_chart(opt.json, opt.chart) : "skipped (no JSON)") << "\n";

  size_t failed = ktap.failed() + (ktap.reported() < names.size() ? names.size() - ktap.reported() : 0);
  size_t passed = ktap.reported() - ktap.failed();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("# elapsed: %.1f s\n", secs);
  std::printf("# iov_iter: pass:%zu fail:%zu skip:0 total:%zu\n", passed, failed, names.size());
  std::printf("# Totals: pass:%zu fail:%zu skip:0 total:%zu\n", passed, failed, names.size());
  std::fflush(stdout);
  return failed == 0 && check_ok && json_ok ? 0 : 1;
}
