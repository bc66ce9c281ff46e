// options.cc: iov-fio's command line (see job.hpp).
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/options.hpp"
#include "fio/job.hpp"
#include "iov/registered_buffers.hpp"

namespace iov::fio {

const char* rw_name(rw_pattern rw) {
  switch (rw) {
    case rw_pattern::read: return "read";
    case rw_pattern::write: return "write";
    case rw_pattern::randread: return "randread";
    case rw_pattern::randwrite: return "randwrite";
    case rw_pattern::randrw: return "randrw";
  }
  return "?";
}

const char* iter_name(iter_kind k) {
  switch (k) {
    case iter_kind::ubuf: return "ubuf";
    case iter_kind::iovec: return "iovec";
    case iter_kind::bvec: return "bvec";
    case iter_kind::fixed: return "fixed";
  }
  return "?";
}

const char* ioengine_name(ioengine e) { return e == ioengine::memcpy ? "memcpy" : "blkdev"; }

namespace {
absl::Status bad(const std::string& name, const std::string& value, const char* want) {
  return absl::InvalidArgumentError(absl::StrCat("--", name, "=", value, ": expected ", want));
}

bool all_digits(const std::string& value) {
  return !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
}

// The options that mean nothing without a value (--prefill, --progress and
// a driver setting without one mean 1).
bool takes_value(const std::string& name) {
  static const char* const valued[] = {"driver",  "size",     "bs",        "io_size",   "rw",
                                       "readwrite", "numjobs", "iodepth",  "iodepth_batch_submit",
                                       "iodepth_batch", "rwmixread", "runtime", "verify", "iter", "ioengine",
                                       "output-format", "randseed", "debug-corrupt"};
  for (const char* v : valued)
    if (name == v)
      return true;
  return false;
}

// An integer from min to max; digits only (no sign, no spaces).
absl::Status parse_unsigned(const std::string& name, const std::string& value, unsigned* out, unsigned min,
                            unsigned max) {
  uint64_t v;
  if (!all_digits(value) || !absl::SimpleAtoi(value, &v) || v < min || v > max)
    return bad(name, value,
               (min == 1 ? absl::StrCat("a positive integer, at most ", max)
                         : absl::StrCat("an integer from ", min, " to ", max)).c_str());
  *out = static_cast<unsigned>(v);
  return absl::OkStatus();
}

uint64_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
}

// What the options together ask for: checked here, before any of it is
// allocated (the products cannot overflow: each factor is bounded above).
absl::Status check_combination(const job_options& o) {
  if (o.bs % SECTOR_SIZE || o.bs > (64u << 20))
    return absl::InvalidArgumentError(absl::StrCat("--bs=", o.bs, ": must be a multiple of 512, at most 64m"));
  if (o.size < o.bs * o.numjobs)
    return absl::InvalidArgumentError(
        absl::StrCat("--size=", o.size, " is too small for ", o.numjobs, " jobs of --bs=", o.bs));
  if (o.iodepth_batch > o.iodepth)
    return absl::InvalidArgumentError(absl::StrCat("--iodepth_batch_submit=", o.iodepth_batch,
                                                   " is more than --iodepth=", o.iodepth,
                                                   ": a batch is made of the job's buffers"));
  if (o.engine == ioengine::memcpy && o.verify)
    return absl::InvalidArgumentError("--ioengine=memcpy measures the copy alone: it does not --verify");
  const uint64_t buffers = uint64_t{o.numjobs} * o.iodepth;
  if (o.iter == iter_kind::fixed && buffers > IORING_MAX_REG_BUFFERS)
    return absl::InvalidArgumentError(absl::StrCat("--iter=fixed registers --numjobs x --iodepth = ", buffers,
                                                   " buffers; io_uring allows at most ", IORING_MAX_REG_BUFFERS));
  const uint64_t memory = buffers * ((o.bs + PAGE_SIZE - 1) & PAGE_MASK), ram = physical_memory();
  if (memory > ram)
    return absl::InvalidArgumentError(absl::StrCat("--numjobs=", o.numjobs, " x --iodepth=", o.iodepth,
                                                   " buffers of --bs=", o.bs, " need ", memory,
                                                   " bytes, more than this machine's memory (", ram, " bytes)"));
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<job_options> parse_options(int argc, char** argv) {
  job_options o;
  bool options_ended = false;  // after "--" (getopt's end of options) nothing is an option
  for (int a = 1; a < argc; a++) {
    std::string arg = argv[a];
    if (!options_ended && arg == "--") {
      options_ended = true;
      continue;
    }
    auto opt = options_ended ? std::nullopt : tools::split_option(arg);
    if (!opt)
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument '", arg, "': iov-fio takes options only (--name=value), no file or device"));
    const std::string& name = opt->first;
    const std::string value = opt->second.value_or("");
    if (!opt->second && takes_value(name))
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value: --", name, "=VALUE"));
    absl::Status s;
    if (name == "driver") {
      if (value != "brd" && value != "null_blk")
        return bad(name, value, "brd or null_blk");
      o.driver = value;
    } else if (name == "size" || name == "bs" || name == "io_size") {
      auto v = tools::parse_size(value);
      if (!v.ok() || *v == 0)
        return bad(name, value, "a positive size such as 4k or 64m");
      if (*v >= kMaxBytes)
        return bad(name, value, "a size below 2^63 bytes (8388608t)");
      (name == "size" ? o.size : name == "bs" ? o.bs : o.io_size) = *v;
    } else if (name == "rw" || name == "readwrite") {
      if (value == "read") o.rw = rw_pattern::read;
      else if (value == "write") o.rw = rw_pattern::write;
      else if (value == "randread") o.rw = rw_pattern::randread;
      else if (value == "randwrite") o.rw = rw_pattern::randwrite;
      else if (value == "randrw") o.rw = rw_pattern::randrw;
      else return bad(name, value, "read, write, randread, randwrite or randrw");
    } else if (name == "numjobs") {
      s = parse_unsigned(name, value, &o.numjobs, 1, kMaxJobs);
    } else if (name == "iodepth") {
      s = parse_unsigned(name, value, &o.iodepth, 1, kMaxIodepth);
    } else if (name == "iodepth_batch_submit" || name == "iodepth_batch") {
      s = parse_unsigned(name, value, &o.iodepth_batch, 1, kMaxIodepth);
    } else if (name == "rwmixread") {
      s = parse_unsigned(name, value, &o.rwmixread, 0, 100);
      if (!s.ok())
        return bad(name, value, "a percentage, 0 to 100");
    } else if (name == "runtime") {
      double v;
      std::string num = value;
      if (!num.empty() && num.back() == 's')
        num.pop_back();
      if (!absl::SimpleAtod(num, &v) || !std::isfinite(v) || v <= 0 || v > kMaxRuntime)
        return bad(name, value, "a positive number of seconds, at most 1e9");
      o.runtime = v;
    } else if (name == "verify") {
      if (value != "crc32c")
        return bad(name, value, "crc32c");
      o.verify = true;
    } else if (name == "iter") {
      if (value == "ubuf") o.iter = iter_kind::ubuf;
      else if (value == "iovec") o.iter = iter_kind::iovec;
      else if (value == "bvec") o.iter = iter_kind::bvec;
      else if (value == "fixed") o.iter = iter_kind::fixed;
      else return bad(name, value, "ubuf, iovec, bvec or fixed");
    } else if (name == "ioengine") {
      if (value == "blkdev") o.engine = ioengine::blkdev;
      else if (value == "memcpy") o.engine = ioengine::memcpy;
      else return bad(name, value, "blkdev or memcpy");
    } else if (name == "output-format") {
      if (value != "normal" && value != "json")
        return bad(name, value, "normal or json");
      o.json = value == "json";
    } else if (name == "prefill" || name == "progress") {
      if (!value.empty() && value != "0" && value != "1")
        return bad(name, value, "0 or 1 (no value: 1)");
      (name == "prefill" ? o.prefill : o.progress) = value != "0";
    } else if (name == "randseed") {
      if (!all_digits(value) || !absl::SimpleAtoi(value, &o.seed))
        return bad(name, value, "a non-negative integer, below 2^64");
    } else if (name == "debug-corrupt") {
      auto v = tools::parse_size(value);
      if (!v.ok())
        return bad(name, value, "a byte offset");
      o.debug_corrupt = static_cast<int64_t>(*v);
    } else if (tools::is_driver_setting(name)) {  // passed through; a flag without a value means 1
      o.settings.emplace_back(name, opt->second ? value : "1");
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown option --", name));
    }
    if (!s.ok())
      return s;
  }
  o.settings.emplace_back("size", std::to_string(o.size));
  if (absl::Status s = check_combination(o); !s.ok())
    return s;
  if (o.runtime == 0 && o.io_size == 0)
    o.io_size = o.size;
  return o;
}

}  // namespace iov::fio
