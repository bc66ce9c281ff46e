// Tests of iov-nbd's limits (src/tools/nbd/config.hpp) with the server in
// this process, so that ThreadSanitizer sees its threads: connections beyond
// the limit closed at once; the handshake, request and idle timeouts; WRITE
// payloads sharing the payload memory, waiting for it when it is spent and
// reserving nothing for a header alone beyond it. Each while a well-behaved
// client keeps being served. The program under exhausted resources (memory
// and descriptor limits, the resident size) is in nbd_limits_test.cc.
//
//   ctest --preset tsan -R nbd_limits_concurrent
//   build/tsan/tests/nbd_limits_concurrent_test --gtest_filter='NbdLimits.Payload*'
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "support/nbd_client.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

// The server ended the connection without sending a byte.
bool closed_without_greeting(client& c) {
  unsigned char b;
  return !c.recv_exact(&b, 1) && c.last_error() != "timed out waiting for the server";
}

// The server hung up (within 20 s), whatever it had queued for us: POLLHUP
// comes without reading, so a client that never reads can be checked.
bool hung_up(const client& c) {
  pollfd p{c.fd(), POLLRDHUP, 0};
  return poll(&p, 1, 20000) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR));
}

// Sends bytes one at a time every 100 ms until told to stop or refused.
class trickler {
 public:
  trickler(client& c, bytes b) : thread_([this, &c, b] {
      for (size_t k = 0; k < b.size() && !stop_; k++) {
        if (!c.send_bytes(&b[k], 1))
          return;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }) {}
  ~trickler() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(NbdLimits, ConnectionsBeyondTheLimitAreClosedAtOnce) {
  iov::nbd::server_limits lim;
  lim.max_connections = 4;
  local_server s("brd", {}, 4 * MiB, lim);
  std::mt19937_64 rng(21);
  auto good = s.open(true);
  ASSERT_TRUE(good);
  std::vector<std::unique_ptr<client>> held;
  for (int k = 0; k < 3; k++) {
    held.push_back(s.connect());
    ASSERT_TRUE(held.back() && held.back()->greet());
  }
  for (int k = 0; k < 5; k++) {
    auto extra = s.connect();  // the kernel takes it; the server closes it
    ASSERT_TRUE(extra);
    EXPECT_TRUE(closed_without_greeting(*extra)) << extra->last_error();
  }
  EXPECT_EQ(s.stats().refused, 5u);
  EXPECT_EQ(s.stats().connections, 4u);
  expect_served(*good, 0, rng);
  held.pop_back();  // a place frees up
  ASSERT_TRUE(eventually([&] { return s.stats().connections == 3; }));
  auto next = s.connect();
  ASSERT_TRUE(next && next->greet()) << "a client after one left is served: " << next->last_error();
  expect_served(*good, 64 * KiB, rng);
}

TEST(NbdLimits, HandshakeTimeoutClosesSilentAndSlowNegotiations) {
  iov::nbd::server_limits lim;
  lim.handshake_timeout = 1;
  local_server s("brd", {}, 4 * MiB, lim);
  std::mt19937_64 rng(22);
  auto good = s.open(true);
  ASSERT_TRUE(good);
  auto silent = s.connect();
  auto in_options = s.connect();
  auto slow = s.connect();
  ASSERT_TRUE(silent && in_options && in_options->greet() && slow && slow->greet());
  trickler go(*slow, client::go_payload("", {}));  // a GO a byte at a time: never in time
  for (client* c : {silent.get(), in_options.get(), slow.get()})
    EXPECT_TRUE(c->wait_closed()) << "a negotiation outlived --handshake-timeout";
  expect_served(*good, 0, rng);
  // The loop counts a connection out just after closing its socket, so the
  // count may trail what the client saw.
  EXPECT_TRUE(eventually([&] { return s.stats().connections == 1u; })) << s.stats().connections;
}

// Stalled requests and unread replies are ended; a client that merely waits
// between requests is not (idle_timeout is 0 by default).
TEST(NbdLimits, RequestTimeoutEndsStalledRequestsButNotIdleClients) {
  iov::nbd::server_limits lim;
  lim.request_timeout = 1;
  local_server s("brd", {}, 16 * MiB, lim);
  std::mt19937_64 rng(23);
  auto good = s.open(true);
  auto idle = s.open(true);
  auto half_header = s.open(false);
  auto short_payload = s.open(false);
  auto slow_payload = s.open(false);
  auto not_reading = s.open(false);
  ASSERT_TRUE(good && idle && half_header && short_payload && slow_payload && not_reading);
  ASSERT_TRUE(half_header->send_bytes("\x25\x60\x95\x13\x00\x00\x00\x01", 8));
  bytes payload(100 * KiB, 0x5c);
  ASSERT_TRUE(short_payload->send_request(nbd::CMD_WRITE, 0, 1, 0, static_cast<uint32_t>(MiB), payload.data(),
                                          payload.size()));
  ASSERT_TRUE(slow_payload->send_request(nbd::CMD_WRITE, 0, 1, 0, static_cast<uint32_t>(16 * KiB)));
  trickler slowly(*slow_payload, bytes(16 * KiB, 0x5d));
  for (uint64_t k = 0; k < 4; k++)
    ASSERT_TRUE(not_reading->send_request(nbd::CMD_READ, 0, k, 0, static_cast<uint32_t>(8 * MiB)));
  for (client* c : {half_header.get(), short_payload.get(), slow_payload.get(), not_reading.get()})
    EXPECT_TRUE(hung_up(*c)) << "a stalled request outlived --request-timeout";
  expect_served(*idle, 0, rng);
  expect_served(*good, 64 * KiB, rng);
  auto r = good->read(0, 4 * KiB);  // none of the stalled WRITEs reached the disk
  ASSERT_TRUE(r.ok);
  EXPECT_NE(r.data, bytes(4 * KiB, 0x5c));
  EXPECT_NE(r.data, bytes(4 * KiB, 0x5d));
}

TEST(NbdLimits, IdleTimeoutWhenSet) {
  iov::nbd::server_limits lim;
  lim.idle_timeout = 1;
  local_server s("brd", {}, 4 * MiB, lim);
  std::mt19937_64 rng(24);
  auto idle = s.open(true);
  auto busy = s.open(true);
  ASSERT_TRUE(idle && busy);
  // Three seconds of requests 100 ms apart: never idle for a second.
  for (int k = 0; k < 30; k++) {
    ASSERT_NO_FATAL_FAILURE(expect_served(*busy, k * 64 * KiB, rng));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(idle->wait_closed());
  expect_served(*busy, 0, rng);
}

// A hog holds all the payload memory (a WRITE header and half its payload);
// another large WRITE waits for it, reading nothing, while small requests
// go on; when the hog finishes, or leaves, the waiting WRITE is served.
class NbdPayloadMemory : public testing::TestWithParam<bool /*the hog leaves*/> {};

TEST_P(NbdPayloadMemory, LargeWritesWaitForTheSharedMemory) {
  const bool hog_leaves = GetParam();
  iov::nbd::server_limits lim;
  lim.payload_memory = 4 * MiB;  // one piece: each WRITE below is one
  local_server s("brd", {}, 16 * MiB, lim);
  std::mt19937_64 rng(25);
  auto good = s.open(true);
  auto hog = s.open(false);
  auto waiter = s.open(false);
  ASSERT_TRUE(good && hog && waiter);
  const bytes hog_data = random_data(4 * MiB, rng), waiter_data = random_data(4 * MiB, rng);
  ASSERT_TRUE(hog->send_request(nbd::CMD_WRITE, 0, 1, 0, static_cast<uint32_t>(4 * MiB), hog_data.data(), 2 * MiB));
  ASSERT_TRUE(eventually([&] { return s.stats().payload_in_use == 4 * MiB; }));
  std::atomic<bool> sent{false};
  std::thread sender([&] {  // blocks while the server reads nothing from it
    sent = waiter->send_request(nbd::CMD_WRITE, 0, 2, 8 * MiB, static_cast<uint32_t>(4 * MiB), waiter_data.data(),
                                waiter_data.size());
  });
  ASSERT_TRUE(eventually([&] { return s.stats().payload_waits >= 1; }));
  expect_served(*good, 12 * MiB, rng);  // inline payloads need no reservation
  EXPECT_EQ(s.stats().payload_in_use, 4 * MiB);
  if (hog_leaves) {
    hog.reset();  // mid-payload: its reservation goes with it, its WRITE never happens
  } else {
    ASSERT_TRUE(hog->send_bytes(hog_data.data() + 2 * MiB, 2 * MiB));
    auto r = hog->read_reply(1, nbd::CMD_WRITE);
    EXPECT_TRUE(r.ok && r.error == 0) << r.problem;
  }
  sender.join();
  ASSERT_TRUE(sent);
  auto r = waiter->read_reply(2, nbd::CMD_WRITE);
  EXPECT_TRUE(r.ok && r.error == 0) << r.problem;
  auto first = good->read(0, static_cast<uint32_t>(4 * MiB));
  EXPECT_TRUE(first.ok && first.data == (hog_leaves ? bytes(4 * MiB, 0) : hog_data));
  auto second = good->read(8 * MiB, static_cast<uint32_t>(4 * MiB));
  EXPECT_TRUE(second.ok && second.data == waiter_data);
  EXPECT_LE(s.stats().payload_peak, 4 * MiB);
  EXPECT_TRUE(eventually([&] { return s.stats().payload_in_use == 0; }));
}

INSTANTIATE_TEST_SUITE_P(Hog, NbdPayloadMemory, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "Leaves" : "Finishes"; });

// Fifty 32 MiB WRITE headers without payload: sixteen hold a 4 MiB piece
// each, the 64 MiB, the others wait holding nothing; when they leave,
// everything is given back.
TEST(NbdLimits, WriteHeadersReserveNoMoreThanThePayloadMemory) {
  static_assert(iov::nbd::kWritePiece == 4 * MiB);
  iov::nbd::server_limits lim;
  lim.payload_memory = 64 * MiB;
  local_server s("brd", {}, 64 * MiB, lim);
  std::mt19937_64 rng(26);
  auto good = s.open(true);
  ASSERT_TRUE(good);
  std::vector<std::unique_ptr<client>> hogs;
  for (uint64_t k = 0; k < 50; k++) {
    hogs.push_back(s.open(k % 2));
    ASSERT_TRUE(hogs.back() && hogs.back()->send_request(nbd::CMD_WRITE, 0, k, 0, static_cast<uint32_t>(32 * MiB)));
  }
  ASSERT_TRUE(eventually([&] { return s.stats().payload_waits == 50 - 16; })) << s.stats().payload_waits;
  EXPECT_EQ(s.stats().payload_in_use, 64 * MiB);
  EXPECT_LE(s.stats().payload_peak, 64 * MiB);
  expect_served(*good, 0, rng);
  hogs.clear();
  EXPECT_TRUE(eventually([&] { return s.stats().payload_in_use == 0 && s.stats().connections == 1; }));
  expect_served(*good, 64 * KiB, rng);
}

}  // namespace
}  // namespace iov_test::nbd
