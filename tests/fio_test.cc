// Tests of iov-fio (src/tools/fio): its options and defaults as the API
// contract pins them, every option's range checked before anything is
// allocated, every workload and iterator kind moving exactly the bytes asked
// for, verify passing on good data and naming the offset of a corrupted
// block, zoned sequential writes that wrap around, and the program (a child
// process, under limits) with its exit status, JSON and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "fio/job.hpp"
#include "iov/registered_buffers.hpp"
#include "iov_drivers/null_blk.hpp"
#include "support/child_process.hpp"
#include "support/run_command.hpp"

namespace {

using ::testing::HasSubstr;
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
           {"--randseed=-1", "--randseed=-1: expected a non-negative integer"},
           {"--randseed=18446744073709551616", "below 2^64"},
           {"--prefill=yes", "--prefill=yes: expected 0 or 1"},
           {"--bs", "--bs needs a value: --bs=VALUE"},
           {"--randseed", "--randseed needs a value"},
           {"--bogus", "unknown option --bogus"},
           {"file.fio", "unexpected argument 'file.fio': iov-fio takes options only"},
           {"-x", "unexpected argument '-x'"},
       }) {
    auto o = parse({arg});
    ASSERT_FALSE(o.ok()) << arg;
    EXPECT_NE(o.status().message().find(text), std::string::npos) << o.status();
  }
}

// "--" ends the options, as getopt's: what follows is no option, and iov-fio
// takes nothing else. Flags take an explicit 0 or 1; a driver setting
// without a value is 1.
TEST(FioOptions, DoubleDashEndsTheOptionsAndFlagsTakeZeroOrOne) {
  auto o = parse({"--bs=8k", "--"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->bs, 8192u);
  o = parse({"--", "--bs=8k"});
  ASSERT_FALSE(o.ok());
  EXPECT_THAT(std::string(o.status().message()), HasSubstr("unexpected argument '--bs=8k'"));
  o = parse({"--prefill=0", "--progress"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->prefill);
  EXPECT_TRUE(o->progress);
  o = parse({"--prefill", "--progress=0", "--randseed=18446744073709551615"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->prefill);
  EXPECT_FALSE(o->progress);
  EXPECT_EQ(o->seed, UINT64_MAX);
  o = parse({"--driver=null_blk", "--zoned"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(setting(*o, "zoned"), "1");
}

// Each option's range and the options' product, checked while parsing,
// before a buffer or a thread exists: InvalidArgument naming the option.
TEST(FioOptions, RangesAndOverflowsAreClearErrors) {
  for (auto [args, text] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--iodepth=1000000"}, "--iodepth=1000000: expected a positive integer, at most 65536"},
           {{"--iodepth=-1"}, "--iodepth=-1: expected a positive integer"},
           {{"--iodepth=+5"}, "--iodepth=+5: expected"},
           {{"--numjobs=1025"}, "--numjobs=1025: expected a positive integer, at most 1024"},
           {{"--numjobs=4294967297"}, "--numjobs=4294967297"},  // 2^32 + 1: once wrapped to 1
           {{"--runtime=nan"}, "--runtime=nan: expected a positive number of seconds, at most 1e9"},
           {{"--runtime=inf"}, "--runtime=inf"},
           {{"--runtime=-inf"}, "--runtime=-inf"},
           {{"--runtime=1e10"}, "--runtime=1e10"},
           {{"--size=8388608t"}, "--size=8388608t: expected a size below 2^63 bytes"},
           {{"--io_size=9223372036854775808"}, "--io_size=9223372036854775808"},
           {{"--size=99999999999999t"}, "--size=99999999999999t: expected a positive size"},
           // 65536 x 65536 = 2^32 buffers overflowed 32 bits; the memory is refused first
           {{"--numjobs=1024", "--iodepth=65536", "--size=4g"}, "more than this machine's memory"},
           {{"--iodepth=20000", "--iter=fixed"}, "--iter=fixed registers --numjobs x --iodepth = 20000 buffers"},
           {{"--numjobs=2", "--iodepth=8193", "--iter=fixed"}, "16386 buffers; io_uring allows at most 16384"},
           {{"--iodepth=4", "--iodepth_batch_submit=8"}, "--iodepth_batch_submit=8 is more than --iodepth=4"},
           {{"--iodepth_batch=0"}, "--iodepth_batch=0: expected a positive integer"},
       }) {
    auto o = parse(args);
    ASSERT_FALSE(o.ok()) << args[0];
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(o.status().message(), HasSubstr(text));
  }
  auto most = parse({"--numjobs=1024", "--iodepth=16", "--size=4g", "--runtime=1e9"});
  EXPECT_TRUE(most.ok()) << most.status();
  auto fixed = parse({"--numjobs=2", "--iodepth=8192", "--iter=fixed"});
  EXPECT_TRUE(fixed.ok()) << fixed.status();
}

// What the options ask of a device that cannot do it, checked before the run.
TEST(FioOptions, SettingsTheDeviceCannotHonourAreRefused) {
  auto o = parse({"--driver=null_blk", "--memory_backed=0", "--rw=write", "--verify=crc32c", "--size=1m"});
  ASSERT_TRUE(o.ok()) << o.status();
  auto dev = iov::blkdev_create(o->driver, o->settings);
  ASSERT_TRUE(dev.ok());
  absl::Status s = iov::fio::check_device(*o, **dev);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("null_blk with --memory_backed=0 stores nothing"));
  o = parse({"--driver=null_blk", "--zoned", "--zone_size=1", "--size=4m", "--numjobs=5"});
  ASSERT_TRUE(o.ok()) << o.status();
  dev = iov::blkdev_create(o->driver, o->settings);
  ASSERT_TRUE(dev.ok());
  s = iov::fio::check_device(*o, **dev);
  EXPECT_THAT(s.message(), HasSubstr("less than one zone"));
  o = parse({"--driver=null_blk", "--zoned", "--zone_size=1", "--size=4m", "--numjobs=4"});
  dev = iov::blkdev_create(o->driver, o->settings);
  EXPECT_TRUE(iov::fio::check_device(*o, **dev).ok());
}

// Buffers are registered only for --iter=fixed: 20000 of them (beyond
// io_uring's 16384) are fine for the others.
TEST(FioRun, BuffersAreRegisteredOnlyForFixed) {
  auto o = parse({"--iodepth=20000", "--size=1m", "--io_size=256k"});
  ASSERT_TRUE(o.ok()) << o.status();
  auto dev = iov::blkdev_create(o->driver, o->settings);
  auto r = iov::fio::run(*o, **dev);
  EXPECT_EQ(r.error, 0) << r.error_text;
  EXPECT_FALSE(r.setup_failed);
  EXPECT_EQ(r.read.bytes, 256u * 1024);
}

// Zoned sequential writes that wrap around the region reset each zone before
// rewriting it, as fio's zonemode=zbd does with a full zone (a run once
// failed with "write to a full zone"); past a zone's capacity they move to
// the next zone. The zones' write pointers are checked against the model of
// where each job's writes went, and verify reads back every block written
// since its zone's last reset.
TEST(FioRun, ZonedSequentialWritesWrapAroundByResettingZones) {
  struct Case {
    std::vector<std::string> args;
    uint64_t zone_mib, cap_mib, size_mib, io_size_kib;
    unsigned jobs;
    bool prefill;
  } cases[] = {
      {{}, 1, 1, 4, 4608, 1, false},         // 4.5 zones: zone 0 rewritten half way
      {{}, 1, 1, 4, 8192, 1, true},          // prefilled, then two whole passes
      {{}, 1, 1, 4, 3072, 2, true},          // two jobs of two zones each
      {{"--zone_capacity=1"}, 2, 1, 8, 5120, 1, false},  // half of each zone usable
      {{"--zone_nr_conv=1"}, 1, 1, 4, 6144, 1, false},   // a conventional zone first
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--driver=null_blk", "--zoned", "--rw=write", "--verify=crc32c",
                                     "--zone_size=" + std::to_string(c.zone_mib),
                                     "--size=" + std::to_string(c.size_mib) + "m",
                                     "--io_size=" + std::to_string(c.io_size_kib) + "k",
                                     "--numjobs=" + std::to_string(c.jobs)};
    args.insert(args.end(), c.args.begin(), c.args.end());
    if (c.prefill)
      args.push_back("--prefill");
    std::string trace;
    for (const auto& a : args)
      trace += a + " ";
    SCOPED_TRACE(trace);
    auto o = parse(args);
    ASSERT_TRUE(o.ok()) << o.status();
    auto dev = iov::blkdev_create(o->driver, o->settings);
    ASSERT_TRUE(dev.ok()) << dev.status();
    auto r = iov::fio::run(*o, **dev);
    EXPECT_EQ(r.error, 0) << r.error_text;
    EXPECT_FALSE(r.verify_failed) << r.verify_text;
    EXPECT_EQ(r.write.bytes, c.jobs * c.io_size_kib * 1024);
    // The model: each job writes its zones in order, each up to its
    // capacity, wrapping to its first zone; a conventional zone has no
    // write pointer (and is never reset), so its blocks stay written.
    const uint64_t zone = c.zone_mib << 20, cap = c.cap_mib << 20, zones_per_job = c.size_mib / c.zone_mib / c.jobs;
    const bool conv0 = !c.args.empty() && c.args[0] == "--zone_nr_conv=1";
    std::vector<uint64_t> filled(c.size_mib / c.zone_mib, 0);  // bytes in each zone since its last reset
    uint64_t verifiable = 0;
    for (unsigned job = 0; job < c.jobs; job++) {
      uint64_t first = job * zones_per_job;
      auto write_pass = [&](uint64_t bytes) {
        for (uint64_t z = 0; bytes; z = (z + 1) % zones_per_job) {
          uint64_t room = conv0 && first + z == 0 ? zone : cap;
          uint64_t n = std::min(bytes, room);
          filled[first + z] = n;
          bytes -= n;
        }
      };
      if (c.prefill)
        write_pass(zones_per_job * cap);
      write_pass(c.io_size_kib * 1024);
    }
    for (uint64_t f : filled)
      verifiable += f;
    EXPECT_EQ(r.verified_blocks, verifiable / 4096);
    std::vector<iov::blk_zone> zones;
    ASSERT_EQ((*dev)->report_zones(0, 64, &zones), static_cast<int>(filled.size()));
    for (size_t z = 0; z < zones.size(); z++) {
      if (zones[z].type == iov::BLK_ZONE_TYPE_CONVENTIONAL)
        continue;
      EXPECT_EQ((zones[z].wp - zones[z].start) << iov::SECTOR_SHIFT, filled[z]) << "zone " << z;
    }
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

// --ioengine=memcpy: the same requests, as copies between the buffers and a
// mapping, so the device is never asked for anything (a written brd would
// hold pages), and it does not verify. Batches of 3 and of 40 (three
// prefetched windows) of blocks larger and smaller than the prefetched head.
TEST(FioRun, TheMemcpyEngineMovesTheBytesAskedForWithoutTheDriver) {
  struct shape { const char *bs, *depth, *batch; uint64_t ios; };  // ios per job: --io_size / --bs
  for (const shape& sh : {shape{"--bs=16k", "--iodepth=3", "--iodepth_batch_submit=3", 32},
                          shape{"--bs=512", "--iodepth=40", "--iodepth_batch_submit=40", 1024}}) {
    for (rw_pattern rw : {rw_pattern::randread, rw_pattern::randwrite, rw_pattern::randrw, rw_pattern::write}) {
      auto o = parse({"--driver=brd", "--size=1m", sh.bs, "--io_size=512k", sh.depth, "--numjobs=2", sh.batch,
                      "--prefill", "--ioengine=memcpy"});
      ASSERT_TRUE(o.ok()) << o.status();
      o->rw = rw;
      SCOPED_TRACE(std::string(iov::fio::rw_name(rw)) + " " + sh.bs + " " + sh.batch);
      auto dev = iov::blkdev_create(o->driver, o->settings);
      ASSERT_TRUE(dev.ok()) << dev.status();
      auto r = iov::fio::run(*o, **dev);
      EXPECT_EQ(r.error, 0) << r.error_text;
      EXPECT_EQ(r.read.ios + r.write.ios, 2u * sh.ios);
      EXPECT_EQ(r.read.clat.count(), r.read.ios);
      std::vector<iov::blk_extent> map;
      ASSERT_EQ((*dev)->map_extents(0, (1u << 20) >> 9, &map), 0);
      ASSERT_EQ(map.size(), 1u);  // the whole device one hole: nothing was written to it
      EXPECT_TRUE(map[0].flags & iov::BLK_EXTENT_HOLE);
    }
  }
  auto bad = parse({"--ioengine=memcpy", "--rw=write", "--verify=crc32c"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("does not --verify"), std::string::npos) << bad.status();
  auto unknown = parse({"--ioengine=libaio"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("blkdev or memcpy"), std::string::npos) << unknown.status();
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

// --iodepth_batch_submit: the same bytes as one at a time, an io_size that
// is not a whole number of batches included, with verify on the batched
// writes; a refused request inside a batch is reported.
TEST(FioRun, BatchesMoveTheBytesAskedForAndVerify) {
  for (const char* driver : {"brd", "null_blk"}) {
    for (rw_pattern rw : {rw_pattern::read, rw_pattern::randwrite, rw_pattern::randrw}) {
      for (iter_kind iter : {iter_kind::ubuf, iter_kind::bvec, iter_kind::fixed}) {
        auto o = parse({std::string("--driver=") + driver, "--size=1m", "--bs=4k", "--io_size=108k", "--iodepth=16",
                        "--iodepth_batch_submit=5", "--numjobs=2", "--prefill"});
        ASSERT_TRUE(o.ok()) << o.status();
        EXPECT_EQ(o->iodepth_batch, 5u);
        o->rw = rw;
        o->iter = iter;
        o->verify = rw != rw_pattern::read;
        SCOPED_TRACE(std::string(driver) + " " + iov::fio::rw_name(rw) + " " + iov::fio::iter_name(iter));
        auto r = run_case(*o);
        EXPECT_EQ(r.error, 0) << r.error_text;
        EXPECT_EQ(r.read.bytes + r.write.bytes, 2u * 108 * 1024);  // io_size per job: 27 requests, the last batch of 1
        EXPECT_EQ(r.read.ios + r.write.ios, 2u * 27);
        EXPECT_EQ(r.read.clat.count() + r.write.clat.count(), 2u * 27);
        EXPECT_FALSE(r.verify_failed) << r.verify_text;
        if (o->verify) {
          EXPECT_GT(r.verified_blocks, 0u);
        }
      }
    }
  }
  auto o = parse({"--driver=null_blk", "--zoned", "--zone_size=1", "--size=4m", "--rw=randwrite", "--iodepth=8",
                  "--iodepth_batch=8"});
  ASSERT_TRUE(o.ok()) << o.status();
  auto r = run_case(*o);
  EXPECT_NE(r.error, 0);
  EXPECT_NE(r.error_text.find("offset"), std::string::npos) << r.error_text;
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

iov_test::child_result run_fio(std::vector<std::string> args, std::function<void()> in_child = nullptr) {
  args.insert(args.begin(), IOV_FIO_PATH);
  iov_test::child_options o(args);
  o.in_child = std::move(in_child);
  return iov_test::run_child(o);
}

// Bad values end the program with status 2 and the option named, never an
// abort (they were std::bad_alloc, a segfault, or accepted).
TEST(FioProgram, BadValuesAreUsageErrors) {
  for (auto [args, text] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--iodepth=1000000"}, "--iodepth=1000000: expected a positive integer, at most 65536"},
           {{"--numjobs=65536", "--iodepth=65537"}, "--numjobs=65536"},
           {{"--runtime=nan"}, "--runtime=nan"},
           {{"--runtime=inf"}, "--runtime=inf"},
           {{"--iodepth=20000", "--iter=fixed"}, "--iter=fixed registers --numjobs x --iodepth = 20000 buffers"},
           {{"--driver=null_blk", "--memory_backed=0", "--rw=write", "--verify=crc32c"},
            "--verify=crc32c reads back what was written, but null_blk with --memory_backed=0 stores nothing"},
       }) {
    auto r = run_fio(args);
    EXPECT_EQ(iov_test::exit_code(r), 2) << args[0] << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("iov-fio: " + text));
  }
}

// MemAvailable in bytes, read here as the program should.
uint64_t meminfo(const char* key) {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f)
    return 0;
  char line[256];
  unsigned long long kib = 0;
  std::string want = std::string(key) + ": %llu kB";
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, want.c_str(), &kib) == 1)
      break;
  std::fclose(f);
  return kib * 1024;
}

// A --prefill writes the whole device, which brd and a memory-backed null_blk
// keep: beyond the memory available it is refused at once, with the number
// (it ran until killed, printing nothing). null_blk with --memory_backed=0
// keeps nothing and is not limited.
TEST(FioProgram, PrefillBeyondTheAvailableMemoryIsRefused) {
  const uint64_t total = meminfo("MemTotal");
  if (!total)
    GTEST_SKIP() << "no /proc/meminfo";
  for (auto args : std::vector<std::vector<std::string>>{
           {"--size=8388607t", "--rw=randwrite", "--runtime=1", "--prefill"},
           {"--driver=null_blk", "--size=8388607t", "--rw=read", "--runtime=1", "--prefill", "--cache_size=16"},
           {"--size=" + std::to_string(total / 4096 * 4096 + 4096), "--prefill"},
       }) {
    auto r = run_fio(args);
    EXPECT_EQ(iov_test::exit_code(r), 2) << args[0] << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("--prefill writes the whole device, --size="));
    uint64_t avail = 0;
    auto at = r.output.find("(MemAvailable: ");
    ASSERT_NE(at, std::string::npos) << r.output;
    avail = std::stoull(r.output.substr(at + 15));
    EXPECT_GT(avail, 0u);
    EXPECT_LE(avail, total) << r.output;
  }
}

// null_blk that stores nothing takes a prefill of any size; a long one shows
// its progress on stderr when asked (--progress) or on a terminal, and
// nothing when neither.
TEST(FioProgram, ALongPrefillShowsItsProgressWhenAsked) {
  const std::vector<std::string> endless = {IOV_FIO_PATH,       "--driver=null_blk", "--memory_backed=0",
                                            "--size=8388607t",  "--rw=randwrite",   "--runtime=1",
                                            "--prefill",        "--output-format=json"};
  auto shown = [](const std::string& out) { return out.find("[eta ") != std::string::npos; };
  for (bool asked : {true, false}) {
    for (auto output : {iov_test::child_output::pipe, iov_test::child_output::pty}) {
      if (!asked && output == iov_test::child_output::pty)
        continue;  // on a terminal it shows unasked: below
      iov_test::child_options o(endless);
      if (asked)
        o.argv.push_back("--progress");
      o.output = output;
      iov_test::child_process child(o);
      ASSERT_TRUE(child.started());
      bool seen = child.wait_for_output(shown, asked ? 30000 : 3000);
      EXPECT_EQ(seen, asked) << child.output();
      if (seen) {
        EXPECT_THAT(child.output(), testing::ContainsRegex(
            "Jobs: 1 \\(f=1\\): \\[I\\(1\\)\\]\\[[0-9.]+%\\]\\[w=[^]]+\\]\\[w=[^]]+ IOPS\\]\\[eta [0-9dhms:]+\\]"));
      }
    }
  }
  iov_test::child_options o(endless);
  o.output = iov_test::child_output::pty;
  iov_test::child_process child(o);
  ASSERT_TRUE(child.started());
  EXPECT_TRUE(child.wait_for_output(shown, 30000)) << "stderr on a terminal: " << child.output();
}

// Sizes far beyond memory allocate nothing up front without --verify (a
// 100 TiB run took a 3.3 GB bitmap; 1000 TiB aborted with std::bad_alloc).
TEST(FioProgram, HugeDevicesAllocateNothingUpFront) {
  for (const char* size : {"--size=100t", "--size=1000t"}) {
    auto r = run_fio({size, "--io_size=64k", "--rw=randwrite"});
    EXPECT_EQ(iov_test::exit_code(r), 0) << size << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("write: IOPS="));
    EXPECT_TRUE(iov_test::peak_rss_below(r, 256 * 1024)) << size << ": " << r.usage.ru_maxrss << " KiB";
  }
}

// A thread that cannot be created (RLIMIT_NPROC: no new process or thread
// for this user) ends the run with a clear error before any job starts; it
// once aborted with std::system_error.
TEST(FioProgram, AThreadThatCannotBeCreatedIsACleanError) {
  if (!iov_test::unprivileged_can_execute(IOV_FIO_PATH))
    GTEST_SKIP() << "user nobody cannot execute " << IOV_FIO_PATH
                 << " (a directory above it is not searchable by others)";
  auto r = run_fio({"--numjobs=4", "--size=1m"}, [] {
    iov_test::become_unprivileged();
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);  // LeakSanitizer needs a thread of its own at exit
    struct rlimit one{1, 1};
    setrlimit(RLIMIT_NPROC, &one);
  });
  EXPECT_EQ(iov_test::exit_code(r), 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("iov-fio: cannot start the thread of job 0 (of 4): Resource temporarily unavailable"));
  EXPECT_THAT(r.output, Not(HasSubstr("terminate")));
}

// Buffers that cannot be allocated (RLIMIT_AS) are an error, not a crash on
// first use (--iodepth=1000000 once segfaulted under a memory limit).
TEST(FioProgram, BuffersThatCannotBeAllocatedAreACleanError) {
  if (iov_test::kSanitized)
    GTEST_SKIP() << "a sanitizer's program reserves more address space than any limit here";
  auto r = run_fio({"--iodepth=16", "--bs=64m", "--size=1g", "--io_size=64m"}, [] {
    struct rlimit as{512u << 20, 512u << 20};  // 1 GiB of buffers asked for
    setrlimit(RLIMIT_AS, &as);
  });
  EXPECT_EQ(iov_test::exit_code(r), 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("iov-fio: out of memory for the I/O buffers (1 jobs x 16 x 67108864 bytes)"));
}
#endif

}  // namespace
