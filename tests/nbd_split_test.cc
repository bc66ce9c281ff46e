// Tests of iov-nbd's receive path (src/tools/nbd/connection.cc,
// transport.hpp): once a recv takes less than it had room for, the
// connection reads nothing more until epoll reports its socket again
// (edge-triggered), since another recv would only find it empty. Here
// pipelined requests reach the server in pieces, each sent only after the
// server has taken every byte before it (the socket's unsent count,
// SIOCOUTQ, is back to 0), so that the server has found the socket drained
// in the middle of a header or a payload: every request must still get
// exactly one reply, in order, and the disk must read back as a flat model
// of it says. A connection waiting for a wake-up that never comes fails by
// the client's timeout.
//
//   ctest --preset release -R nbd_split
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/nbd_client.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

using headers = local_server::headers;

constexpr uint64_t kSplitDisk = 1 * MiB;

// Waits until the peer has read every byte sent on the Unix socket fd.
bool wait_taken(int fd) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    int unsent = 0;
    if (ioctl(fd, SIOCOUTQ, &unsent) != 0)
      return false;
    if (unsent == 0)
      return true;
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::yield();
  }
}

// Requests sent as one stream, and what each should get back.
struct pipeline {
  struct sent {
    uint16_t type;
    uint64_t cookie, offset, length;
    bytes data;  // a WRITE's
  };
  bytes stream;
  std::vector<sent> requests;

  void write(client& c, uint64_t offset, const bytes& data) {
    add(c, CMD_WRITE, c.extended() ? CMD_FLAG_PAYLOAD_LEN : 0, offset, data.size(), data);
  }
  void read(client& c, uint64_t offset, uint64_t length) { add(c, CMD_READ, 0, offset, length, {}); }
  void flush(client& c) { add(c, CMD_FLUSH, 0, 0, 0, {}); }

  // Sends the stream in pieces that end at `cuts` (ascending, inside the
  // stream), each once the server has taken the one before; then reads the
  // replies in request order, the WRITEs applied to the flat model *disk
  // at their turn and each READ checked against it.
  void run(client& c, const std::vector<size_t>& cuts, bytes* disk) {
    size_t at = 0;
    for (size_t cut : cuts) {
      ASSERT_TRUE(c.send_bytes(stream.data() + at, cut - at)) << c.last_error();
      ASSERT_TRUE(wait_taken(c.fd())) << "the server did not take bytes [" << at << ", " << cut << ")";
      at = cut;
    }
    ASSERT_TRUE(c.send_bytes(stream.data() + at, stream.size() - at)) << c.last_error();
    for (const sent& s : requests) {
      reply r = c.read_reply(s.cookie, s.type, s.offset, s.length);
      ASSERT_TRUE(r.ok) << "request " << s.cookie << ": " << r.problem;
      ASSERT_EQ(r.error, 0u) << "request " << s.cookie << ": " << r.message;
      if (s.type == CMD_READ) {
        const auto from = disk->begin() + static_cast<ptrdiff_t>(s.offset);
        ASSERT_TRUE(std::equal(r.data.begin(), r.data.end(), from, from + static_cast<ptrdiff_t>(s.length)) &&
                    r.data.size() == s.length)
            << "READ " << s.cookie << " is not what was written before it ";
      }
      if (s.type == CMD_WRITE)
        std::copy(s.data.begin(), s.data.end(), disk->begin() + static_cast<ptrdiff_t>(s.offset));
    }
  }

 private:
  void add(client& c, uint16_t type, uint16_t flags, uint64_t offset, uint64_t length, const bytes& payload) {
    const uint64_t cookie = 1000 + requests.size();
    const bytes b = c.request_bytes(type, flags, cookie, offset, length, payload.data(), payload.size());
    stream.insert(stream.end(), b.begin(), b.end());
    requests.push_back({type, cookie, offset, length, payload});
  }
};

struct split_case {
  driver_config driver;
  headers h;
};

std::string split_case_name(const testing::TestParamInfo<split_case>& i) {
  const char* h = i.param.h == headers::simple ? "simple" : i.param.h == headers::structured ? "structured" : "extended";
  return std::string(i.param.driver.name) + "_" + h;
}

class NbdSplit : public testing::TestWithParam<split_case> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<local_server>(GetParam().driver, kSplitDisk);
    c_ = server_->open(GetParam().h);
    ASSERT_TRUE(c_);
    c_->set_timeout_ms(10000);
    disk_ = random_data(kSplitDisk, rng_);
    ASSERT_EQ(c_->write(0, disk_).error, 0u);
  }
  std::mt19937_64 rng_{37};
  std::unique_ptr<local_server> server_;
  std::unique_ptr<client> c_;
  bytes disk_;
};

// Two WRITEs held in the input buffer, each followed by a READ of it, and a
// FLUSH, cut in two at every byte of the stream; each round writes
// elsewhere, with new data. (A READ never covers a WRITE sent after it: the
// server takes a READ's data when it sends it, and the protocol leaves
// overlapping requests in flight unordered.)
TEST_P(NbdSplit, InlineRequestsCutAtEveryByte) {
  for (size_t cut = 1, rounds = 0;; cut++, rounds++) {
    const uint64_t base = (rounds * 8 * KiB) % (kSplitDisk - 8 * KiB);
    pipeline p;
    p.write(*c_, base + 512, random_data(512, rng_));
    p.read(*c_, base, 2 * KiB);
    p.write(*c_, base + 2 * KiB, random_data(1536, rng_));
    p.read(*c_, base, 4 * KiB);
    p.flush(*c_);
    if (cut >= p.stream.size())
      break;
    SCOPED_TRACE("cut after " + std::to_string(cut) + " of " + std::to_string(p.stream.size()) + " bytes");
    ASSERT_NO_FATAL_FAILURE(p.run(*c_, {cut}, &disk_));
  }
  auto r = c_->read(0, kSplitDisk);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_TRUE(r.data == disk_);
}

// The same kind of stream sent one byte at a time, each byte taken before
// the next is sent: every recv of the server is short.
TEST_P(NbdSplit, InlineRequestsOneByteASend) {
  pipeline p;
  for (uint64_t k = 0; k < 4; k++) {
    p.write(*c_, 64 * KiB + k * 4 * KiB, random_data(1024 + 512 * k, rng_));
    p.read(*c_, 64 * KiB, (k + 1) * 4 * KiB);
  }
  p.flush(*c_);
  std::vector<size_t> cuts;
  for (size_t k = 1; k < p.stream.size(); k++)
    cuts.push_back(k);
  ASSERT_NO_FATAL_FAILURE(p.run(*c_, cuts, &disk_));
}

// A WRITE above kInlinePayload, whose payload is received straight into its
// pages, cut at every byte of its header, every 997 bytes of its payload and
// at every byte from its last ones on, with a READ of it and a small WRITE
// and its READ behind it in the same stream.
TEST_P(NbdSplit, LargeWriteCutInItsHeaderAndPayload) {
  const uint64_t length = 64 * KiB + 4 * KiB + 512;
  size_t header = 0;
  for (size_t cut = 1, rounds = 0;; rounds++) {
    const uint64_t base = (rounds * 80 * KiB) % (kSplitDisk - 80 * KiB);
    pipeline p;
    p.write(*c_, base, random_data(length, rng_));
    header = p.stream.size() - length;
    p.read(*c_, base, length);
    p.write(*c_, base + length + 512, random_data(512, rng_));
    p.read(*c_, base + length, 2 * KiB);
    if (cut >= p.stream.size())
      break;
    SCOPED_TRACE("cut after " + std::to_string(cut) + " of " + std::to_string(p.stream.size()) + " bytes");
    ASSERT_NO_FATAL_FAILURE(p.run(*c_, {cut}, &disk_));
    cut = cut < header + 1 ? cut + 1 : cut + 997 < header + length - 2 ? cut + 997 : cut + 1;
  }
  auto r = c_->read(0, kSplitDisk);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_TRUE(r.data == disk_);
}

// More whole requests in the input at once than the lookahead takes
// (transmission::prefetch_ahead asks the device about a window of 16 at a
// time): WRITEs of whole pages (brd replaces those) and of parts of pages,
// READs of what a WRITE before them wrote, a large WRITE that ends a
// window's scan, sent at once and in three parts. Every request touches pages
// of its own, so no READ overlaps a WRITE after it.
TEST_P(NbdSplit, WindowsOfWholeRequests) {
  constexpr uint64_t kLarge = 64 * KiB + 8 * KiB;  // pages [0, 18)
  constexpr uint64_t kFirst = 20, kPages = kSplitDisk / (4 * KiB);
  for (int round = 0; round < 4; round++) {
    std::vector<uint64_t> slots;
    for (uint64_t k = kFirst; k < kPages; k++)
      slots.push_back(k * 4 * KiB);
    std::shuffle(slots.begin(), slots.end(), rng_);
    pipeline p;
    for (size_t k = 0; k + 1 < 48; k += 2) {
      if (k == 22) {
        p.write(*c_, 0, random_data(kLarge, rng_));
        p.read(*c_, 4 * KiB, 8 * KiB);
      }
      const uint64_t at = slots[k], to = slots[k + 1];
      switch (k % 6) {
        case 0:  // a whole page, then a READ of it
          p.write(*c_, at, random_data(4 * KiB, rng_));
          p.read(*c_, at, 4 * KiB);
          break;
        case 2:  // a part of a page
          p.write(*c_, at + 512, random_data(1536, rng_));
          p.read(*c_, at, 4 * KiB);
          break;
        default:  // a READ of a page untouched in this round, then a WRITE there
          p.read(*c_, to, 4 * KiB);
          p.write(*c_, at, random_data(4 * KiB, rng_));
          break;
      }
    }
    p.flush(*c_);
    SCOPED_TRACE("round " + std::to_string(round));
    const size_t third = p.stream.size() / 3;
    ASSERT_NO_FATAL_FAILURE(p.run(*c_, round % 2 ? std::vector<size_t>{third, 2 * third} : std::vector<size_t>{},
                                  &disk_));
  }
  auto r = c_->read(0, kSplitDisk);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_TRUE(r.data == disk_);
}

INSTANTIATE_TEST_SUITE_P(Drivers, NbdSplit,
                         testing::Values(split_case{{"brd", "brd", {}}, headers::simple},
                                         split_case{{"brd", "brd", {}}, headers::extended},
                                         split_case{{"null_blk", "null_blk", {}}, headers::structured}),
                         split_case_name);

}  // namespace
}  // namespace iov_test::nbd
