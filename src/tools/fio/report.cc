// report.cc: fio-style output (see report.hpp).
#include "fio/report.hpp"

#include <ctime>
#include <string>

#include "iov/page_alloc.hpp"

namespace iov::fio {

namespace {

// fio's num2str: three significant digits and a unit (k, M, G as powers of
// 1000; Ki, Mi, Gi as powers of 1024).
std::string scaled(double v, bool binary, const char* unit) {
  static const char* dec[] = {"", "k", "M", "G", "T"};
  static const char* bin[] = {"", "Ki", "Mi", "Gi", "Ti"};
  double base = binary ? 1024 : 1000;
  int k = 0;
  while (v >= base && k < 4) {
    v /= base;
    k++;
  }
  char buf[64];
  if (k == 0 && !binary && v == static_cast<double>(static_cast<uint64_t>(v)))
    std::snprintf(buf, sizeof buf, "%llu%s", static_cast<unsigned long long>(v), unit);
  else
    std::snprintf(buf, sizeof buf, "%.3g%s%s", v, binary ? bin[k] : dec[k], unit);
  return buf;
}

constexpr double kPercentiles[] = {1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};

void print_direction(const char* name, const direction_stats& d, double seconds, FILE* out) {
  double iops = seconds > 0 ? static_cast<double>(d.ios) / seconds : 0;
  double bw = seconds > 0 ? static_cast<double>(d.bytes) / seconds : 0;
  std::fprintf(out, "  %s: IOPS=%s, BW=%s (%s)(%s/%.0fmsec)\n", name, scaled(iops, false, "").c_str(),
               scaled(bw, true, "B/s").c_str(), scaled(bw, false, "B/s").c_str(),
               scaled(static_cast<double>(d.bytes), true, "B").c_str(), seconds * 1000);
  const latency_histogram& h = d.clat;
  std::fprintf(out, "    clat (nsec): min=%llu, max=%llu, avg=%.2f, stdev=%.2f\n",
               static_cast<unsigned long long>(h.min()), static_cast<unsigned long long>(h.max()), h.mean(),
               h.stddev());
  std::fprintf(out, "     clat percentiles (nsec):\n");
  int col = 0;
  for (double p : kPercentiles) {
    std::fprintf(out, "%s%5.2fth=[%6llu]%s", col == 0 ? "     | " : " ", p,
                 static_cast<unsigned long long>(h.percentile(p)), col == 3 ? ",\n" : ",");
    col = (col + 1) % 4;
  }
  if (col)
    std::fprintf(out, "\n");
}

void print_group_line(const char* name, const direction_stats& d, double seconds, FILE* out) {
  double bw = seconds > 0 ? static_cast<double>(d.bytes) / seconds : 0;
  std::fprintf(out, "  %5s: bw=%s (%s), io=%s (%s), run=%.0f-%.0fmsec\n", name, scaled(bw, true, "B/s").c_str(),
               scaled(bw, false, "B/s").c_str(), scaled(static_cast<double>(d.bytes), true, "B").c_str(),
               scaled(static_cast<double>(d.bytes), false, "B").c_str(), seconds * 1000, seconds * 1000);
}

void json_direction(const char* name, const direction_stats& d, double seconds, FILE* out, bool last) {
  double iops = seconds > 0 ? static_cast<double>(d.ios) / seconds : 0;
  double bw = seconds > 0 ? static_cast<double>(d.bytes) / seconds : 0;
  const latency_histogram& h = d.clat;
  std::fprintf(out,
               "      \"%s\": {\n"
               "        \"io_bytes\": %llu, \"io_kbytes\": %llu, \"bw_bytes\": %.0f, \"bw\": %.0f,\n"
               "        \"iops\": %.6f, \"runtime\": %.0f, \"total_ios\": %llu, \"short_ios\": 0, \"drop_ios\": 0,\n",
               name, static_cast<unsigned long long>(d.bytes), static_cast<unsigned long long>(d.bytes / 1024), bw,
               bw / 1024, iops, seconds * 1000, static_cast<unsigned long long>(d.ios));
  for (const char* key : {"clat_ns", "lat_ns"}) {
    std::fprintf(out, "        \"%s\": {\"min\": %llu, \"max\": %llu, \"mean\": %.6f, \"stddev\": %.6f, \"N\": %llu",
                 key, static_cast<unsigned long long>(h.min()), static_cast<unsigned long long>(h.max()), h.mean(),
                 h.stddev(), static_cast<unsigned long long>(h.count()));
    if (key[0] == 'c') {
      std::fprintf(out, ",\n          \"percentile\": {");
      bool first = true;
      for (double p : kPercentiles) {
        std::fprintf(out, "%s\"%.6f\": %llu", first ? "" : ", ", p, static_cast<unsigned long long>(h.percentile(p)));
        first = false;
      }
      std::fprintf(out, "}");
    }
    std::fprintf(out, "}%s\n", key[0] == 'c' ? "," : "");
  }
  std::fprintf(out, "      }%s\n", last ? "" : ",");
}

}  // namespace

void print_normal(const job_options& o, const run_result& r, FILE* out) {
  std::fprintf(out, "iov-fio: (g=0): rw=%s, bs=%lluB, ioengine=%s, driver=%s, iter=%s, iodepth=%u, numjobs=%u\n",
               rw_name(o.rw), static_cast<unsigned long long>(o.bs), ioengine_name(o.engine), o.driver.c_str(),
               iter_name(o.iter), o.iodepth, o.numjobs);
  std::fprintf(out, "iov-fio: (groupid=0, jobs=%u): err=%3d\n", o.numjobs, -r.error);
  if (r.read.ios)
    print_direction("read", r.read, r.seconds, out);
  if (r.write.ios)
    print_direction("write", r.write, r.seconds, out);
  std::fprintf(out, "  cpu          : usr=%.2f%%, sys=%.2f%%, ctx=%llu\n", r.usr_cpu, r.sys_cpu,
               static_cast<unsigned long long>(r.ctx));
  if (o.verify)
    std::fprintf(out, "  verify       : %s, %llu blocks checked\n", r.verify_failed ? "FAILED" : "ok",
                 static_cast<unsigned long long>(r.verified_blocks));
  page_alloc_stats m = page_alloc_read_stats();  // the device's pages are still held
  std::fprintf(out, "  memory       : pages in use=%zu (%s), chunks=%zu, returned=%s\n", m.frames_in_use,
               scaled(static_cast<double>(m.frames_in_use * PAGE_SIZE), true, "B").c_str(), m.chunks_held,
               scaled(static_cast<double>(m.bytes_returned), true, "B").c_str());
  std::fprintf(out, "\nRun status group 0 (all jobs):\n");
  if (r.read.ios)
    print_group_line("READ", r.read, r.seconds, out);
  if (r.write.ios)
    print_group_line("WRITE", r.write, r.seconds, out);
}

void print_json(const job_options& o, const run_result& r, FILE* out) {
  std::fprintf(out,
               "{\n  \"fio version\": \"iov-fio-0.1\",\n  \"timestamp\": %lld,\n"
               "  \"global options\": {\"rw\": \"%s\", \"bs\": \"%llu\", \"iodepth\": \"%u\", \"numjobs\": \"%u\", "
               "\"size\": \"%llu\", \"ioengine\": \"%s\", \"driver\": \"%s\", \"iter\": \"%s\"},\n"
               "  \"jobs\": [\n    {\n      \"jobname\": \"iov-fio\", \"groupid\": 0, \"error\": %d,\n"
               "      \"job_runtime\": %.0f, \"usr_cpu\": %.6f, \"sys_cpu\": %.6f, \"ctx\": %llu,\n"
               "      \"verify\": {\"enabled\": %s, \"failed\": %s, \"blocks\": %llu},\n",
               static_cast<long long>(std::time(nullptr)), rw_name(o.rw), static_cast<unsigned long long>(o.bs),
               o.iodepth, o.numjobs, static_cast<unsigned long long>(o.size), ioengine_name(o.engine), o.driver.c_str(),
               iter_name(o.iter),
               -r.error, r.seconds * 1000, r.usr_cpu, r.sys_cpu, static_cast<unsigned long long>(r.ctx),
               o.verify ? "true" : "false", r.verify_failed ? "true" : "false",
               static_cast<unsigned long long>(r.verified_blocks));
  page_alloc_stats m = page_alloc_read_stats();
  std::fprintf(out,
               "      \"page_alloc\": {\"frames_in_use\": %zu, \"frames_cached\": %zu, \"frames_free\": %zu, "
               "\"chunks_held\": %zu, \"direct_bytes\": %zu, \"bytes_returned\": %zu},\n",
               m.frames_in_use, m.frames_cached, m.frames_free, m.chunks_held, m.direct_bytes, m.bytes_returned);
  json_direction("read", r.read, r.seconds, out, false);
  json_direction("write", r.write, r.seconds, out, true);
  std::fprintf(out, "    }\n  ]\n}\n");
}

}  // namespace iov::fio
