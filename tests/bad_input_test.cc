// bad_input_test.cc: the bad inputs of docs/bad-input.md that no other test
// file covers, each asserting the exact error (or count) and that nothing
// changed. The table in docs/bad-input.md names the test of every row.
//
//   ctest -R bad_input_test
//   ./bad_input_test --gtest_filter='BadInput.Registered*'
#include <sys/uio.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fio/job.hpp"
#include "iov/iov.hpp"
#include "iov/cxx/iter.hpp"
#include "iov/registered_buffers.hpp"
#include "iov_drivers/blkdev.hpp"
#include "scan/scan.hpp"

namespace {

using testing::HasSubstr;

TEST(BadInput, ImportIovecNullArrayWithSegments) {
  auto it = iov::iter::import_iovec(iov::iter_dir::dest, std::span<const ::iovec>(static_cast<const ::iovec*>(nullptr), 3));
  ASSERT_FALSE(it.ok());
  EXPECT_EQ(it.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(it.status().message(), HasSubstr("null iovec array"));
  EXPECT_TRUE(iov::iter::import_iovec(iov::iter_dir::dest, std::span<const ::iovec>()).ok());
}

TEST(BadInput, ImportUbufBadDirection) {
  char buf[16];
  auto it = iov::iter::import_ubuf(static_cast<iov::iter_dir>(2), buf, sizeof buf);
  ASSERT_FALSE(it.ok());
  EXPECT_EQ(it.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(it.status().message(), HasSubstr("direction 2"));
}

TEST(BadInput, NpagesAndExtractWithNoRoomReturnZero) {
  std::vector<char> buf(3 * iov::PAGE_SIZE);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, buf.data(), buf.size());
  EXPECT_EQ(iov::iov_iter_npages(&it, -1), 0);
  EXPECT_EQ(iov::iov_iter_npages(&it, INT_MIN), 0);
  iov::page* pages[4];
  iov::page** p = pages;
  size_t off0 = 12345;
  EXPECT_EQ(iov::iov_iter_extract_pages(&it, &p, SIZE_MAX, 0, 0, &off0), 0);
  EXPECT_EQ(it.count, buf.size()) << "maxpages 0 extracts nothing";
  EXPECT_EQ(it.iov_offset, 0u);
}

TEST(BadInput, IsZeroBeyondTheCountIsFalseAndMovesNothing) {
  std::vector<char> zeros(100, 0);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_SOURCE, zeros.data(), zeros.size());
  EXPECT_TRUE(iov::iov_iter_is_zero(&it, 100));
  EXPECT_FALSE(iov::iov_iter_is_zero(&it, 101));
  EXPECT_EQ(it.count, 100u);
  EXPECT_EQ(it.iov_offset, 0u);
}

// Registration options outside the kernel's rules, and bad slot indices.
TEST(BadInput, RegisteredBufferOptionsAndIndices) {
  std::vector<char> mem(2 * iov::PAGE_SIZE);
  iov::buffer_table table(2);
  ::iovec good{mem.data(), 100};
  ASSERT_TRUE(table.register_buffers({&good, 1}).ok());
  ::iovec other{mem.data() + 200, 300};
  struct Case {
    unsigned folio_shift, dir;
    const char* text;
  } cases[] = {
      {11, iov::IOV_REG_RW, "folio_shift 11"},
      {31, iov::IOV_REG_RW, "folio_shift 31"},
      {iov::PAGE_SHIFT, 0, "bad direction bits 0"},
      {iov::PAGE_SHIFT, 4, "bad direction bits 4"},
  };
  for (const Case& c : cases) {
    iov::buffer_registration_options o;
    o.folio_shift = c.folio_shift;
    o.dir = c.dir;
    absl::Status s = table.register_buffers({&other, 1}, o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(c.text));
    s = table.update(1, other, o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    auto ref = table.lookup(0);
    ASSERT_TRUE(ref.ok());
    EXPECT_EQ((*ref)->len, 100u) << "slot 0 unchanged";
    EXPECT_FALSE(table.lookup(1).ok()) << "slot 1 still empty";
  }
  absl::Status s = table.update(1, ::iovec{nullptr, 5});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("null base"));
  EXPECT_FALSE(table.lookup(1).ok());
  EXPECT_EQ(table.unregister(2).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(table.unregister(1).code(), absl::StatusCode::kNotFound) << "an empty slot";
  EXPECT_EQ(table.lookup(UINT_MAX).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(table.lookup(0).ok());
}

// The kernel-style io_import_fixed(): -EFAULT for every bad request, the iterator untouched.
TEST(BadInput, IoImportFixedIsEfaultAndLeavesTheIterator) {
  std::vector<char> mem(3 * iov::PAGE_SIZE);
  iov::buffer_table table(1);
  ::iovec buf{mem.data() + 10, 2 * iov::PAGE_SIZE};
  iov::buffer_registration_options o;
  o.dir = iov::IOV_REG_DEST;
  ASSERT_TRUE(table.register_buffers({&buf, 1}, o).ok());
  auto ref = table.lookup(0);
  ASSERT_TRUE(ref.ok());
  const iov::mapped_ubuf* imu = ref->get();
  const uint64_t base = imu->ubuf;
  iov::iov_iter it, untouched;
  std::memset(&it, 0x5A, sizeof it);
  std::memcpy(&untouched, &it, sizeof it);
  struct Case {
    const char* what;
    const iov::mapped_ubuf* imu;
    int ddir;
    uint64_t addr;
    size_t len;
  } cases[] = {
      {"no buffer", nullptr, iov::ITER_DEST, base, 1},
      {"direction 2", imu, 2, base, 1},
      {"direction -1", imu, -1, base, 1},
      {"not registered for ITER_SOURCE", imu, iov::ITER_SOURCE, base, 1},
      {"addr + len overflows", imu, iov::ITER_DEST, base, SIZE_MAX},
      {"len over MAX_RW_COUNT", imu, iov::ITER_DEST, 0, iov::MAX_RW_COUNT + 1},
      {"before the buffer", imu, iov::ITER_DEST, base - 1, 1},
      {"past its end", imu, iov::ITER_DEST, base + 1, buf.iov_len},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(iov::io_import_fixed(c.ddir, &it, c.imu, c.addr, c.len), -EFAULT) << c.what;
    EXPECT_EQ(std::memcmp(&it, &untouched, sizeof it), 0) << c.what;
  }
  EXPECT_EQ(iov::io_import_fixed(iov::ITER_DEST, &it, imu, base + 1, buf.iov_len - 1), 0);
  EXPECT_EQ(it.count, buf.iov_len - 1);
}

TEST(BadInput, XarrayCmpxchgAndInsertRefuseInternalEntriesAndOom) {
  iov::xarray xa;
  int a;
  ASSERT_EQ(iov::xa_store(&xa, 3, &a), nullptr);
  void* r = iov::xa_cmpxchg(&xa, 3, &a, iov::xa_mk_internal(9));
  EXPECT_TRUE(iov::xa_is_err(r));
  EXPECT_EQ(iov::xa_err(r), -EINVAL);
  EXPECT_EQ(iov::xa_load(&xa, 3), &a);
  EXPECT_EQ(iov::xa_insert(&xa, 4, iov::xa_mk_internal(9)), -EINVAL);
  EXPECT_EQ(iov::xa_load(&xa, 4), nullptr);
  // Out of memory: the first node of a new region cannot be had.
  const unsigned long far = 1UL << 40;
  iov::internal::xa_fail_next_alloc(1);
  int err = iov::xa_insert(&xa, far, &a);
  iov::internal::xa_fail_next_alloc(0);
  EXPECT_EQ(err, -ENOMEM);
  EXPECT_EQ(iov::xa_load(&xa, far), nullptr);
  EXPECT_EQ(iov::xa_load(&xa, 3), &a);
  EXPECT_EQ(iov::xa_count(&xa), 1u);
  EXPECT_EQ(iov::xa_insert(&xa, far, &a), 0) << "memory back: the same insert works";
}

TEST(BadInput, BlkdevCreateUnknownDriver) {
  auto dev = iov::blkdev_create("loop", {});
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dev.status().message(), HasSubstr("unknown driver loop"));
}

absl::StatusOr<iov::fio::job_options> parse_fio(std::vector<std::string> args) {
  args.insert(args.begin(), "iov-fio");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  return iov::fio::parse_options(static_cast<int>(argv.size()), argv.data());
}

TEST(BadInput, FioOptionsBeyondTheCommonMistakes) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--size=0"}, "--size=0: expected a positive size"},
      {{"--io_size=0"}, "--io_size=0"},
      {{"--iodepth=0"}, "--iodepth=0: expected a positive integer"},
      {{"--rwmixread=101"}, "a percentage"},
      {{"--runtime=-1"}, "a positive number of seconds"},
      {{"--runtime=0s"}, "a positive number of seconds"},
      {{"--randseed=x"}, "a non-negative integer"},
      {{"--debug-corrupt=q"}, "a byte offset"},
      {{"positional"}, "unexpected argument 'positional'"},
      {{"--bs=128m"}, "at most 64m"},
      {{"--size=8k", "--bs=4k", "--numjobs=3"}, "too small for 3 jobs"},
  };
  for (const auto& [args, text] : cases) {
    auto o = parse_fio(args);
    ASSERT_FALSE(o.ok()) << args[0];
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(o.status().message(), HasSubstr(text)) << args[0];
  }
}

TEST(BadInput, ScanBlockSizesOutOfRange) {
  iov::tools::scan_options o;
  o.block = 0;
  auto s = iov::tools::file_scanner::create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("must be positive"));
  o.block = iov::IOV_MAX_REG_BUFFER_SIZE + iov::PAGE_SIZE;
  s = iov::tools::file_scanner::create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("too large"));
}

#ifdef IOV_SCAN_PATH
int scan_exit_status(const std::string& args) {
  std::string command = IOV_SCAN_PATH;  // appended to: GCC 12 warns falsely on an operator+ chain
  command += " ";
  command += args;
  command += " >/dev/null 2>&1";
  int st = std::system(command.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(BadInput, ScanProgramUsageErrors) {
  EXPECT_EQ(scan_exit_status(""), 2) << "no FILE";
  EXPECT_EQ(scan_exit_status("--bogus=1 /dev/null"), 2) << "unknown option";
  EXPECT_EQ(scan_exit_status("--block=4q /dev/null"), 2) << "not a size";
  EXPECT_EQ(scan_exit_status("--block /dev/null"), 2) << "--block without a value";
  EXPECT_EQ(scan_exit_status("/nonexistent/file"), 1) << "a missing file";
  EXPECT_EQ(scan_exit_status("/"), 1) << "a directory";
}
#endif

}  // namespace
