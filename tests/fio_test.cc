// Tests of iov-fio (src/tools/fio): its options and defaults as the API
// contract pins them, every workload and iterator kind moving exactly the
// bytes asked for, verify passing on good data and naming the offset of a
// corrupted block, and the program's exit status and JSON.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "fio/job.hpp"
#include "iov_drivers/null_blk.hpp"
#include "support/run_command.hpp"

namespace {

using iov::fio::iter_kind;
using iov::fio::job_options;
using iov::fio::rw_pattern;

absl::StatusOr<job_options> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "iov-fio");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  return iov::fio::parse_options(static_cast<int>(argv.size()), argv.data());
}

std::string setting(const job_options& o, const std::string& name) {
  for (const auto& [n, v] : o.settings)
    if (n == name)
      return v;
  return "";
}

TEST(FioOptions, DefaultsAreTheContractsDefaults) {
  auto o = parse({});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->size, 64u << 20);
  EXPECT_EQ(o->bs, 4096u);
  EXPECT_EQ(o->rw, rw_pattern::read);
  EXPECT_EQ(o->numjobs, 1u);
  EXPECT_EQ(o->iodepth, 1u);
  EXPECT_EQ(o->io_size, o->size);  // neither --io_size nor --runtime
  EXPECT_EQ(o->iter, iter_kind::ubuf);
  EXPECT_FALSE(o->json);
}

TEST(FioOptions, ParsesEveryOption) {
  auto o = parse({"--driver=null_blk", "--size=16m", "--rw=randrw", "--bs=8k", "--numjobs=2", "--iodepth=4",
                  "--runtime=1.5", "--verify=crc32c", "--iter=fixed", "--output-format=json", "--prefill",
                  "--blocksize=4096", "--cache_size=4", "--rwmixread=70"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->driver, "null_blk");
  EXPECT_EQ(o->size, 16u << 20);
  EXPECT_EQ(o->bs, 8192u);
  EXPECT_EQ(o->rw, rw_pattern::randrw);
  EXPECT_EQ(o->numjobs, 2u);
  EXPECT_EQ(o->iodepth, 4u);
  EXPECT_DOUBLE_EQ(o->runtime, 1.5);
  EXPECT_EQ(o->io_size, 0u);
  EXPECT_TRUE(o->verify);
  EXPECT_EQ(o->iter, iter_kind::fixed);
  EXPECT_TRUE(o->json);
  EXPECT_TRUE(o->prefill);
  EXPECT_EQ(o->rwmixread, 70u);
  EXPECT_EQ(setting(*o, "blocksize"), "4096");
  EXPECT_EQ(setting(*o, "size"), std::to_string(16u << 20));
  // The settings make the device asked for: null_blk is memory-backed in the
  // programs unless --memory_backed=0 says otherwise.
  auto dev = iov::blkdev_create(o->driver, o->settings);
  ASSERT_TRUE(dev.ok()) << dev.status();
  auto* nullb = dynamic_cast<iov::nullb_device*>(dev->get());
  ASSERT_NE(nullb, nullptr);
  EXPECT_TRUE(nullb->config().memory_backed);
  EXPECT_EQ(nullb->config().blocksize, 4096u);
  EXPECT_EQ(nullb->config().cache_size, 4u);
  EXPECT_EQ(nullb->get_capacity(), (16u << 20) / 512);
  auto off = parse({"--driver=null_blk", "--memory_backed=0"});
  ASSERT_TRUE(off.ok()) << off.status();
  auto dev_off = iov::blkdev_create(off->driver, off->settings);
  ASSERT_TRUE(dev_off.ok()) << dev_off.status();
  EXPECT_FALSE(dynamic_cast<iov::nullb_device&>(**dev_off).config().memory_backed);
}

TEST(FioOptions, BadOptionsAreClearErrors) {
  for (auto [arg, text] : std::vector<std::pair<std::string, std::string>>{
           {"--rw=sideways", "randwrite"},
           {"--bs=100", "multiple of 512"},
           {"--bs=4q", "--bs=4q"},
           {"--numjobs=0", "positive"},
           {"--verify=md5", "crc32c"},
           {"--iter=sgl", "fixed"},
           {"--bogus=1", "unknown option --bogus"},
           {"--driver=loop", "brd or null_blk"},
           {"--output-format=xml", "json"},
       }) {
    auto o = parse({arg});
    ASSERT_FALSE(o.ok()) << arg;
    EXPECT_NE(o.status().message().find(text), std::string::npos) << o.status();
  }
}

struct Case {
  const char* driver;
  rw_pattern rw;
  iter_kind iter;
  std::vector<std::pair<std::string, std::string>> extra;
};

iov::fio::run_result run_case(job_options o) {
  auto dev = iov::blkdev_create(o.driver, o.settings);
  EXPECT_TRUE(dev.ok()) << dev.status();
  return iov::fio::run(o, **dev);
}

TEST(FioRun, EveryWorkloadAndIteratorMovesTheBytesAskedFor) {
  for (const char* driver : {"brd", "null_blk"}) {
    for (rw_pattern rw : {rw_pattern::read, rw_pattern::write, rw_pattern::randread, rw_pattern::randwrite,
                          rw_pattern::randrw}) {
      for (iter_kind iter : {iter_kind::ubuf, iter_kind::iovec, iter_kind::bvec, iter_kind::fixed}) {
        auto o = parse({std::string("--driver=") + driver, "--size=1m", "--bs=16k", "--io_size=512k",
                        "--iodepth=3", "--numjobs=2", "--prefill"});
        ASSERT_TRUE(o.ok());
        o->rw = rw;
        o->iter = iter;
        SCOPED_TRACE(std::string(driver) + " " + iov::fio::rw_name(rw) + " " + iov::fio::iter_name(iter));
        auto r = run_case(*o);
        EXPECT_EQ(r.error, 0) << r.error_text;
        EXPECT_EQ(r.read.bytes + r.write.bytes, 2u * 512 * 1024);  // io_size per job
        EXPECT_EQ(r.read.ios + r.write.ios, 2u * 32);
        EXPECT_EQ(r.read.clat.count(), r.read.ios);
        bool reads = rw == rw_pattern::read || rw == rw_pattern::randread;
        bool writes = rw == rw_pattern::write || rw == rw_pattern::randwrite;
        if (reads) {
          EXPECT_EQ(r.write.ios, 0u);
        }
        if (writes) {
          EXPECT_EQ(r.read.ios, 0u);
        }
      }
    }
  }
}

TEST(FioRun, VerifyPassesOnEveryConfiguration) {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"--driver=brd"},
           {"--driver=brd", "--detect_zeroes=unmap"},
           {"--driver=null_blk", "--blocksize=512"},
           {"--driver=null_blk", "--blocksize=4096", "--cache_size=1"},
       }) {
    for (const char* iter : {"--iter=ubuf", "--iter=fixed", "--iter=bvec"}) {
      args.insert(args.end(), {"--size=2m", "--rw=randwrite", "--verify=crc32c", "--io_size=1m", iter});
      auto o = parse(args);
      ASSERT_TRUE(o.ok()) << o.status();
      auto r = run_case(*o);
      EXPECT_EQ(r.error, 0) << r.error_text;
      EXPECT_FALSE(r.verify_failed) << r.verify_text;
      EXPECT_GT(r.verified_blocks, 100u);
      args.resize(args.size() - 5);
    }
  }
}

TEST(FioRun, VerifyNamesTheOffsetOfACorruptedBlock) {
  auto o = parse({"--rw=write", "--size=1m", "--verify=crc32c", "--debug-corrupt=70000"});
  ASSERT_TRUE(o.ok());
  auto r = run_case(*o);
  EXPECT_EQ(r.error, 0);
  ASSERT_TRUE(r.verify_failed);
  EXPECT_NE(r.verify_text.find("at offset 69632"), std::string::npos) << r.verify_text;  // the block holding 70000
}

TEST(FioRun, ARefusedRequestIsReported) {
  // null_blk zoned: a sequential-zone random write is not at the write pointer.
  auto o = parse({"--driver=null_blk", "--zoned", "--zone_size=1", "--size=4m", "--rw=randwrite"});
  ASSERT_TRUE(o.ok()) << o.status();
  auto r = run_case(*o);
  EXPECT_NE(r.error, 0);
  EXPECT_NE(r.error_text.find("offset"), std::string::npos) << r.error_text;
}

#ifdef IOV_FIO_PATH
// iov-fio with args; its stdout and stderr.
std::string run_program(const std::string& args, int* status) {
  return iov_test::run_command(std::string(IOV_FIO_PATH) + " " + args + " 2>&1", status);
}

TEST(FioProgram, PrintsFioStyleResultsAndExitStatus) {
  int status;
  std::string out = run_program("--size=1m --rw=randread --prefill", &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("  read: IOPS="), std::string::npos) << out;
  EXPECT_NE(out.find("BW="), std::string::npos);
  EXPECT_NE(out.find("clat percentiles"), std::string::npos);
  EXPECT_NE(out.find("99.90th="), std::string::npos);
  out = run_program("--size=1m --rw=write --output-format=json", &status);
  EXPECT_EQ(status, 0);
  EXPECT_NE(out.find("\"jobs\": ["), std::string::npos) << out;
  EXPECT_NE(out.find("\"iops\": "), std::string::npos);
  out = run_program("--size=1m --rw=write --verify=crc32c --debug-corrupt=5000", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("verify: crc32c mismatch at offset 4096"), std::string::npos) << out;
  out = run_program("--driver=brd --zone_size=4", &status);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(out.find("zone_size"), std::string::npos) << out;
}
#endif

}  // namespace
