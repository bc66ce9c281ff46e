// iov-nbd with its per-call I/O limit (server_limits::io_per_call, a test
// knob): each recv, sendmsg and TLS record of the server moves at most that
// many bytes, so that a record or a short transfer ends inside a request
// header, a WRITE's payload or a READ's data at a place no block boundary
// predicts. fuzz_nbd_session reported a READ of other bytes than were
// written on null_blk with 4 KiB blocks, TLS, structured replies and a
// limit of 4097: a WRITE of 12288 bytes at 0, then a READ of 4096 at 0.
// These cases run that sequence, and its neighbours (plain TCP and Unix,
// brd and 512-byte null_blk, each reply kind, limits around a block and a
// record, requests sent one at a time or all at once), each READ compared
// byte for byte with what was written.
//
//   build/release/tests/nbd_per_call_test --gtest_filter='*4097*'
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "support/nbd_client.hpp"
#include "support/nbd_process.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

using headers = local_server::headers;

const driver_config kPerCallDrivers[] = {
    {"null_blk_4k", "null_blk", {{"blocksize", "4096"}}},
    {"null_blk", "null_blk", {}},
    {"brd", "brd", {}},
};

enum class link { unix_socket, tcp, tls_psk };

// Around a sector and a block, the reported 4097, and a TLS record; one
// byte at a time too in plain text (under TLS, records of one byte take
// seconds a case).
const size_t kPerCall[] = {511, 4095, 4097, 12289, 16384};

// A PSK in psktool's format, written directly (no tool needed).
struct psk_file {
  temp_dir dir;
  std::string path = dir.path("keys.psk");
  psk_file() { std::ofstream(path) << "alice:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"; }
};

std::unique_ptr<local_server> serve(const driver_config& d, link l, size_t per_call, const psk_file& psk) {
  iov::nbd::server_limits limits;
  limits.io_per_call = per_call;
  server_transport t;
  t.tcp = l == link::tcp;
  if (l == link::tls_psk) {
    auto creds = iov::nbd::tls_credentials::load_psk(psk.path);
    EXPECT_TRUE(creds.ok()) << creds.status();
    if (!creds.ok())
      return nullptr;
    t.mode = iov::nbd::tls_mode::require;
    t.credentials = std::move(*creds);
    t.client.psk_file = psk.path;
  }
  return std::make_unique<local_server>(d, 1 * MiB, limits, t);
}

using per_call_case = std::tuple<driver_config, link, headers, size_t>;

std::string per_call_case_name(const testing::TestParamInfo<per_call_case>& i) {
  const auto& [d, l, h, n] = i.param;
  return std::string(d.name) + (l == link::tls_psk ? "_tls_" : l == link::tcp ? "_tcp_" : "_unix_") +
         (h == headers::simple ? "simple_" : h == headers::structured ? "structured_" : "extended_") +
         std::to_string(n);
}

class NbdPerCall : public testing::TestWithParam<per_call_case> {};

// The reported sequence, one request at a time, then pipelined (the WRITE,
// both READs and a WRITE elsewhere sent before any reply is read), then an
// unaligned WRITE across blocks read back whole.
TEST_P(NbdPerCall, ReadsBackAWriteWhateverTheCallsCut) {
  const auto& [d, l, h, per_call] = GetParam();
  psk_file psk;
  auto s = serve(d, l, per_call, psk);
  ASSERT_TRUE(s);
  auto c = s->open(h);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->tls(), l == link::tls_psk);
  std::mt19937_64 rng(per_call);

  bytes w = random_data(12288, rng);
  auto wr = c->write(0, w);
  ASSERT_TRUE(wr.ok && wr.error == 0) << wr.problem;
  auto r = c->read(0, 4096);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  ASSERT_TRUE(r.data == bytes(w.begin(), w.begin() + 4096)) << "READ [0, 4096) after a WRITE of 12288 at 0";
  // What was just read, written over and read again: nothing of the first
  // READ (a window of its data, a lent page) may be served again.
  bytes w2 = random_data(4096, rng);
  ASSERT_EQ(c->write(0, w2).error, 0u);
  auto r2 = c->read(0, 4096);
  ASSERT_TRUE(r2.ok && r2.error == 0) << r2.problem;
  ASSERT_TRUE(r2.data == w2) << "READ [0, 4096) after it was written again";
  std::copy(w2.begin(), w2.end(), w.begin());

  // Pipelined: each reply read after every request went out; requests on
  // different ranges, so that any order of execution gives these bytes.
  const bytes a = random_data(12288, rng), b = random_data(8192, rng);
  const uint16_t wflags = c->extended() ? CMD_FLAG_PAYLOAD_LEN : 0;
  ASSERT_TRUE(c->send_request(CMD_WRITE, wflags, 101, 64 * KiB, a.size(), a.data(), a.size()));
  ASSERT_TRUE(c->send_request(CMD_READ, 0, 102, 0, 12288));
  ASSERT_TRUE(c->send_request(CMD_WRITE, wflags, 103, 128 * KiB, b.size(), b.data(), b.size()));
  ASSERT_TRUE(c->send_request(CMD_READ, 0, 104, 4096, 4096));
  EXPECT_EQ(c->read_reply(101, CMD_WRITE).error, 0u);
  auto r1 = c->read_reply(102, CMD_READ, 0, 12288);
  ASSERT_TRUE(r1.ok && r1.error == 0) << r1.problem;
  EXPECT_TRUE(r1.data == w) << "a pipelined READ of the first WRITE";
  EXPECT_EQ(c->read_reply(103, CMD_WRITE).error, 0u);
  auto r3 = c->read_reply(104, CMD_READ, 4096, 4096);
  ASSERT_TRUE(r3.ok && r3.error == 0) << r3.problem;
  EXPECT_TRUE(r3.data == bytes(w.begin() + 4096, w.begin() + 8192));
  auto ra = c->read(64 * KiB, a.size());
  ASSERT_TRUE(ra.ok && ra.error == 0) << ra.problem;
  EXPECT_TRUE(ra.data == a) << "the pipelined WRITE";

  // A client that negotiated no block size: a WRITE off every block
  // boundary, its partial blocks read, changed and written by the server.
  const bytes u = random_data(10000, rng);
  auto wu = c->write(200 * KiB + 777, u);
  ASSERT_TRUE(wu.ok && wu.error == 0) << wu.problem;
  auto ru = c->read(200 * KiB, 12 * KiB);
  ASSERT_TRUE(ru.ok && ru.error == 0) << ru.problem;
  bytes expect(12 * KiB, 0);
  std::copy(u.begin(), u.end(), expect.begin() + 777);
  EXPECT_TRUE(ru.data == expect) << "an unaligned WRITE read back with its neighbours";
  EXPECT_TRUE(c->disc());
}

INSTANTIATE_TEST_SUITE_P(Cuts, NbdPerCall,
                         testing::Combine(testing::ValuesIn(kPerCallDrivers),
                                          testing::Values(link::unix_socket, link::tcp, link::tls_psk),
                                          testing::Values(headers::simple, headers::structured, headers::extended),
                                          testing::ValuesIn(kPerCall)),
                         per_call_case_name);
INSTANTIATE_TEST_SUITE_P(ByteAtATime, NbdPerCall,
                         testing::Combine(testing::ValuesIn(kPerCallDrivers), testing::Values(link::unix_socket, link::tcp),
                                          testing::Values(headers::simple, headers::structured, headers::extended),
                                          testing::Values(size_t{1})),
                         per_call_case_name);

}  // namespace
}  // namespace iov_test::nbd
