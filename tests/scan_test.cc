// Tests of iov-scan (src/tools/scan): the CRC32C and the data/zero extents of
// files it creates, dense and sparse, at blocks smaller and larger than its
// buffers, against a model that reads the file with read(2), a bitwise CRC
// and a byte loop; what is not a regular file refused (never a wrong CRC,
// never a wait on a FIFO); and the program as a child process: its output,
// flushed file by file, its memory with a huge --block, and RLIMIT_MEMLOCK.
#include "scan/scan.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/run_command.hpp"

namespace {

using ::testing::HasSubstr;

uint32_t reference_crc32c(const std::vector<unsigned char>& data) {
  uint32_t crc = ~0u;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int b = 0; b < 8; b++)
      crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return ~crc;
}

std::vector<unsigned char> read_file(const std::string& path) {
  std::vector<unsigned char> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  unsigned char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

std::vector<iov::tools::extent> reference_extents(const std::vector<unsigned char>& data, uint64_t block) {
  std::vector<iov::tools::extent> out;
  for (uint64_t off = 0; off < data.size(); off += block) {
    uint64_t n = std::min<uint64_t>(block, data.size() - off);
    bool zero = true;
    for (uint64_t k = 0; k < n; k++)
      zero &= data[off + k] == 0;
    if (!out.empty() && out.back().zero == zero)
      out.back().length += n;
    else
      out.push_back({off, n, zero});
  }
  return out;
}

class ScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/iov-scan-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // A file of `size` bytes, holes everywhere but the given (offset, length) runs of random data.
  std::string make_file(const std::string& name, uint64_t size,
                        const std::vector<std::pair<uint64_t, uint64_t>>& data_runs, bool zeros_as_data = false) {
    std::string path = dir_ + "/" + name;
    int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    std::mt19937 rng(static_cast<unsigned>(size + data_runs.size()));
    for (auto [off, len] : data_runs) {
      std::vector<unsigned char> buf(len);
      for (auto& b : buf)
        b = zeros_as_data ? 0 : static_cast<unsigned char>(rng() | 1);
      EXPECT_EQ(pwrite(fd, buf.data(), len, static_cast<off_t>(off)), static_cast<ssize_t>(len));
    }
    close(fd);
    return path;
  }

  // "123456789", whose CRC32C is the check value e3069283.
  std::string make_check_file(const std::string& name) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << "123456789";
    return path;
  }

  void expect_matches_model(const std::string& path, uint64_t block) {
    SCOPED_TRACE(path + " block " + std::to_string(block));
    auto scanner = iov::tools::file_scanner::create({.block = block, .nr_buffers = 3, .buffer_size = 64 * 1024});
    ASSERT_TRUE(scanner.ok()) << scanner.status();
    auto r = (*scanner)->scan(path);
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<unsigned char> data = read_file(path);
    EXPECT_EQ(r->size, data.size());
    EXPECT_EQ(r->crc32c, reference_crc32c(data));
    EXPECT_EQ(r->extents, reference_extents(data, block));
  }

  std::string dir_;
};

TEST_F(ScanTest, KnownCheckValue) {
  std::string path = make_check_file("check");
  auto scanner = iov::tools::file_scanner::create({});
  ASSERT_TRUE(scanner.ok());
  auto r = (*scanner)->scan(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->crc32c, 0xE3069283u);
  ASSERT_EQ(r->extents.size(), 1u);
  EXPECT_EQ(r->extents[0], (iov::tools::extent{0, 9, false}));
}

TEST_F(ScanTest, DenseFiles) {
  for (uint64_t size : {1ull, 4095ull, 4096ull, 4097ull, 200000ull, 1000000ull})
    expect_matches_model(make_file("dense" + std::to_string(size), size, {{0, size}}), 4096);
}

TEST_F(ScanTest, EmptyFile) {
  std::string path = make_file("empty", 0, {});
  auto scanner = iov::tools::file_scanner::create({});
  auto r = (*scanner)->scan(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->crc32c, 0u);
  EXPECT_TRUE(r->extents.empty());
}

TEST_F(ScanTest, SparseFilesAtSeveralBlockSizes) {
  std::string a = make_file("sparse", 3 * 1024 * 1024 + 123, {{5, 10}, {300000, 7000}, {2 * 1024 * 1024, 1}});
  std::string b = make_file("tail", 1 << 20, {{(1 << 20) - 3, 3}});
  std::string c = make_file("allhole", 777777, {});
  for (uint64_t block : {512ull, 4096ull, 65536ull, 3000ull}) {
    expect_matches_model(a, block);
    expect_matches_model(b, block);
    expect_matches_model(c, block);
  }
}

TEST_F(ScanTest, WrittenZerosAreZeroExtents) {
  std::string path = make_file("zeros", 100000, {{0, 100000}}, /*zeros_as_data=*/true);
  expect_matches_model(path, 4096);
  std::string mixed = make_file("mixed", 50000, {{0, 50000}});
  int fd = open(mixed.c_str(), O_WRONLY);
  std::vector<unsigned char> zeros(9000, 0);
  ASSERT_EQ(pwrite(fd, zeros.data(), zeros.size(), 8192), 9000);
  close(fd);
  expect_matches_model(mixed, 4096);
  expect_matches_model(mixed, 512);
}

// Blocks larger than the 64 KiB buffers span several reads: a block is zero
// only if every piece of it is.
TEST_F(ScanTest, BlocksLargerThanTheBuffers) {
  std::string late = make_file("late-data", 3 * 1024 * 1024 + 5, {{70000, 1}, {2 * 1024 * 1024 + 65536, 100}});
  std::string dense = make_file("dense", 500000, {{0, 500000}});
  std::string zeros = make_file("zeros", 300000, {{0, 300000}}, /*zeros_as_data=*/true);
  for (uint64_t block : {65537ull, 100000ull, 1ull << 20, 3ull << 20, 1ull << 30}) {
    expect_matches_model(late, block);
    expect_matches_model(dense, block);
    expect_matches_model(zeros, block);
  }
}

// The registered buffers are sized from the file (a page for a 9-byte file),
// never from --block: a 1 GiB block once meant four 1 GiB buffers.
TEST_F(ScanTest, BuffersAreSizedFromTheFileNotTheBlock) {
  std::string nine = make_check_file("nine");
  std::string big = make_file("big", 3 * 1024 * 1024, {{0, 3 * 1024 * 1024}});
  auto scanner = iov::tools::file_scanner::create({.block = 1ull << 30});
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  EXPECT_EQ((*scanner)->registered_buffer_size(), 0u) << "nothing before the first read";
  auto r = (*scanner)->scan(nine);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*scanner)->registered_buffer_size(), iov::PAGE_SIZE);
  EXPECT_EQ(r->extents, (std::vector<iov::tools::extent>{{0, 9, false}}));
  r = (*scanner)->scan(big);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*scanner)->registered_buffer_size(), 1u << 20) << "the default cap";
  EXPECT_EQ(r->crc32c, reference_crc32c(read_file(big)));
  EXPECT_EQ(r->extents, (std::vector<iov::tools::extent>{{0, 3 * 1024 * 1024, false}}));
}

// What is not a regular file is refused before it is read: a device, a FIFO
// (whose open would wait for a writer), a socket, a directory; a file whose
// length is not its size (/proc, /sys) is an error, never a wrong CRC.
TEST_F(ScanTest, WhatIsNotARegularFileIsRefused) {
  auto scanner = iov::tools::file_scanner::create({});
  ASSERT_TRUE(scanner.ok());
  std::string fifo = dir_ + "/fifo", sock = dir_ + "/sock", blk = dir_ + "/blk";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock.c_str());
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/zero", "a character device"}, {fifo, "a FIFO"}, {sock, "a socket"}, {dir_, "Is a directory"}};
  if (mknod(blk.c_str(), S_IFBLK | 0600, makedev(7, 200)) == 0)  // root only; never opened
    cases.push_back({blk, "a block device"});
  for (const auto& [path, what] : cases) {
    auto r = (*scanner)->scan(path);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(path + ": " + what));
  }
  close(s);
  auto proc = (*scanner)->scan("/proc/self/maps");  // size 0, yet it has contents
  ASSERT_FALSE(proc.ok());
  EXPECT_EQ(proc.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(proc.status().message(), HasSubstr("has more than its size of 0 bytes"));
  const char* sys = "/sys/kernel/mm/transparent_hugepage/enabled";  // size 4096, shorter contents
  struct stat sb;
  if (stat(sys, &sb) == 0 && sb.st_size == 4096) {
    auto r = (*scanner)->scan(sys);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("before its size"));
  }
}

TEST_F(ScanTest, HolesAreNotRead) {
  std::string path = make_file("big-hole", 64 * 1024 * 1024, {{4096, 4096}});
  struct stat sb;
  ASSERT_EQ(stat(path.c_str(), &sb), 0);
  if (static_cast<uint64_t>(sb.st_blocks) * 512 >= 1024 * 1024)
    GTEST_SKIP() << "this file system does not keep holes";
  auto scanner = iov::tools::file_scanner::create({});
  auto r = (*scanner)->scan(path);
  ASSERT_TRUE(r.ok());
  EXPECT_LT(r->bytes_read, 1024u * 1024);
  ASSERT_EQ(r->extents.size(), 3u);
  EXPECT_EQ(r->extents[1], (iov::tools::extent{4096, 4096, false}));
}

TEST_F(ScanTest, MissingFileIsAnError) {
  auto scanner = iov::tools::file_scanner::create({});
  auto r = (*scanner)->scan(dir_ + "/nope");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("No such file"), std::string::npos);
  EXPECT_FALSE((*scanner)->scan(dir_).ok());  // a directory
}

#ifdef IOV_SCAN_PATH
// RLIMIT_MEMLOCK without CAP_IPC_LOCK, which bypasses it: in a child, before exec.
// io_uring charges the rings to the real user's total, which every process of
// that user without CAP_IPC_LOCK shares (another test run's iov-scan, say);
// as root the child takes a real uid of its own, so that the total is its
// alone (the effective uid stays 0: files and capabilities are unchanged).
void limit_memlock(rlim_t bytes) {
  if (geteuid() == 0) {
    uid_t own = 0x7ffe0000u + static_cast<uid_t>(getpid() & 0xffff);
    setresuid(own, 0, 0);
  }
  iov_test::drop_capability(CAP_IPC_LOCK);
  struct rlimit rl{bytes, bytes};
  setrlimit(RLIMIT_MEMLOCK, &rl);
}

// A FIFO without a writer: refused at once (opened O_NONBLOCK, or not at all),
// and the next file is still scanned.
TEST_F(ScanTest, ProgramNeverWaitsOnAFifo) {
  std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string nine = make_check_file("nine");
  auto r = iov_test::run_child(iov_test::child_options({IOV_SCAN_PATH, fifo, nine}), 20000);
  ASSERT_FALSE(r.timed_out) << "iov-scan waited on the FIFO";
  EXPECT_EQ(iov_test::exit_code(r), 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("iov-scan: " + fifo + ": a FIFO; iov-scan reads regular files only"));
  EXPECT_THAT(r.output, HasSubstr(nine + ":\ncrc32c: e3069283\n0 9 data\n"));
}

// Each file's lines reach stdout (a file here) as soon as it is done: while
// iov-scan waits to open the next file (held by a lease: open waits for its
// holder), the first file's result is already there, and survives SIGKILL.
TEST_F(ScanTest, ProgramFlushesEachFileAsItIsDone) {
  std::string nine = make_check_file("nine");
  std::string held = make_file("held", 100, {{0, 100}});
  std::string out = dir_ + "/out";
  auto old_sigio = signal(SIGIO, SIG_IGN);  // the lease break's notice
  int fd = open(held.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  if (fcntl(fd, F_SETLEASE, F_WRLCK) != 0) {
    close(fd);
    signal(SIGIO, old_sigio);
    GTEST_SKIP() << "no file lease here: " << std::strerror(errno);
  }
  iov_test::child_options o({IOV_SCAN_PATH, nine, held});
  o.output = iov_test::child_output::file;
  o.stdout_file = out;
  iov_test::child_process child(o);
  ASSERT_TRUE(child.started());
  const std::string first = nine + ":\ncrc32c: e3069283\n0 9 data\n";
  std::string seen;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       seen != first && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    seen = ss.str();
  }
  EXPECT_EQ(seen, first) << "the first file's result was not flushed while the second was pending";
  child.kill(SIGKILL);
  auto r = child.finish(10000);
  EXPECT_TRUE(WIFSIGNALED(r.status)) << "iov-scan did not wait for the lease: " << r.output;
  fcntl(fd, F_SETLEASE, F_UNLCK);
  close(fd);
  signal(SIGIO, old_sigio);
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), first);
}

// --block=1g on a 9-byte file: one page of buffers, not four 1 GiB ones
// (which took 10 s and 4.2 GB).
TEST_F(ScanTest, ProgramWithAHugeBlockUsesLittleMemory) {
  std::string nine = make_check_file("nine");
  auto r = iov_test::run_child(iov_test::child_options({IOV_SCAN_PATH, "--block=1g", nine}));
  EXPECT_EQ(iov_test::exit_code(r), 0) << r.output;
  EXPECT_EQ(r.output, "crc32c: e3069283\n0 9 data\n");
  EXPECT_TRUE(iov_test::peak_rss_below(r, 256 * 1024)) << r.usage.ru_maxrss << " KiB";
  r = iov_test::run_child(iov_test::child_options({IOV_SCAN_PATH, "--block=2g", nine}));
  EXPECT_EQ(iov_test::exit_code(r), 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--block=2g: must be 1 byte to 1g"));
}

// io_uring charges its rings and registered buffers to RLIMIT_MEMLOCK without
// CAP_IPC_LOCK: a limit too small says so, and a small one shrinks the
// buffers (the CRC stays right).
TEST_F(ScanTest, ProgramExplainsTheMemlockLimit) {
  std::string big = make_file("big", 3 * 1024 * 1024 + 7, {{0, 3 * 1024 * 1024 + 7}});
  iov_test::child_options o({IOV_SCAN_PATH, big});
  o.in_child = [] { limit_memlock(0); };
  auto r = iov_test::run_child(o);
  EXPECT_EQ(iov_test::exit_code(r), 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Cannot allocate memory; io_uring charges"));
  EXPECT_THAT(r.output, HasSubstr("to RLIMIT_MEMLOCK (0 bytes"));
  EXPECT_THAT(r.output, HasSubstr("ulimit -l"));
  char expect[64];
  std::snprintf(expect, sizeof expect, "crc32c: %08x\n0 %d data\n", reference_crc32c(read_file(big)),
                3 * 1024 * 1024 + 7);
  o.in_child = [] { limit_memlock(96 * 1024); };
  r = iov_test::run_child(o);
  EXPECT_EQ(iov_test::exit_code(r), 0) << r.output;
  EXPECT_EQ(r.output, expect);
}

TEST_F(ScanTest, ProgramPrintsTheContractFormat) {
  std::string a = make_file("one", 10000, {{0, 10000}});
  std::string b = make_file("two", 3 * 4096, {{4096, 4096}});
  std::vector<unsigned char> da = read_file(a), db = read_file(b);
  char expect[512];
  std::snprintf(expect, sizeof expect,
                "%s:\ncrc32c: %08x\n0 10000 data\n%s:\ncrc32c: %08x\n0 4096 zero\n4096 4096 data\n8192 4096 zero\n",
                a.c_str(), reference_crc32c(da), b.c_str(), reference_crc32c(db));
  int status = 0;
  EXPECT_EQ(iov_test::run_command(std::string(IOV_SCAN_PATH) + " " + a + " " + b, &status), expect);
  EXPECT_EQ(status, 0);
  std::snprintf(expect, sizeof expect, "crc32c: %08x\n0 10000 data\n", reference_crc32c(da));
  EXPECT_EQ(iov_test::run_command(std::string(IOV_SCAN_PATH) + " --block=512 " + a, &status), expect);
  iov_test::run_command(std::string(IOV_SCAN_PATH) + " " + dir_ + "/missing 2>/dev/null", &status);
  EXPECT_NE(status, 0);
  iov_test::run_command(std::string(IOV_SCAN_PATH) + " --block=0 " + a + " 2>/dev/null", &status);
  EXPECT_NE(status, 0);
}

// "--" ends the options, as getopt's: a file named "-x" or "--block=4k" is
// scanned after it, and before it is an unknown option that says so; an
// option without its value says which value it needs.
TEST_F(ScanTest, ProgramTakesDoubleDashAndNamesTheFault) {
  make_check_file("-x");
  make_check_file("--block=4k");
  const std::string in_dir = "cd '" + dir_ + "' && " + IOV_SCAN_PATH + " ";
  int status = 0;
  EXPECT_EQ(iov_test::run_command(in_dir + "-- -x", &status), "crc32c: e3069283\n0 9 data\n");
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(iov_test::run_command(in_dir + "--block=1 -- --block=4k -x 2>&1", &status),
            "--block=4k:\ncrc32c: e3069283\n0 9 data\n-x:\ncrc32c: e3069283\n0 9 data\n");
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::string out = iov_test::run_command(in_dir + "-x 2>&1", &status);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_THAT(out, HasSubstr("iov-scan: unknown option -x (a FILE whose name starts with '-' goes after --)\n"));
  out = iov_test::run_command(in_dir + "--block -x 2>&1", &status);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_THAT(out, HasSubstr("iov-scan: --block needs a value: --block=SIZE\n"));
  out = iov_test::run_command(in_dir + "--blocks=4k -- -x 2>&1", &status);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_THAT(out, HasSubstr("iov-scan: unknown option --blocks\n"));
  out = iov_test::run_command(in_dir + "-- --help 2>&1", &status);
  EXPECT_EQ(WEXITSTATUS(status), 1) << "a file named --help, which is missing";
  EXPECT_THAT(out, HasSubstr("iov-scan: --help: No such file or directory"));
}
#endif

}  // namespace
