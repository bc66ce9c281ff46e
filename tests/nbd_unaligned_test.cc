// Tests of iov-nbd's minimum block size 1 (src/tools/nbd/transmission.cc,
// block_writer.hpp): a client that negotiated no block size
// (NBD_OPT_EXPORT_NAME, or GO without NBD_INFO_BLOCK_SIZE) may use any
// offset and length, as the protocol's "Size constraints" say a server
// SHOULD allow. READ, WRITE, WRITE_ZEROES and TRIM at byte offsets and
// lengths, below, across and far beyond one logical block (inline payloads
// and large ones), checked byte for byte against a flat model of the disk,
// on every memory-backed driver configuration (512- and 4096-byte blocks),
// with simple and structured replies. A client that did ask for the block
// sizes keeps the minimum it was told (nbd_protocol_test.cc). Writers racing
// on one block: nbd_unaligned_concurrent_test.cc.
//
//   build/release/tests/nbd_unaligned_test --gtest_filter='*null_blk_4k*'
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>

#include "support/nbd_client.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

constexpr uint64_t kDiskSize = 2 * MiB;

const driver_config kDrivers[] = {
    {"brd", "brd", {}},
    {"null_blk", "null_blk", {}},
    {"null_blk_cache", "null_blk", {{"cache_size", "1"}}},
    {"null_blk_4k", "null_blk", {{"blocksize", "4096"}}},
};

// How the client entered transmission without block sizes.
enum class entry { export_name, go_simple, go_structured };
const char* entry_name(entry e) {
  return e == entry::export_name ? "export_name" : e == entry::go_simple ? "go_simple" : "go_structured";
}

using param = std::tuple<driver_config, entry>;

class NbdUnaligned : public testing::TestWithParam<param> {
 protected:
  void SetUp() override {
    const auto& [d, e] = GetParam();
    s = std::make_unique<local_server>(d, kDiskSize);
    if (e == entry::export_name) {
      c = s->connect();
      ASSERT_TRUE(c && c->greet());
      ASSERT_TRUE(c->opt_export_name("").ok) << c->last_error();
    } else {
      c = s->open(e == entry::go_structured);
      ASSERT_TRUE(c);
    }
    model.assign(kDiskSize, 0);
  }

  void write(uint64_t off, uint64_t len, std::mt19937_64& rng) {
    bytes d(len);
    for (auto& b : d)
      b = static_cast<unsigned char>(rng());
    auto w = c->write(off, d, rng() % 4 ? 0 : CMD_FLAG_FUA);
    ASSERT_TRUE(w.ok && w.error == 0) << "WRITE " << off << "+" << len << ": " << w.problem << w.message;
    std::copy(d.begin(), d.end(), model.begin() + static_cast<ptrdiff_t>(off));
  }
  void write_zeroes(uint64_t off, uint64_t len, uint16_t flags) {
    auto w = c->write_zeroes(off, len, flags);
    ASSERT_TRUE(w.ok && w.error == 0) << "WRITE_ZEROES " << off << "+" << len << ": " << w.problem << w.message;
    std::fill_n(model.begin() + static_cast<ptrdiff_t>(off), len, 0);
  }
  // TRIM may discard the range or not: every byte in it reads as before or
  // as zero afterwards (and the model takes what is read), every byte
  // outside it is untouched.
  void trim(uint64_t off, uint64_t len) {
    auto t = c->trim(off, len);
    ASSERT_TRUE(t.ok && t.error == 0) << "TRIM " << off << "+" << len << ": " << t.problem;
    auto r = c->read(off, len);
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
    for (uint64_t k = 0; k < len; k++) {
      ASSERT_TRUE(r.data[k] == model[off + k] || r.data[k] == 0) << "byte " << off + k << " after TRIM";
      model[off + k] = r.data[k];
    }
  }
  void expect_read(uint64_t off, uint64_t len) {
    auto r = c->read(off, len);
    ASSERT_TRUE(r.ok && r.error == 0) << "READ " << off << "+" << len << ": " << r.problem << r.message;
    ASSERT_EQ(r.data.size(), len);
    for (uint64_t k = 0; k < len; k++)
      ASSERT_EQ(r.data[k], model[off + k]) << "READ " << off << "+" << len << ": byte " << off + k;
  }
  void expect_disk() {
    for (uint64_t off = 0; off < kDiskSize; off += 512 * KiB)
      expect_read(off, 512 * KiB);
  }

  std::unique_ptr<local_server> s;
  std::unique_ptr<client> c;
  bytes model;
};

// Byte offsets and lengths chosen so that a request starts and ends inside,
// at and across block boundaries: one byte, a block's worth less or more
// one, several blocks, an inline payload's worth, and more than the inline
// payload (received into memory of its own).
TEST_P(NbdUnaligned, EveryCommandAtAnyByteMatchesAFlatModel) {
  std::mt19937_64 rng(27);
  const uint64_t lengths[] = {1, 2, 7, 511, 513, 4095, 4097, 9000, 65 * KiB + 3, 200 * KiB + 1};
  for (int i = 0; i < 120; i++) {
    const uint64_t len = lengths[rng() % std::size(lengths)];
    const uint64_t off = rng() % (kDiskSize - len + 1);
    switch (rng() % 6) {
      case 0:
      case 1:
        ASSERT_NO_FATAL_FAILURE(write(off, len, rng));
        break;
      case 2:
        ASSERT_NO_FATAL_FAILURE(write_zeroes(off, len, rng() % 2 ? CMD_FLAG_NO_HOLE : 0));
        break;
      case 3:
        ASSERT_NO_FATAL_FAILURE(trim(off, len));
        break;
      default:
        ASSERT_NO_FATAL_FAILURE(expect_read(off, len));
    }
  }
  expect_disk();
}

// The edges: the first and last byte of the disk, a byte either side of a
// block boundary, and a request running to the very end.
TEST_P(NbdUnaligned, TheDisksEdgesAndBlockBoundaries) {
  std::mt19937_64 rng(28);
  ASSERT_NO_FATAL_FAILURE(write(0, 1, rng));
  ASSERT_NO_FATAL_FAILURE(write(kDiskSize - 1, 1, rng));
  ASSERT_NO_FATAL_FAILURE(write(4095, 2, rng));
  ASSERT_NO_FATAL_FAILURE(write(511, 2, rng));
  ASSERT_NO_FATAL_FAILURE(write(kDiskSize - 4097, 4097, rng));
  ASSERT_NO_FATAL_FAILURE(write_zeroes(kDiskSize - 3, 2, 0));
  ASSERT_NO_FATAL_FAILURE(expect_read(0, 1));
  ASSERT_NO_FATAL_FAILURE(expect_read(kDiskSize - 1, 1));
  ASSERT_NO_FATAL_FAILURE(expect_read(4094, 4));
  ASSERT_NO_FATAL_FAILURE(expect_read(kDiskSize - 5000, 5000));
  ASSERT_NO_FATAL_FAILURE(expect_read(3, 0));  // nothing, at an odd offset
  // Past the end is still refused, by a byte.
  EXPECT_EQ(c->read(kDiskSize - 1, 2).error, NBD_EINVAL);
  EXPECT_EQ(c->write(kDiskSize - 1, bytes(2, 1)).error, NBD_ENOSPC);
  EXPECT_EQ(c->write_zeroes(kDiskSize, 1).error, NBD_ENOSPC);
  expect_disk();
}

// A WRITE of a few bytes inside one block reads the rest of the block back
// from the device: what another connection wrote there before is kept.
TEST_P(NbdUnaligned, APartialBlockKeepsWhatAnotherClientWrote) {
  std::mt19937_64 rng(29);
  auto aligned = s->open(true, false, nullptr, {INFO_BLOCK_SIZE});
  ASSERT_TRUE(aligned);
  bytes block = random_data(8 * KiB, rng);
  ASSERT_EQ(aligned->write(64 * KiB, block).error, 0u);
  std::copy(block.begin(), block.end(), model.begin() + 64 * KiB);
  ASSERT_NO_FATAL_FAILURE(write(64 * KiB + 100, 3, rng));
  ASSERT_NO_FATAL_FAILURE(write_zeroes(64 * KiB + 4090, 12, 0));
  auto r = aligned->read(64 * KiB, 8 * KiB);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_TRUE(std::equal(r.data.begin(), r.data.end(), model.begin() + 64 * KiB));
}

INSTANTIATE_TEST_SUITE_P(
    Drivers, NbdUnaligned,
    testing::Combine(testing::ValuesIn(kDrivers),
                     testing::Values(entry::export_name, entry::go_simple, entry::go_structured)),
    [](const testing::TestParamInfo<param>& i) {
      return std::string(std::get<0>(i.param).name) + "_" + entry_name(std::get<1>(i.param));
    });

}  // namespace
}  // namespace iov_test::nbd
