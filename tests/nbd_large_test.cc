// Tests of iov-nbd's largest requests (config.hpp: max_payload, 64 MiB as
// nbdkit's; a WRITE's payload taken a 4 MiB piece at a time): a READ and a
// WRITE of the maximum over TCP, plain and with TLS (PSK), on brd and
// null_blk, each checked byte for byte; one unaligned by a byte from a
// client that negotiated no block size; the maximum advertised, and what
// happens above it. The resident size of a server with many such WRITEs
// stalled is in nbd_limits_test.cc.
//
//   build/release/tests/nbd_large_test
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>

#include "nbd/config.hpp"
#include "support/nbd_client.hpp"
#include "support/nbd_process.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

constexpr uint64_t kMax = 64 * MiB;
constexpr uint64_t kLargeDiskSize = kMax + 8 * MiB;

const driver_config kLargeDrivers[] = {
    {"brd", "brd", {}},
    {"null_blk", "null_blk", {}},
};

using large_param = std::tuple<driver_config, bool /*tls*/>;

class NbdLarge : public testing::TestWithParam<large_param> {
 protected:
  void SetUp() override {
    const auto& [d, tls] = GetParam();
    server_transport t;
    t.tcp = true;
    if (tls) {
      if (which("psktool").empty())
        GTEST_SKIP() << "psktool is not installed";
      ASSERT_EQ(run({"psktool", "-u", "alice", "-p", dir.path("keys.psk")}).status, 0);
      auto creds = iov::nbd::tls_credentials::load_psk(dir.path("keys.psk"));
      ASSERT_TRUE(creds.ok()) << creds.status();
      t.mode = iov::nbd::tls_mode::require;
      t.credentials = std::move(*creds);
      t.client.psk_file = dir.path("keys.psk");
    }
    s = std::make_unique<local_server>(d, kLargeDiskSize, iov::nbd::server_limits{}, t);
  }
  temp_dir dir;
  std::unique_ptr<local_server> s;
};

TEST_P(NbdLarge, TheMaximumIsAdvertisedAndServedBothWays) {
  export_info go;
  auto c = s->open(true, false, &go, {INFO_BLOCK_SIZE});
  ASSERT_TRUE(c);
  ASSERT_TRUE(go.max_block);
  EXPECT_EQ(*go.max_block, kMax);
  c->set_timeout_ms(120000);  // 64 MiB through TLS under a sanitizer takes a while
  std::mt19937_64 rng(64);
  const bytes d = random_data(kMax, rng);
  auto w = c->write(4 * MiB, d);
  ASSERT_TRUE(w.ok && w.error == 0) << w.problem << w.message;
  auto r = c->read(4 * MiB, kMax);
  ASSERT_TRUE(r.ok && r.error == 0) << "ok " << r.ok << " error " << r.error << " " << r.problem << r.message;
  EXPECT_TRUE(r.data == d) << "the 64 MiB READ returned other bytes";
  // Pieces of the WRITE, read back through another window of the disk.
  r = c->read(4 * MiB + 4 * MiB - 512, 1024);
  ASSERT_TRUE(r.ok && r.error == 0);
  EXPECT_TRUE(std::equal(r.data.begin(), r.data.end(), d.begin() + 4 * MiB - 512));
  // Above the maximum: a READ is refused, the session goes on.
  r = c->read(0, kMax + 4 * KiB);
  EXPECT_TRUE(r.ok && r.error == NBD_EINVAL) << r.problem;
  r = c->read(0, 4 * KiB);
  EXPECT_TRUE(r.ok && r.error == 0) << r.problem;
}

// The same from a client that negotiated no block size, a byte off every
// block boundary: the pieces' ends fall inside blocks only at the WRITE's
// own ends.
TEST_P(NbdLarge, AnUnalignedMaximumWriteFromAnyOffsetClient) {
  auto c = s->open(false);
  ASSERT_TRUE(c);
  c->set_timeout_ms(120000);
  std::mt19937_64 rng(65);
  const bytes before = random_data(2 * MiB, rng);
  ASSERT_EQ(c->write(0, before).error, 0u);
  const bytes d = random_data(kMax - 1, rng);
  auto w = c->write(1 * MiB + 1, d);
  ASSERT_TRUE(w.ok && w.error == 0) << w.problem << w.message;
  auto r = c->read(0, 1 * MiB + 1);
  ASSERT_TRUE(r.ok && r.error == 0);
  EXPECT_TRUE(std::equal(r.data.begin(), r.data.end(), before.begin())) << "the bytes before it changed";
  r = c->read(1 * MiB + 1, kMax - 1);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_TRUE(r.data == d);
}

INSTANTIATE_TEST_SUITE_P(Transports, NbdLarge, testing::Combine(testing::ValuesIn(kLargeDrivers), testing::Bool()),
                         [](const testing::TestParamInfo<large_param>& i) {
                           return std::string(std::get<0>(i.param).name) + (std::get<1>(i.param) ? "_tls" : "_tcp");
                         });

// A WRITE above the maximum: its payload may never come, and reading it
// would be the unbounded buffering the maximum is there to prevent, so the
// connection is closed; others are served.
TEST(NbdLargeRefused, AWriteAboveTheMaximumEndsThatConnection) {
  local_server s("brd", {}, 4 * MiB);
  auto c = s.open(false);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send_request(CMD_WRITE, 0, 1, 0, kMax + 4 * KiB));
  EXPECT_TRUE(c->wait_closed());
  std::mt19937_64 rng(66);
  auto good = s.open(true);
  ASSERT_TRUE(good);
  expect_served(*good, 0, rng);
}

}  // namespace
}  // namespace iov_test::nbd
