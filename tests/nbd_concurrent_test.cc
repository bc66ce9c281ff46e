// Tests of iov-nbd's server (src/tools/nbd) with several connections at once,
// run in this process so that ThreadSanitizer sees the server's threads:
// clients writing disjoint ranges, reading them back and flushing, checked
// against a flat model per client and then as a whole; and clients that
// misbehave — silent, disconnecting in the middle of a WRITE's payload,
// sending garbage or bad magic — which must get the protocol's error or a
// closed connection, never a crash or a hang, while the others carry on.
// Stopping the server with clients connected ends every connection.
//
//   ctest --preset tsan -R nbd_concurrent_test
//   build/tsan/tests/nbd_concurrent_test --gtest_filter='NbdHostile*'
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <thread>
#include <vector>

#include "iov/rcu.hpp"
#include "support/nbd_client.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

// Room for a slice per client, and for 1 MiB reads at eight offsets.
constexpr uint64_t kSize = 8 * MiB;

class NbdConcurrent : public testing::TestWithParam<nbd::driver_config> {};

// Each client owns a slice of the disk: its writes, reads and flushes race
// with the others' in the server and the driver, never in the data.
TEST_P(NbdConcurrent, DisjointWritersReadBackAndFlush) {
  local_server s(GetParam(), kSize);
  constexpr int kClients = 4;
  const uint64_t slice = s.size() / kClients, unit = 4 * KiB;
  std::vector<bytes> models(kClients, bytes(slice, 0));
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; t++) {
    threads.emplace_back([&, t] {
      auto c = s.open(t % 2 == 0);
      if (!c)
        return;
      std::mt19937_64 rng(100 + t);
      bytes& model = models[t];
      const uint64_t base = t * slice;
      for (int i = 0; i < 150; i++) {
        uint64_t off = rng() % (slice / unit) * unit, len = std::min<uint64_t>(unit * (1 + rng() % 8), slice - off);
        bytes d = random_data(len, rng);
        auto w = c->write(base + off, d, i % 5 ? 0 : nbd::CMD_FLAG_FUA);
        ASSERT_TRUE(w.ok && w.error == 0) << "client " << t << ": " << w.problem;
        std::copy(d.begin(), d.end(), model.begin() + static_cast<ptrdiff_t>(off));
        off = rng() % (slice / unit) * unit, len = std::min<uint64_t>(unit * (1 + rng() % 8), slice - off);
        auto r = c->read(base + off, static_cast<uint32_t>(len));
        ASSERT_TRUE(r.ok && r.error == 0) << "client " << t << ": " << r.problem;
        ASSERT_TRUE(std::equal(r.data.begin(), r.data.end(), model.begin() + static_cast<ptrdiff_t>(off)))
            << "client " << t << " read at " << base + off;
        if (i % 10 == 0) {
          auto f = c->flush();
          ASSERT_TRUE(f.ok && f.error == 0) << "client " << t << ": flush " << f.problem;
        }
      }
      auto f = c->flush();
      EXPECT_TRUE(f.ok && f.error == 0) << f.problem;
      c->disc();
    });
  }
  for (auto& th : threads)
    th.join();
  auto c = s.open(true);
  ASSERT_TRUE(c);
  for (int t = 0; t < kClients; t++) {
    auto r = c->read(t * slice, static_cast<uint32_t>(slice));
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
    EXPECT_TRUE(r.data == models[t]) << "slice " << t << " differs from its writer's model";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Drivers, NbdConcurrent,
    testing::Values(nbd::driver_config{"brd", "brd", {}},
                    nbd::driver_config{"brd_unmap", "brd", {{"detect_zeroes", "unmap"}}},
                    nbd::driver_config{"null_blk", "null_blk", {{"blocksize", "4096"}}},
                    nbd::driver_config{"null_blk_cache", "null_blk", {{"cache_size", "1"}}}),
    nbd::driver_config_name);

// Clients that connect and say nothing, at each phase, or that never read
// their replies, while another works; then the server stops with all of
// them connected.
TEST(NbdHostile, SilentClientsNeitherBlockOthersNorTheStop) {
  local_server s("brd", {}, kSize);
  auto not_greeted = s.connect();
  auto in_options = s.connect();
  ASSERT_TRUE(in_options && in_options->greet());
  auto idle = s.open(true);
  ASSERT_TRUE(idle);
  auto half_request = s.open(false);
  ASSERT_TRUE(half_request);
  ASSERT_TRUE(half_request->send_bytes("\x25\x60\x95\x13\x00\x00", 6));
  auto not_reading = s.open(false);  // the server blocks sending replies nobody reads
  ASSERT_TRUE(not_reading);
  for (uint64_t k = 0; k < 64; k++)
    ASSERT_TRUE(not_reading->send_request(nbd::CMD_READ, 0, k, k % 8 * MiB, static_cast<uint32_t>(MiB)));
  auto worker = s.open(true);
  ASSERT_TRUE(worker);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20; i++) {
    bytes d = random_data(64 * KiB, rng);
    ASSERT_EQ(worker->write(i * 64 * KiB, d).error, 0u);
    EXPECT_EQ(worker->read(i * 64 * KiB, 64 * KiB).data, d);
  }
  s.stop();
  for (auto* c : {not_greeted.get(), in_options.get(), idle.get(), half_request.get(), not_reading.get(),
                  worker.get()})
    EXPECT_TRUE(c->wait_closed()) << "a connection outlived stop()";
}

// A WRITE whose payload stops short must not reach the disk. The half-close
// lets the test see when the server has given up on the connection.
TEST(NbdHostile, WriteThatDisconnectsMidPayloadChangesNothing) {
  local_server s("brd", {}, kSize);
  std::mt19937_64 rng(12);
  auto good = s.open(true);
  ASSERT_TRUE(good);
  bytes before = random_data(256 * KiB, rng);
  ASSERT_EQ(good->write(0, before).error, 0u);
  for (size_t sent : {size_t{0}, size_t{1}, size_t{10 * KiB}, size_t{128 * KiB - 1}}) {
    for (bool structured : {false, true}) {
      auto bad = s.open(structured);
      ASSERT_TRUE(bad);
      bytes payload(sent, 0xee);
      ASSERT_TRUE(bad->send_request(nbd::CMD_WRITE, 0, 7, 64 * KiB, 128 * KiB, payload.data(), payload.size()));
      bad->shutdown_write();
      EXPECT_TRUE(bad->wait_closed());
      auto r = good->read(0, 256 * KiB);
      ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
      EXPECT_TRUE(r.data == before) << "a torn WRITE of " << sent << " bytes reached the disk";
    }
  }
  auto torn_header = s.open(false);  // the request header itself cut short
  ASSERT_TRUE(torn_header && torn_header->send_bytes("\x25\x60\x95\x13\x00\x00\x00\x01\x00", 9));
  torn_header->shutdown_write();
  EXPECT_TRUE(torn_header->wait_closed());
  EXPECT_TRUE(good->read(0, 256 * KiB).data == before);
}

// Bytes a fuzzer might send, at each phase of the protocol, from several
// connections at once: each ends with replies or a close, and a good client
// in transmission meanwhile keeps its data.
TEST(NbdHostile, GarbageAtAnyPhaseNeverCrashesOrHangs) {
  local_server s("brd", {}, kSize);
  auto good = s.open(true);
  ASSERT_TRUE(good);
  std::mt19937_64 rng(13);
  bytes data = random_data(64 * KiB, rng);
  ASSERT_EQ(good->write(MiB, data).error, 0u);
  std::atomic<int> closed{0};
  std::vector<std::thread> threads;
  constexpr int kThreads = 3, kRounds = 12;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      std::mt19937_64 r(200 + t);
      for (int round = 0; round < kRounds; round++) {
        const int phase = round % 3;  // 0: instead of the client flags, 1: as options, 2: as requests
        auto c = phase == 2 ? s.open(round % 2) : s.connect();
        if (!c || (phase == 1 && !c->greet()))
          return ADD_FAILURE() << "connect";
        bytes junk = random_data(1 + r() % 4096, r);
        if (round % 4 == 3) {  // a valid magic first, so that the rest is read as lengths and types
          const bytes magic = phase == 1 ? bytes{'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T'} : bytes{0x25, 0x60, 0x95, 0x13};
          std::copy(magic.begin(), magic.end(), junk.begin());
          junk.resize(std::max(junk.size(), magic.size()));
        }
        c->send_bytes(junk.data(), junk.size());  // the server may close before taking it all
        c->shutdown_write();
        EXPECT_TRUE(c->wait_closed()) << "thread " << t << " round " << round;
        closed++;
      }
    });
  }
  for (int i = 0; i < 50; i++) {
    auto r = good->read(MiB, 64 * KiB);
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
    ASSERT_TRUE(r.data == data);
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(closed.load(), kThreads * kRounds);
  auto r = good->read(MiB, 64 * KiB);
  EXPECT_TRUE(r.ok && r.data == data) << r.problem;
}

// Protocol breaches on one connection close that connection only.
TEST(NbdHostile, BadMagicOrOversizedOptionClosesOnlyThatConnection) {
  local_server s("brd", {}, kSize);
  auto good = s.open(false);
  ASSERT_TRUE(good);
  auto bad_request = s.open(true);
  ASSERT_TRUE(bad_request && bad_request->send_request(nbd::CMD_READ, 0, 1, 0, 512, nullptr, 0, 0xdeadbeef));
  auto bad_option = s.connect();
  ASSERT_TRUE(bad_option && bad_option->greet() && bad_option->send_option(nbd::OPT_GO, {0, 0, 0, 0, 0, 0}, 0x0102030405060708));
  auto oversized = s.connect();
  const unsigned char head[16] = {'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T', 0, 0, 0, 7, 0x7f, 0xff, 0xff, 0xff};
  ASSERT_TRUE(oversized && oversized->greet() && oversized->send_bytes(head, sizeof head));
  for (auto* c : {bad_request.get(), bad_option.get(), oversized.get()})
    EXPECT_TRUE(c->wait_closed());
  bytes d(4 * KiB, 0x3c);
  ASSERT_EQ(good->write(0, d).error, 0u);
  EXPECT_EQ(good->read(0, 4 * KiB).data, d);
}

// A READ reply goes out from brd's pages under an RCU read-side section;
// the kernel's rule for those is never to block inside one. A client that
// stops reading must not keep grace periods from completing: every page a
// discard frees, anywhere in the process, would wait on that client.
class NbdStalledReader : public testing::TestWithParam<nbd::driver_config> {};

TEST_P(NbdStalledReader, UnreadRepliesDoNotHoldUpRcuGracePeriods) {
  local_server s(GetParam(), kSize);
  auto writer = s.open(true);
  ASSERT_TRUE(writer);
  ASSERT_EQ(writer->write(0, bytes(8 * MiB, 0x11)).error, 0u);
  auto stalled = s.open(false);
  ASSERT_TRUE(stalled);
  for (uint64_t k = 0; k < 4; k++)  // replies far larger than the socket's buffers
    ASSERT_TRUE(stalled->send_request(nbd::CMD_READ, 0, k, 0, static_cast<uint32_t>(8 * MiB)));
  pollfd p{stalled->fd(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 20000), 1) << "no reply started";  // the server is inside the first reply
  auto grace = std::async(std::launch::async, [] { iov::synchronize_rcu(); });
  const bool completed = grace.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  stalled.reset();  // the server's send fails: whatever it held is released
  grace.wait();
  EXPECT_TRUE(completed) << "a grace period waited on a client that does not read its replies";
  ASSERT_EQ(writer->trim(0, static_cast<uint32_t>(8 * MiB)).error, 0u);  // the server still serves
  EXPECT_EQ(writer->read(0, 4 * KiB).data, bytes(4 * KiB, 0));
}

// brd lends its pages to the reply; null_blk's READ goes through a buffer.
INSTANTIATE_TEST_SUITE_P(Drivers, NbdStalledReader,
                         testing::Values(nbd::driver_config{"brd", "brd", {}},
                                         nbd::driver_config{"null_blk", "null_blk", {}}),
                         nbd::driver_config_name);

// stop() while clients are in the middle of I/O: each sees its connection
// end (an error or EOF), none hangs.
TEST(NbdHostile, StopDuringIoEndsEveryConnection) {
  local_server s("null_blk", {{"cache_size", "1"}}, kSize);
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; t++) {
    threads.emplace_back([&, t] {
      auto c = s.open(t % 2);
      started++;
      if (!c)
        return;
      c->set_timeout_ms(30000);
      std::mt19937_64 rng(300 + t);
      bytes d = random_data(128 * KiB, rng);
      for (;;) {
        auto w = c->write(t * MiB, d);
        if (!w.ok)
          break;  // the server went away
        auto r = c->read(t * MiB, 128 * KiB);
        if (!r.ok)
          break;
        EXPECT_TRUE(r.data == d);
      }
    });
  }
  while (started < 3)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  s.stop();
  for (auto& th : threads)
    th.join();
}

}  // namespace
}  // namespace iov_test::nbd
