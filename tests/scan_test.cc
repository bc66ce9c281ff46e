// Tests of iov-scan (src/tools/scan): the CRC32C and the data/zero extents of
// files it creates, dense and sparse, against a model that reads the file with
// read(2), a bitwise CRC and a byte loop; and the installed program's output.
#include "scan/scan.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "support/run_command.hpp"

namespace {

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
  std::string path = dir_ + "/check";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fputs("123456789", f);
  std::fclose(f);
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
#endif

}  // namespace
