// status.cc: fio's live status line (see status.hpp).
#include "fio/status.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace iov::fio {

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

char run_letter(rw_pattern rw) {
  switch (rw) {
    case rw_pattern::read: return 'R';
    case rw_pattern::randread: return 'r';
    case rw_pattern::write: return 'W';
    case rw_pattern::randwrite: return 'w';
    case rw_pattern::randrw: return 'm';
  }
  return '?';
}

std::string num2str(uint64_t num, int maxlen, uint64_t base, bool pow2, const char* unit) {
  static const char* const si[] = {"", "k", "M", "G", "T", "P", "E"};
  static const char* const iec[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  const uint64_t thousand = pow2 ? 1024 : 1000;
  size_t prefix = 0;
  for (; base > 1; base /= thousand)
    prefix++;
  auto digits = [](uint64_t v) { return static_cast<int>(std::to_string(v).size()); };
  bool divided = false;
  uint64_t modulo = 0;
  while (prefix + 1 < std::size(si) && digits(num) > maxlen) {
    modulo = num % thousand;
    num /= thousand;
    prefix++;
    divided = true;
  }
  const char* p = (pow2 ? iec : si)[prefix];
  if (!divided)
    return std::to_string(num) + p + unit;
  int decimals = maxlen - digits(num) - 1;  // the point takes one place
  if (decimals < 1) {
    num += modulo >= thousand / 2;
    return std::to_string(num) + p + unit;
  }
  char frac[32];
  std::snprintf(frac, sizeof frac, "%.*f", decimals, static_cast<double>(modulo) / static_cast<double>(thousand));
  if (frac[0] == '1')  // rounded up to the next unit: 0.9996 -> "1.000"
    num++;
  return std::to_string(num) + "." + (frac + 2) + p + unit;
}

namespace {

// fio's eta_to_str: [DDd:][HHh:]MMm:SSs
std::string eta_text(double seconds) {
  uint64_t s = static_cast<uint64_t>(std::llround(std::max(0.0, seconds)));
  uint64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;
  char buf[64];
  int n = 0;
  if (d)
    n += std::snprintf(buf + n, sizeof buf - n, "%02llud:", static_cast<unsigned long long>(d));
  if (d || h)
    n += std::snprintf(buf + n, sizeof buf - n, "%02lluh:", static_cast<unsigned long long>(h));
  std::snprintf(buf + n, sizeof buf - n, "%02llum:%02llus", static_cast<unsigned long long>(m),
                static_cast<unsigned long long>(s % 60));
  return buf;
}

// fio's condensed run string: "R(2),_(1)".
std::string condensed(const std::string& run) {
  std::string out;
  for (size_t k = 0; k < run.size();) {
    size_t n = 1;
    while (k + n < run.size() && run[k + n] == run[k])
      n++;
    out += (out.empty() ? "" : ",") + std::string(1, run[k]) + "(" + std::to_string(n) + ")";
    k += n;
  }
  return out;
}

}  // namespace

std::string format_status(const status_snapshot& s) {
  std::string line = "Jobs: " + std::to_string(s.running) + " (f=" + std::to_string(s.running) + ")";
  if (s.eta_s < 0 || !s.running)
    return line;
  char perc[32];
  std::snprintf(perc, sizeof perc, "%3.1f%%", 100.0 * s.elapsed_s / std::max(1e-9, s.elapsed_s + s.eta_s));
  line += ": [" + condensed(s.run_str) + "][" + perc + "]";
  static const char dir[2] = {'r', 'w'};
  std::string rates, iops;
  for (int d = 0; d < 2; d++) {
    if (!s.rate[d] && !s.iops[d])
      continue;
    const char* sep = rates.empty() ? "" : ",";
    rates += sep + std::string(1, dir[d]) + "=" + num2str(s.rate[d] / 1024, 4, 1024, true, "B/s");
    iops += sep + std::string(1, dir[d]) + "=" + num2str(s.iops[d], 4, 1, false, "");
  }
  if (!rates.empty())
    line += "[" + rates + "][" + iops + " IOPS]";
  return line + "[eta " + eta_text(s.eta_s) + "]";
}

status_line::status_line(const job_options& o, const std::vector<job_progress>& jobs, FILE* out, bool prefill_only)
    : o_(o), jobs_(jobs), out_(out), prefill_only_(prefill_only), start_ns_(monotonic_ns()) {
  thread_ = std::thread([this] { loop(); });
}

status_line::~status_line() { stop(); }

void status_line::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t last = start_ns_;
  while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) {
    uint64_t now = monotonic_ns();
    status_snapshot s = snapshot(now, static_cast<double>(now - last) / 1e9);
    if (prefill_only_ && s.run_str.find_first_of("PI") == std::string::npos) {
      if (printed_)
        std::fputc('\n', out_);
      printed_ = false;
      return;
    }
    print(s);
    last = now;
  }
}

void status_line::stop() {
  if (!thread_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (printed_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
}

// Each job's time left: what its current phase still needs at its pace so
// far (a time-based measured phase: the rest of --runtime), plus the
// measured phase after a prefill; the run's is the longest.
status_snapshot status_line::snapshot(uint64_t now_ns, double interval_s) {
  status_snapshot s;
  s.elapsed_s = static_cast<double>(now_ns - start_ns_) / 1e9;
  bool known = false;
  double eta = 0;
  for (const job_progress& j : jobs_) {
    char state = j.state.load(std::memory_order_relaxed);
    s.run_str += state;
    for (int d = 0; d < 2; d++) {
      uint64_t b = j.bytes[d].load(std::memory_order_relaxed), n = j.ios[d].load(std::memory_order_relaxed);
      s.rate[d] += b;
      s.iops[d] += n;
    }
    if (state == 'P' || state == 'E' || state == '_' || state == 'X')  // not started, or done
      continue;
    s.running++;
    double done = static_cast<double>(j.phase_done.load(std::memory_order_relaxed));
    double total = static_cast<double>(j.phase_total.load(std::memory_order_relaxed));
    double took = static_cast<double>(now_ns - j.phase_start_ns.load(std::memory_order_relaxed)) / 1e9;
    double pace = took > 0 ? done / took : 0;  // bytes per second
    double left;
    if (state != 'I' && state != 'V' && o_.runtime > 0)
      left = o_.runtime - took;
    else if (pace > 0)
      left = (total - done) / pace;
    else
      continue;
    if (state == 'I')  // the measured phase follows the prefill
      left += o_.runtime > 0 ? o_.runtime : static_cast<double>(o_.io_size) / pace;
    eta = std::max(eta, std::max(0.0, left));
    known = true;
  }
  s.eta_s = known ? eta : -1;
  // Totals so far, then the rates over the last interval.
  for (int d = 0; d < 2; d++) {
    uint64_t bytes = s.rate[d], ios = s.iops[d];
    s.rate[d] = interval_s > 0 ? static_cast<uint64_t>(static_cast<double>(bytes - last_bytes_[d]) / interval_s) : 0;
    s.iops[d] = interval_s > 0 ? static_cast<uint64_t>(static_cast<double>(ios - last_ios_[d]) / interval_s) : 0;
    last_bytes_[d] = bytes;
    last_ios_[d] = ios;
  }
  return s;
}

void status_line::print(const status_snapshot& s) {
  std::string line = format_status(s);
  size_t len = line.size();
  if (len < last_len_)
    line.append(last_len_ - len, ' ');  // erase what is left of a longer line
  last_len_ = len;
  std::fputs((line + "\r").c_str(), out_);
  std::fflush(out_);
  printed_ = true;
}

}  // namespace iov::fio
