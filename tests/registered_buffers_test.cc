// Tests of include/iov/registered_buffers.hpp: the bvec tables built at
// registration, imports at every offset class checked against a ubuf import of
// the same bytes, each validation error, memory that is not the caller's
// (unmapped, PROT_NONE, read-only) refused as the kernel's pinning refuses it,
// and mlock's refusal.
#include "iov/registered_buffers.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "iov/iov.hpp"

namespace {

using ::testing::HasSubstr;

// A page-aligned arena with a patterned buffer inside it at a chosen misalignment.
struct Arena {
  explicit Arena(size_t bytes, size_t misalign) : size(bytes), mem(iov::alloc_pages(0, 9)) {
    base = reinterpret_cast<char*>(mem) + misalign;
    for (size_t k = 0; k < bytes; k++)
      base[k] = static_cast<char>((k * 7 + 3) ^ (k >> 8));
  }
  ~Arena() { iov::free_pages(mem, 9); }
  uint64_t addr(size_t off) const { return reinterpret_cast<uintptr_t>(base) + off; }
  size_t size;
  iov::page* mem;  // 2 MiB
  char* base;
};

// Reads len bytes through an iterator: the import under test, or a ubuf one.
std::vector<char> read_all(iov::iov_iter it, size_t len) {
  std::vector<char> out(len);
  EXPECT_EQ(iov::copy_from_iter(out.data(), len, &it), len);
  return out;
}

TEST(RegisteredBuffers, BvecTableIsOneEntryPerPageByDefault) {
  Arena a(3 * 4096 + 100, 1000);
  iov::buffer_table table(4);
  ::iovec v{a.base, a.size};
  ASSERT_TRUE(table.register_buffers({&v, 1}).ok());
  auto ref = table.lookup(0);
  ASSERT_TRUE(ref.ok());
  const auto& bv = (*ref)->bvec;
  // [1000, 4096) [4096, 8192) [8192, 12288) [12288, 13388)
  ASSERT_EQ(bv.size(), 4u);
  EXPECT_EQ(bv[0].bv_offset, 1000u);
  EXPECT_EQ(bv[0].bv_len, 3096u);
  EXPECT_EQ(bv[1].bv_len, 4096u);
  EXPECT_EQ(bv[1].bv_offset, 0u);
  EXPECT_EQ(bv[3].bv_len, 1100u);
  for (size_t k = 0; k < bv.size(); k++)
    EXPECT_EQ(iov::page_address(bv[k].bv_page), reinterpret_cast<char*>(a.mem) + k * 4096);
}

TEST(RegisteredBuffers, CoalescesIntoLargerFolios) {
  Arena a(200 * 1024, 512);
  iov::buffer_table table(1);
  ::iovec v{a.base, a.size};
  iov::buffer_registration_options opts;
  opts.folio_shift = 16;  // 64 KiB
  ASSERT_TRUE(table.register_buffers({&v, 1}, opts).ok());
  auto ref = table.lookup(0);
  ASSERT_TRUE(ref.ok());
  // Folios are aligned in the address space: a partial one up to the first
  // 64 KiB boundary, whole ones, and a partial one at the end.
  const auto& bv = (*ref)->bvec;
  size_t first = std::min(a.size, 65536 - a.addr(0) % 65536);
  size_t whole = (a.size - first) / 65536, tail = (a.size - first) % 65536;
  ASSERT_EQ(bv.size(), 1 + whole + (tail ? 1 : 0));
  EXPECT_EQ(bv[0].bv_len, first);
  EXPECT_EQ(bv[0].bv_offset, a.addr(0) % 4096);
  for (size_t k = 1; k <= whole; k++) {
    EXPECT_EQ(bv[k].bv_len, 65536u);
    EXPECT_EQ(bv[k].bv_offset, 0u);
    EXPECT_EQ(iov::page_address(bv[k].bv_page), a.base + first + (k - 1) * 65536);
  }
  if (tail) {
    EXPECT_EQ(bv.back().bv_len, tail);
  }
}

// Every offset class (start, inside the first page, the first page boundary,
// deep inside, the last byte, the very end) for several shapes: the import
// reads exactly what a ubuf import of the same bytes reads, and it was
// positioned without walking (iov_offset within one folio).
TEST(RegisteredBuffers, ImportsMatchUbufAtEveryOffsetClass) {
  for (size_t misalign : {0u, 1u, 1000u, 4095u}) {
    for (unsigned shift : {12u, 14u}) {
      Arena a(9 * 4096 + 77, misalign);
      iov::buffer_table table(2);
      ::iovec v[] = {{nullptr, 0}, {a.base, a.size}};
      iov::buffer_registration_options opts;
      opts.folio_shift = shift;
      ASSERT_TRUE(table.register_buffers(v, opts).ok());
      size_t first_page = 4096 - misalign % 4096;
      std::vector<size_t> offsets = {0, 1, first_page - 1, first_page, first_page + 1, 5 * 4096 + 17,
                                     a.size - 1, a.size};
      for (size_t off : offsets) {
        for (size_t len : {size_t{0}, size_t{1}, size_t{4096}, a.size - off}) {
          if (off + len > a.size)
            continue;
          SCOPED_TRACE(testing::Message() << "misalign " << misalign << " shift " << shift << " off " << off
                                          << " len " << len);
          iov::iov_iter fixed;
          auto ref = iov::import_fixed(table, 1, a.addr(off), len, iov::ITER_SOURCE, &fixed);
          ASSERT_TRUE(ref.ok()) << ref.status();
          EXPECT_EQ(fixed.type, iov::ITER_BVEC);
          EXPECT_EQ(fixed.count, len);
          EXPECT_LT(fixed.iov_offset, size_t{1} << shift);
          iov::iov_iter ubuf;
          iov::iov_iter_ubuf(&ubuf, iov::ITER_SOURCE, a.base + off, len);
          EXPECT_EQ(read_all(fixed, len), read_all(ubuf, len));
          EXPECT_EQ(read_all(fixed, len), std::vector<char>(a.base + off, a.base + off + len));
        }
      }
    }
  }
}

TEST(RegisteredBuffers, ImportForWritingLandsInTheBuffer) {
  Arena a(3 * 4096, 300);
  iov::buffer_table table(1);
  ::iovec v{a.base, a.size};
  ASSERT_TRUE(table.register_buffers({&v, 1}).ok());
  std::vector<char> data(5000, 'x');
  iov::iov_iter it;
  auto ref = iov::import_fixed(table, 0, a.addr(4000), data.size(), iov::ITER_DEST, &it);
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(iov::copy_to_iter(data.data(), data.size(), &it), data.size());
  EXPECT_EQ(std::memcmp(a.base + 4000, data.data(), data.size()), 0);
  EXPECT_NE(a.base[3999], 'x');
  EXPECT_NE(a.base[9000], 'x');
}

TEST(RegisteredBuffers, EachBadRequestIsAClearError) {
  Arena a(8192, 0);
  iov::buffer_table table(2);
  ::iovec v[] = {{a.base, a.size}, {nullptr, 0}};
  ASSERT_TRUE(table.register_buffers(v).ok());
  iov::iov_iter it, untouched;
  std::memset(&it, 0xA5, sizeof it);
  std::memcpy(&untouched, &it, sizeof it);
  struct Case {
    unsigned index;
    uint64_t addr;
    size_t len;
    unsigned dir;
    absl::StatusCode code;
    const char* text;
  } cases[] = {
      {7, a.addr(0), 1, iov::ITER_DEST, absl::StatusCode::kNotFound, "beyond the table"},
      {1, a.addr(0), 1, iov::ITER_DEST, absl::StatusCode::kNotFound, "no buffer registered at index 1"},
      {0, a.addr(0) - 1, 2, iov::ITER_DEST, absl::StatusCode::kOutOfRange, "outside buffer 0"},
      {0, a.addr(8000), 193, iov::ITER_DEST, absl::StatusCode::kOutOfRange, "outside buffer 0"},
      {0, a.addr(1), SIZE_MAX, iov::ITER_DEST, absl::StatusCode::kInvalidArgument, "overflows"},
      {0, 0, iov::MAX_RW_COUNT + 1, iov::ITER_DEST, absl::StatusCode::kInvalidArgument, "MAX_RW_COUNT"},
      {0, a.addr(0), 1, 3, absl::StatusCode::kInvalidArgument, "direction"},
  };
  for (const Case& c : cases) {
    auto ref = iov::import_fixed(table, c.index, c.addr, c.len, c.dir, &it);
    ASSERT_FALSE(ref.ok()) << c.text;
    EXPECT_EQ(ref.status().code(), c.code) << ref.status();
    EXPECT_THAT(ref.status().message(), HasSubstr(c.text));
    EXPECT_EQ(std::memcmp(&it, &untouched, sizeof it), 0) << "the iterator changed on " << c.text;
  }
}

TEST(RegisteredBuffers, DirectionMustMatchTheRegistration) {
  Arena a(4096, 0);
  iov::buffer_table table(1);
  ::iovec v{a.base, a.size};
  iov::buffer_registration_options opts;
  opts.dir = iov::IOV_REG_SOURCE;
  ASSERT_TRUE(table.register_buffers({&v, 1}, opts).ok());
  iov::iov_iter it;
  EXPECT_TRUE(iov::import_fixed(table, 0, a.addr(0), 10, iov::ITER_SOURCE, &it).ok());
  auto bad = iov::import_fixed(table, 0, a.addr(0), 10, iov::ITER_DEST, &it);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(bad.status().message(), HasSubstr("not registered for ITER_DEST"));
}

TEST(RegisteredBuffers, RegistrationErrorsChangeNothing) {
  Arena a(4096, 0);
  iov::buffer_table table(2);
  ::iovec good{a.base, 100};
  ASSERT_TRUE(table.register_buffers({&good, 1}).ok());
  ::iovec bad[][2] = {{{a.base, 10}, {nullptr, 5}},
                      {{a.base, 10}, {a.base, 0}},
                      {{a.base, 10}, {a.base, (size_t{1} << 30) + 1}},
                      {{a.base, 10}, {reinterpret_cast<void*>(UINTPTR_MAX - 100), 4096}}};
  for (auto& b : bad) {
    absl::Status s = table.register_buffers(b);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    auto ref = table.lookup(0);
    ASSERT_TRUE(ref.ok());
    EXPECT_EQ((*ref)->len, 100u);  // slot 0 kept the old buffer
    EXPECT_FALSE(table.lookup(1).ok());
  }
  ::iovec three[3] = {good, good, good};
  EXPECT_THAT(table.register_buffers(three).message(), HasSubstr("table of 2 slots"));
}

TEST(RegisteredBuffers, UnregisterWaitsForImportsInFlight) {
  Arena a(8192, 0);
  iov::buffer_table table(1);
  ::iovec v{a.base, a.size};
  ASSERT_TRUE(table.register_buffers({&v, 1}).ok());
  iov::iov_iter it;
  auto ref = iov::import_fixed(table, 0, a.addr(100), 5000, iov::ITER_SOURCE, &it);
  ASSERT_TRUE(ref.ok());
  ASSERT_TRUE(table.unregister(0).ok());
  EXPECT_FALSE(table.lookup(0).ok());
  EXPECT_EQ(table.unregister(0).code(), absl::StatusCode::kNotFound);
  // The import's bvec table is still there (ASan would report a use after free).
  EXPECT_EQ(read_all(it, 5000), std::vector<char>(a.base + 100, a.base + 5100));
  ref->reset();
  iov::rcu_barrier();
}

TEST(RegisteredBuffers, UpdateReplacesASlot) {
  Arena a(8192, 0), b(4096, 0);
  iov::buffer_table table(1);
  ::iovec v{a.base, a.size};
  ASSERT_TRUE(table.register_buffers({&v, 1}).ok());
  ::iovec w{b.base, b.size};
  ASSERT_TRUE(table.update(0, w).ok());
  iov::iov_iter it;
  EXPECT_FALSE(iov::import_fixed(table, 0, a.addr(0), 10, iov::ITER_SOURCE, &it).ok());
  EXPECT_TRUE(iov::import_fixed(table, 0, b.addr(0), 10, iov::ITER_SOURCE, &it).ok());
  EXPECT_TRUE(table.update(0, ::iovec{nullptr, 0}).ok());
  EXPECT_FALSE(table.lookup(0).ok());
  EXPECT_EQ(table.update(4, w).code(), absl::StatusCode::kNotFound);
}

// An anonymous mapping of `pages` pages, unmapped at the end of the test.
struct Mapping {
  explicit Mapping(size_t pages, int prot = PROT_READ | PROT_WRITE) : len(pages * iov::PAGE_SIZE) {
    void* p = mmap(nullptr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
  ~Mapping() {
    if (base)
      munmap(base, len);
  }
  char* page(size_t k) const { return base + k * iov::PAGE_SIZE; }
  size_t len;
  char* base;
};

// register_buffers must refuse `buf` with InvalidArgument saying `why`, and
// update() too, leaving both slots as they were.
void ExpectRefused(iov::buffer_table& table, ::iovec buf, unsigned dir, const std::string& why) {
  SCOPED_TRACE(why);
  iov::buffer_registration_options opts;
  opts.dir = dir;
  ::iovec bufs[] = {{nullptr, 0}, buf};
  absl::Status s = table.register_buffers(bufs, opts);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("buffer 1 [0x"));
  EXPECT_THAT(s.message(), HasSubstr(why));
  s = table.update(1, buf, opts);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(why));
  auto ref = table.lookup(0);
  ASSERT_TRUE(ref.ok()) << "slot 0 kept its buffer";
  EXPECT_EQ((*ref)->len, 100u);
  EXPECT_FALSE(table.lookup(1).ok()) << "slot 1 stayed empty";
}

// The kernel pins a registered buffer's pages and refuses (-EFAULT) what it
// cannot pin; registering such a range here once let an import walk frames
// near address 0 (fuzz/regressions/fuzz_imports/register-unmapped-near-null).
TEST(RegisteredBuffers, MemoryThatIsNotTheCallersIsRefused) {
  Mapping good(1), four(4), none(2, PROT_NONE), readonly(2, PROT_READ);
  ASSERT_TRUE(good.base && four.base && none.base && readonly.base);
  iov::buffer_table table(2);
  ::iovec first{good.base, 100};
  ASSERT_TRUE(table.register_buffers({&first, 1}).ok());
  ExpectRefused(table, {reinterpret_cast<void*>(1), 412653696}, iov::IOV_REG_RW, "not mapped in this process");
  ExpectRefused(table, {reinterpret_cast<void*>(0xffff800000001000), 4096}, iov::IOV_REG_SOURCE, "not mapped");
  // A hole in the middle. Made now, after the first lookups: liburcu maps its
  // reader registry on first use, and the kernel may put it in any hole.
  ASSERT_EQ(munmap(four.page(2), iov::PAGE_SIZE), 0);
  unsigned char resident;
  ASSERT_NE(mincore(four.page(2), iov::PAGE_SIZE, &resident), 0) << "the hole was mapped again";
  char hole[32];
  std::snprintf(hole, sizeof hole, "no page at 0x%lx", reinterpret_cast<unsigned long>(four.page(2)));
  ExpectRefused(table, {four.page(1) + 10, 2 * iov::PAGE_SIZE}, iov::IOV_REG_RW, hole);
  ExpectRefused(table, {four.page(2) + 4095, 2}, iov::IOV_REG_SOURCE, hole);
  ExpectRefused(table, {none.base, 10}, iov::IOV_REG_SOURCE, "not accessible memory");
  ExpectRefused(table, {readonly.base, 5000}, iov::IOV_REG_RW, "read-only memory");
  ExpectRefused(table, {readonly.base, 5000}, iov::IOV_REG_DEST, "read-only memory");

  // What is the caller's registers: both sides of the hole, and read-only
  // memory for a buffer that only supplies data.
  ::iovec before{four.base, 2 * iov::PAGE_SIZE}, after{four.page(3), iov::PAGE_SIZE};
  EXPECT_TRUE(table.update(1, before).ok());
  EXPECT_TRUE(table.update(1, after).ok());
  iov::buffer_registration_options source;
  source.dir = iov::IOV_REG_SOURCE;
  ::iovec ro{readonly.base + 7, 5000};
  ASSERT_TRUE(table.update(1, ro, source).ok());
  iov::iov_iter it;
  auto ref = iov::import_fixed(table, 1, reinterpret_cast<uintptr_t>(ro.iov_base), ro.iov_len, iov::ITER_SOURCE, &it);
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(read_all(it, ro.iov_len), std::vector<char>(ro.iov_len, 0));  // a fresh mapping reads as zeros
}

// Registration faults the pages in, as the kernel's pinning does: writable
// pages for a buffer that may receive data.
TEST(RegisteredBuffers, RegistrationFaultsThePagesIn) {
  Mapping m(16);
  ASSERT_NE(m.base, nullptr);
  unsigned char resident[16];
  ASSERT_EQ(mincore(m.base, m.len, resident), 0);
  for (unsigned char r : resident)
    ASSERT_EQ(r & 1, 0) << "a fresh mapping has no pages yet";
  iov::buffer_table table(1);
  ::iovec v{m.page(3) + 1, 8 * iov::PAGE_SIZE};
  ASSERT_TRUE(table.register_buffers({&v, 1}).ok());
  ASSERT_EQ(mincore(m.base, m.len, resident), 0);
  for (size_t k = 0; k < 16; k++)
    EXPECT_EQ(resident[k] & 1, k >= 3 && k <= 11 ? 1 : 0) << "page " << k;
}

// Without MADV_POPULATE_* (Linux before 5.14) only the mapping is checked.
TEST(RegisteredBuffers, MincoreProbeChecksTheMappingOnly) {
  Mapping good(1), none(1, PROT_NONE), gone(1);
  ASSERT_TRUE(good.base && none.base && gone.base);
  iov::internal::registration_probe_mincore_only = true;
  iov::buffer_table table(2);
  ::iovec first{good.base, 100};
  EXPECT_TRUE(table.register_buffers({&first, 1}).ok());
  EXPECT_TRUE(table.lookup(0).ok());  // liburcu maps its registry now, not into the hole below
  ASSERT_EQ(munmap(gone.base, gone.len), 0);
  ::iovec unmapped{gone.base, 10};
  gone.base = nullptr;
  ExpectRefused(table, unmapped, iov::IOV_REG_RW, "not mapped in this process");
  ::iovec inaccessible{none.base, 10};
  EXPECT_TRUE(table.update(1, inaccessible).ok()) << "PROT_NONE passes a mapping check";
  iov::internal::registration_probe_mincore_only = false;
  EXPECT_EQ(table.update(1, inaccessible).code(), absl::StatusCode::kInvalidArgument);
}

// mlock past RLIMIT_MEMLOCK: in a child without CAP_IPC_LOCK (root bypasses the limit).
TEST(RegisteredBuffers, MlockRefusalIsAClearError) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer intercepts mlock() and always succeeds";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer intercepts mlock() and always succeeds";
#endif
#endif
  Arena a(64 * 4096, 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    syscall(SYS_capget, &hdr, data);
    data[0].effective &= ~(1U << CAP_IPC_LOCK);
    syscall(SYS_capset, &hdr, data);
    struct rlimit rl{4096, 4096};
    setrlimit(RLIMIT_MEMLOCK, &rl);
    iov::buffer_table table(1);
    ::iovec v{a.base, a.size};
    iov::buffer_registration_options opts;
    opts.lock_memory = true;
    absl::Status s = table.register_buffers({&v, 1}, opts);
    bool clear = s.code() == absl::StatusCode::kResourceExhausted &&
                 std::string(s.message()).find("RLIMIT_MEMLOCK is 4096 bytes") != std::string::npos &&
                 !table.lookup(0).ok();
    if (!clear)
      fprintf(stderr, "register_buffers said: %s\n", s.ToString().c_str());
    _exit(clear ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(RegisteredBuffers, LockedRegistrationSucceedsWithinTheLimit) {
  Arena a(4 * 4096, 0);
  iov::buffer_table table(1);
  ::iovec v{a.base, a.size};
  iov::buffer_registration_options opts;
  opts.lock_memory = true;
  absl::Status s = table.register_buffers({&v, 1}, opts);
  if (!s.ok())
    GTEST_SKIP() << s;  // an unprivileged runner with a tiny RLIMIT_MEMLOCK
  auto ref = table.lookup(0);
  ASSERT_TRUE(ref.ok());
  EXPECT_TRUE((*ref)->locked);
}

}  // namespace
