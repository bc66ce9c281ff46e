// Tests of iov-nbd's WRITE path (src/tools/nbd/transmission.cc,
// write_payload.hpp, page_payload.hpp): a WRITE cut at any byte of its
// payload (the client gone) leaves the disk as it was, for a payload held in
// the input buffer and for one received straight into pages (brd), or into
// a mapping (null_blk).
//
//   ctest -R nbd_write_test
//   IOV_TEST_EXHAUSTIVE=1 ctest -R nbd_write_test   # every byte, for every driver
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "support/child_process.hpp"
#include "support/exhaustive.hpp"
#include "support/nbd_client.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

constexpr uint64_t kPage = 4 * KiB;

// A WRITE starting and ending inside pages, so that each part of the path
// (the partial page at each end, the whole pages between) is cut.
struct write_shape {
  const char* name;
  uint64_t offset, length;
  uint64_t step;  // cut every step bytes (1: every byte), and around every page boundary
};
struct cut_case {
  nbd::driver_config driver;
  uint64_t inline_step;  // the inline shape's cut step for this driver (kBrdInlineStep, kNullBlkInlineStep)
};
// Inline: held whole in the input buffer. Large: above kInlinePayload, received into its pages.
constexpr write_shape kInline{"inline", 3584, 512 + kPage + 512, 1};
constexpr write_shape kLarge{"large", 1536, 2560 + 17 * kPage + 1024, 1021};

std::vector<uint64_t> cuts(const write_shape& w, uint64_t step) {
  std::vector<uint64_t> at;
  for (uint64_t k = 0; k < w.length; k += step)
    at.push_back(k);
  for (uint64_t b = kPage - w.offset % kPage; b < w.length; b += kPage)
    for (uint64_t k : {b - 1, b, b + 1})
      at.push_back(k);
  at.push_back(w.length - 1);
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

class NbdWriteCut : public testing::TestWithParam<cut_case> {};

TEST_P(NbdWriteCut, AtAnyByteOfThePayloadChangesNothing) {
  local_server s(GetParam().driver, 1 * MiB);
  std::mt19937_64 rng(31);
  auto good = s.open(true);
  ASSERT_TRUE(good);
  const bytes before = random_data(256 * KiB, rng);
  ASSERT_EQ(good->write(0, before).error, 0u);
  for (const write_shape* shape : {&kInline, &kLarge}) {
    const write_shape& w = *shape;
    const bytes payload = random_data(w.length, rng);
    for (uint64_t sent : cuts(w, shape == &kInline ? GetParam().inline_step : w.step)) {
      auto bad = s.open(sent % 2 == 0);
      ASSERT_TRUE(bad);
      ASSERT_TRUE(bad->send_request(nbd::CMD_WRITE, 0, 9, w.offset, w.length, payload.data(), sent));
      bad->shutdown_write();
      ASSERT_TRUE(bad->wait_closed()) << w.name << " cut at " << sent;
      auto r = good->read(0, 256 * KiB);
      ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
      ASSERT_TRUE(r.data == before) << "a " << w.name << " WRITE cut after " << sent
                                    << " payload bytes reached the disk";
    }
    // And the whole of it arrives.
    ASSERT_EQ(good->write(w.offset, payload).error, 0u) << w.name;
    auto r = good->read(w.offset, w.length);
    EXPECT_TRUE(r.data == payload) << w.name;
    ASSERT_EQ(good->write(0, before).error, 0u);
  }
}

// brd: every 3rd byte in the release run; under a sanitizer (20x slower a
// cut) every 11th, still with each page boundary and the bytes either side,
// which is what its checks need (3 and 11 are prime to the 8- and 512-byte
// units, so the cuts fall at every offset within them). null_blk: every 7th,
// every 23rd under a sanitizer. IOV_TEST_EXHAUSTIVE=1: every byte, for both.
const uint64_t kBrdInlineStep = exhaustive() ? 1 : kSanitized ? 11 : 3;
const uint64_t kNullBlkInlineStep = exhaustive() ? 1 : kSanitized ? 23 : 7;
INSTANTIATE_TEST_SUITE_P(Drivers, NbdWriteCut,
                         testing::Values(cut_case{{"brd", "brd", {}}, kBrdInlineStep},
                                         cut_case{{"null_blk", "null_blk", {}}, kNullBlkInlineStep}),
                         [](const testing::TestParamInfo<cut_case>& i) { return std::string(i.param.driver.name); });

}  // namespace
}  // namespace iov_test::nbd
