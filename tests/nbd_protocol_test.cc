// Tests of iov-nbd's protocol (src/tools/nbd), one connection at a time,
// against the server in this process (support/nbd_server_fixture.hpp) and
// through the tests' own client (support/nbd_client.hpp), which is written
// from the specification: every handshake option and its errors, both reply
// formats, bounds and alignment, unknown commands and flags, BLOCK_STATUS
// with REQ_ONE, WRITE_ZEROES with NO_HOLE and FAST_ZERO. Expected contents
// come from a flat model; expected extents from a per-page model of what
// each driver stores. The program with real clients is in nbd_test.cc; many
// connections at once and hostile clients in nbd_concurrent_test.cc.
//
//   ctest --preset asan -R nbd_protocol
//   build/asan/tests/nbd_protocol_test --gtest_filter='NbdHandshake.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "support/nbd_client.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

// --- The handshake -------------------------------------------------------------------

TEST(NbdHandshake, GreetingAdvertisesFixedNewstyleAndNoZeroes) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet()) << c->last_error();
  EXPECT_EQ(c->handshake_flags(), nbd::FLAG_FIXED_NEWSTYLE | nbd::FLAG_NO_ZEROES);
}

TEST(NbdHandshake, UnknownClientFlagsEndTheSession) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet(nbd::FLAG_C_FIXED_NEWSTYLE | 1u << 7));
  EXPECT_TRUE(c->wait_closed());
}

TEST(NbdHandshake, ExportNameServesAnyNameWithOrWithoutTheZeroes) {
  local_server s;
  std::mt19937_64 rng(4);
  for (const std::string& name : {std::string(), std::string("iov"), std::string("other"), std::string(300, 'n')}) {
    for (bool no_zeroes : {false, true}) {
      SCOPED_TRACE("name of " + std::to_string(name.size()) + " bytes, no_zeroes " + std::to_string(no_zeroes));
      auto c = s.connect();
      ASSERT_TRUE(c && c->greet(nbd::FLAG_C_FIXED_NEWSTYLE | (no_zeroes ? uint32_t{nbd::FLAG_C_NO_ZEROES} : 0u)));
      nbd::export_info info = c->opt_export_name(name);
      ASSERT_TRUE(info.ok) << c->last_error();
      EXPECT_EQ(info.size, s.size());
      const uint16_t want = nbd::TFLAG_HAS_FLAGS | nbd::TFLAG_SEND_FLUSH | nbd::TFLAG_SEND_FUA |
                            nbd::TFLAG_SEND_TRIM | nbd::TFLAG_SEND_WRITE_ZEROES | nbd::TFLAG_CAN_MULTI_CONN;
      EXPECT_EQ(info.flags & want, want);
      EXPECT_FALSE(info.flags & nbd::TFLAG_READ_ONLY);
      bytes d = random_data(4 * KiB, rng);  // the stream is in step after the reply
      ASSERT_EQ(c->write(8 * KiB, d).error, 0u);
      EXPECT_EQ(c->read(8 * KiB, 4 * KiB).data, d);
    }
  }
}

TEST(NbdHandshake, InfoAndGoAnswerWhatWasAsked) {
  for (auto [driver, lbs] : {std::pair<const char*, uint32_t>{"brd", 512}, {"null_blk", 4096}}) {
    SCOPED_TRACE(driver);
    local_server s(driver, lbs == 512 ? iov::blkdev_settings{} : iov::blkdev_settings{{"blocksize", "4096"}});
    auto c = s.connect();
    ASSERT_TRUE(c && c->greet());
    nbd::export_info info = c->opt_info("a name", {nbd::INFO_NAME, nbd::INFO_DESCRIPTION, nbd::INFO_BLOCK_SIZE});
    ASSERT_TRUE(info.ok) << c->last_error();
    EXPECT_EQ(info.size, s.size());
    EXPECT_TRUE(info.flags & nbd::TFLAG_HAS_FLAGS);
    EXPECT_TRUE(info.name.has_value());
    ASSERT_TRUE(info.description.has_value());
    EXPECT_FALSE(info.description->empty());
    ASSERT_TRUE(info.min_block && info.preferred_block && info.max_block);
    EXPECT_EQ(*info.min_block, lbs);
    EXPECT_GE(*info.preferred_block, *info.min_block);
    EXPECT_EQ(*info.preferred_block & (*info.preferred_block - 1), 0u) << "a power of two";
    EXPECT_GE(*info.max_block, *info.preferred_block);
    // INFO stays in option haggling; GO without requests still tells the size.
    nbd::export_info go = c->opt_go("");
    ASSERT_TRUE(go.ok) << c->last_error();
    EXPECT_EQ(go.size, s.size());
    auto r = c->read(0, lbs);
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  }
}

TEST(NbdHandshake, ListNamesTheExport) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet() && c->send_option(nbd::OPT_LIST, {}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r && r->type == nbd::REP_SERVER) << c->last_error();
  ASSERT_GE(r->data.size(), 4u);
  uint32_t len = uint32_t{r->data[0]} << 24 | r->data[1] << 16 | r->data[2] << 8 | r->data[3];
  ASSERT_LE(len, r->data.size() - 4);
  EXPECT_EQ(std::string(r->data.begin() + 4, r->data.begin() + 4 + len), "iov");
  r = c->read_option_reply();
  ASSERT_TRUE(r && r->type == nbd::REP_ACK);
  ASSERT_TRUE(c->send_option(nbd::OPT_LIST, {1, 2, 3}));
  r = c->read_option_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->type, nbd::REP_ERR_INVALID);
  EXPECT_TRUE(c->opt_go("").ok);
}

TEST(NbdHandshake, AbortIsAcknowledgedThenClosed) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet() && c->send_option(nbd::OPT_ABORT, {}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r) << c->last_error();
  EXPECT_EQ(r->type, nbd::REP_ACK);
  EXPECT_TRUE(c->wait_closed());
}

TEST(NbdHandshake, StructuredReplyTakesNoData) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet() && c->send_option(nbd::OPT_STRUCTURED_REPLY, {0}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->type, nbd::REP_ERR_INVALID);
  ASSERT_TRUE(c->opt_structured_reply());
  ASSERT_TRUE(c->opt_go("").ok);
  auto rd = c->read(0, 4 * KiB);  // read_structured checks the chunks
  EXPECT_TRUE(rd.ok && rd.error == 0) << rd.problem;
}

TEST(NbdHandshake, MetaContextsAndTheirErrors) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  using M = nbd::client::meta_result;
  M m = c->opt_meta_context(nbd::OPT_SET_META_CONTEXT, "", {"base:allocation"});
  EXPECT_EQ(m.final_type, nbd::REP_ERR_INVALID) << "SET before STRUCTURED_REPLY";
  EXPECT_TRUE(m.contexts.empty());
  ASSERT_TRUE(c->opt_structured_reply());
  auto names = [](const M& m) {
    std::vector<std::string> n;
    for (auto& [id, name] : m.contexts)
      n.push_back(name);
    return n;
  };
  const std::vector<std::string> alloc{"base:allocation"};
  m = c->opt_meta_context(nbd::OPT_LIST_META_CONTEXT, "", {});
  EXPECT_EQ(m.final_type, nbd::REP_ACK);
  EXPECT_EQ(names(m), alloc) << "LIST of everything";
  m = c->opt_meta_context(nbd::OPT_LIST_META_CONTEXT, "", {"base:"});
  EXPECT_EQ(names(m), alloc);
  m = c->opt_meta_context(nbd::OPT_LIST_META_CONTEXT, "", {"x-none:thing"});
  EXPECT_EQ(m.final_type, nbd::REP_ACK);
  EXPECT_TRUE(m.contexts.empty());
  m = c->opt_meta_context(nbd::OPT_SET_META_CONTEXT, "", {"x-none:thing"});
  EXPECT_EQ(m.final_type, nbd::REP_ACK);
  EXPECT_TRUE(m.contexts.empty());
  // Malformed: a name longer than the data, a query longer than the data,
  // more queries than given, trailing bytes.
  bytes good = nbd::client::meta_payload("", {"base:allocation"});
  bytes long_query = good;
  long_query[11] = 200;
  bytes extra_count = good;
  extra_count[7] = 2;
  bytes trailing = good;
  trailing.push_back(0);
  for (const bytes& bad : {bytes{0, 0, 0, 5}, long_query, extra_count, trailing, bytes{0, 0}}) {
    ASSERT_TRUE(c->send_option(nbd::OPT_SET_META_CONTEXT, bad));
    auto r = c->read_option_reply();
    ASSERT_TRUE(r) << c->last_error();
    EXPECT_EQ(r->type, nbd::REP_ERR_INVALID) << "payload of " << bad.size() << " bytes";
  }
  m = c->opt_meta_context(nbd::OPT_SET_META_CONTEXT, "", {"base:allocation"});
  EXPECT_EQ(m.final_type, nbd::REP_ACK);
  ASSERT_EQ(names(m), alloc);
  ASSERT_TRUE(c->opt_go("").ok);
  auto r = c->block_status(0, 64 * KiB);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem << r.message;
  EXPECT_EQ(r.context_id, m.contexts[0].first);
}

TEST(NbdHandshake, MalformedGoIsInvalidAndTheSessionGoesOn) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  bytes trailing = nbd::client::go_payload("", {});
  trailing.push_back(7);
  for (const bytes& bad : {bytes{}, bytes{0, 0, 0}, bytes{0, 0, 0, 10, 'a', 'b'}, bytes{0, 0, 0, 0, 0, 2, 0, 1},
                           trailing}) {
    ASSERT_TRUE(c->send_option(nbd::OPT_GO, bad));
    auto r = c->read_option_reply();
    ASSERT_TRUE(r) << c->last_error();
    EXPECT_EQ(r->type, nbd::REP_ERR_INVALID) << "payload of " << bad.size() << " bytes";
  }
  EXPECT_TRUE(c->opt_go("").ok);
}

TEST(NbdHandshake, UnknownOptionsAreUnsupported) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  for (uint32_t option : {0u, 4u, 12u, 99u, 0x7fffffffu}) {
    ASSERT_TRUE(c->send_option(option, {1, 2, 3}));
    auto r = c->read_option_reply();
    ASSERT_TRUE(r) << c->last_error();
    EXPECT_EQ(r->option, option);
    EXPECT_EQ(r->type, nbd::REP_ERR_UNSUP) << "option " << option;
  }
  ASSERT_TRUE(c->send_option(nbd::OPT_STARTTLS, {}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->type == nbd::REP_ERR_POLICY || r->type == nbd::REP_ERR_UNSUP) << r->type;
  EXPECT_TRUE(c->opt_go("").ok);
}

TEST(NbdHandshake, BadOptionMagicEndsTheSession) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet() && c->send_option(nbd::OPT_GO, nbd::client::go_payload("", {}), 0x1122334455667788));
  EXPECT_TRUE(c->wait_closed());
}

// A length no option needs, with no data behind it: waiting for 4 GiB would hang.
TEST(NbdHandshake, OversizedOptionLengthEndsTheSession) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  const unsigned char head[16] = {'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T', 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xf0};
  ASSERT_TRUE(c->send_bytes(head, sizeof head));
  EXPECT_TRUE(c->wait_closed());
}

// "NBD_FLAG_SEND_DF ... MUST leave this flag clear if structured replies
// have not been negotiated."
TEST(NbdHandshake, DontFragmentIsAdvertisedOnlyWithStructuredReplies) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  nbd::export_info go = c->opt_go("");
  ASSERT_TRUE(go.ok);
  EXPECT_FALSE(go.flags & nbd::TFLAG_SEND_DF) << "flags " << go.flags;
  c = s.connect();
  ASSERT_TRUE(c && c->greet());
  nbd::export_info named = c->opt_export_name("");
  ASSERT_TRUE(named.ok);
  EXPECT_FALSE(named.flags & nbd::TFLAG_SEND_DF) << "flags " << named.flags;
}

// --- Transmission: simple (false) and structured (true) replies ---------------------

// Each case starts in transmission on a fresh 4 MiB brd.
class NbdTransmission : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    c = s.open(GetParam());
    ASSERT_TRUE(c);
  }
  local_server s;
  std::unique_ptr<nbd::client> c;
};

TEST_P(NbdTransmission, WritesAndReadsMatchAFlatModel) {
  std::mt19937_64 rng(5);
  bytes model(s.size(), 0);
  const uint64_t sectors = s.size() / 512;
  for (int i = 0; i < 64; i++) {
    uint64_t off = rng() % sectors * 512, len = std::min<uint64_t>(512 * (1 + rng() % 160), s.size() - off);
    bytes d = random_data(len, rng);
    ASSERT_EQ(c->write(off, d, rng() % 3 ? 0 : nbd::CMD_FLAG_FUA).error, 0u);
    std::copy(d.begin(), d.end(), model.begin() + static_cast<ptrdiff_t>(off));
    if (i % 16 == 0) {
      ASSERT_EQ(c->flush().error, 0u);
    }
    off = rng() % sectors * 512, len = std::min<uint64_t>(512 * (1 + rng() % 160), s.size() - off);
    auto r = c->read(off, static_cast<uint32_t>(len));
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
    ASSERT_TRUE(std::equal(r.data.begin(), r.data.end(), model.begin() + static_cast<ptrdiff_t>(off)))
        << "read at " << off;
  }
  auto all = c->read(0, static_cast<uint32_t>(s.size()));
  ASSERT_TRUE(all.ok) << all.problem;
  EXPECT_TRUE(all.data == model);
  EXPECT_EQ(c->cache(0, 64 * KiB).error, 0u);
  ASSERT_TRUE(c->disc());
  EXPECT_TRUE(c->wait_closed()) << "NBD_CMD_DISC has no reply; the server closes";
}

TEST_P(NbdTransmission, OutOfBoundsAndUnalignedRequestsFailAndChangeNothing) {
  const uint64_t size = s.size(), far = UINT64_MAX - 511;
  EXPECT_EQ(c->read(size - 512, 1024).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->read(size, 512).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->read(far, 512).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->write(size - 512, bytes(1024, 1)).error, nbd::NBD_ENOSPC);
  EXPECT_EQ(c->write(size, bytes(512, 1)).error, nbd::NBD_ENOSPC);
  EXPECT_EQ(c->write(far, bytes(512, 1)).error, nbd::NBD_ENOSPC);
  EXPECT_EQ(c->write_zeroes(size - 512, 1024).error, nbd::NBD_ENOSPC);
  EXPECT_NE(c->trim(size, 4 * KiB).error, 0u);
  EXPECT_EQ(c->block_status(0, 4 * KiB).error, nbd::NBD_EINVAL) << "no metadata context";
  // A client told the 512-byte minimum block size is held to it.
  auto b = s.open(GetParam(), false, nullptr, {nbd::INFO_BLOCK_SIZE});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->read(100, 512).error, nbd::NBD_EINVAL);
  EXPECT_EQ(b->write(512, bytes(100, 1)).error, nbd::NBD_EINVAL);
  EXPECT_EQ(b->write(100, bytes(512, 1)).error, nbd::NBD_EINVAL);
  EXPECT_EQ(b->write_zeroes(100, 512).error, nbd::NBD_EINVAL);
  auto r = c->read(size - 64 * KiB, 64 * KiB);  // still in step, and nothing was written
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.data, bytes(64 * KiB, 0));
  r = c->read(0, 4 * KiB);
  EXPECT_EQ(r.data, bytes(4 * KiB, 0));
}

// CACHE is a hint the RAM disks have nothing to do for; only its range is checked.
TEST_P(NbdTransmission, CacheChecksItsRange) {
  const uint64_t size = s.size();
  EXPECT_EQ(c->cache(0, 64 * KiB).error, 0u);
  EXPECT_EQ(c->cache(size - 512, 512).error, 0u);
  EXPECT_EQ(c->cache(size - 512, 1024).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->cache(size, 512).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->cache(UINT64_MAX - 511, 512).error, nbd::NBD_EINVAL);
  auto r = c->read(size - 4 * KiB, 4 * KiB);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.data, bytes(4 * KiB, 0));
}

TEST_P(NbdTransmission, UnknownCommandsAndFlagsAreInvalid) {
  ASSERT_TRUE(c->send_request(42, 0, 1000, 0, 512));
  auto r = c->read_reply(1000, 42);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.error, nbd::NBD_EINVAL);
  bytes d(4 * KiB, 0x77);  // an unknown flag on a WRITE: the payload is still consumed
  ASSERT_TRUE(c->send_request(nbd::CMD_WRITE, 1 << 10, 1001, 0, 4 * KiB, d.data(), d.size()));
  r = c->read_reply(1001, nbd::CMD_WRITE);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->read(0, 4 * KiB, 1 << 12).error, nbd::NBD_EINVAL);
  r = c->read(0, 4 * KiB);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.data, bytes(4 * KiB, 0));
}

// The protocol leaves a zero-length READ's result open, but not the shape of
// the reply: no OFFSET_DATA chunk shorter than 9 bytes.
TEST_P(NbdTransmission, ZeroLengthReadGetsAWellFormedReply) {
  auto r = c->read(0, 0);
  EXPECT_TRUE(r.ok) << r.problem;
  EXPECT_TRUE(c->read(0, 512).ok);
}

TEST_P(NbdTransmission, BadRequestMagicEndsTheSession) {
  ASSERT_TRUE(c->send_request(nbd::CMD_READ, 0, 1, 0, 512, nullptr, 0, 0x12345678));
  EXPECT_TRUE(c->wait_closed());
}

// Beyond the advertised maximum payload, with no payload following: waiting
// for it would hang, so the server must give up on the connection.
TEST_P(NbdTransmission, WriteBeyondTheMaximumPayloadEndsTheSession) {
  ASSERT_TRUE(c->send_request(nbd::CMD_WRITE, 0, 1, 0, 0xfffffe00));
  EXPECT_TRUE(c->wait_closed());
}

INSTANTIATE_TEST_SUITE_P(Replies, NbdTransmission, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "Structured" : "Simple"; });

TEST(NbdStructured, ErrorsCarryAMessageAndDontFragmentIsOneChunk) {
  local_server s;
  auto c = s.open(true);
  ASSERT_TRUE(c);
  auto r = c->read(s.size(), 512);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.error, nbd::NBD_EINVAL);
  EXPECT_FALSE(r.message.empty());
  EXPECT_EQ(r.chunk_types, std::vector<uint16_t>({nbd::REPLY_TYPE_ERROR}));
  std::mt19937_64 rng(6);
  bytes d = random_data(64 * KiB, rng);
  ASSERT_EQ(c->write(0, d).error, 0u);
  r = c->read(0, 64 * KiB, nbd::CMD_FLAG_DF);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.data, d);
  EXPECT_EQ(std::count_if(r.chunk_types.begin(), r.chunk_types.end(),
                          [](uint16_t t) { return t == nbd::REPLY_TYPE_OFFSET_DATA || t == nbd::REPLY_TYPE_OFFSET_HOLE; }),
            1);
}

// A zoned null_blk cannot zero: WRITE_ZEROES is not advertised, and one
// sent anyway is refused, changing nothing.
TEST(NbdWriteZeroes, NotAdvertisedWhereTheDeviceCannotZero) {
  local_server s("null_blk", {{"zoned", "1"}, {"zone_size", "1"}, {"zone_nr_conv", "4"}});
  nbd::export_info go;
  auto c = s.open(true, false, &go);
  ASSERT_TRUE(c);
  EXPECT_FALSE(go.flags & nbd::TFLAG_SEND_WRITE_ZEROES);
  EXPECT_FALSE(go.flags & nbd::TFLAG_SEND_FAST_ZERO);
  ASSERT_EQ(c->write(0, bytes(4 * KiB, 0x4d)).error, 0u);  // a conventional zone
  auto r = c->write_zeroes(0, 4 * KiB);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->read(0, 4 * KiB).data, bytes(4 * KiB, 0x4d));
}

// A null_blk that is not memory backed stores nothing: every READ returns
// zeros, never a payload this or another request sent before (the server's
// buffers hold those), small or large, in either reply format.
TEST(NbdNotMemoryBacked, ReadsAreZerosNotEarlierPayloads) {
  local_server s("null_blk", {{"memory_backed", "0"}});
  std::mt19937_64 rng(10);
  for (bool structured : {false, true}) {
    SCOPED_TRACE(structured ? "structured" : "simple");
    auto c = s.open(structured);
    ASSERT_TRUE(c);
    for (uint32_t len : {uint32_t{4 * KiB}, uint32_t{60 * KiB}, uint32_t{512 * KiB}}) {
      bytes d = random_data(len, rng);
      ASSERT_EQ(c->write(MiB, d).error, 0u);
      for (uint64_t at : {uint64_t{MiB}, uint64_t{0}}) {
        auto r = c->read(at, len);
        ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
        EXPECT_EQ(r.data, bytes(len, 0)) << len << " bytes at " << at;
      }
    }
  }
}

TEST(NbdBlockStatus, RangesReqOneAndErrors) {
  local_server s;
  alloc_model model(true, s.size());
  std::mt19937_64 rng(8);
  auto c = open_shaped(s, model, rng);
  ASSERT_TRUE(c);
  auto r = c->block_status(0, static_cast<uint32_t>(s.size()), nbd::CMD_FLAG_REQ_ONE);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem << r.message;
  ASSERT_EQ(r.extents.size(), 1u);
  EXPECT_EQ(r.extents[0], model.extents(0, s.size())[0]);
  for (int i = 0; i < 40; i++) {
    uint64_t pages = s.size() / (4 * KiB), first = rng() % pages, n = 1 + rng() % (pages - first);
    r = c->block_status(first * 4 * KiB, static_cast<uint32_t>(n * 4 * KiB));
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem << r.message;
    EXPECT_EQ(describe(merged(r.extents)), describe(model.extents(first * 4 * KiB, n * 4 * KiB)));
  }
  r = c->block_status(1 * MiB + 100, 1000);  // unaligned, inside data
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.extents, std::vector<nbd::extent>({{1000, 0}}));
  EXPECT_EQ(c->block_status(0, 0).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->block_status(s.size() - 4 * KiB, 8 * KiB).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->block_status(s.size(), 512).error, nbd::NBD_EINVAL);
}

// Both drivers zero natively, so both advertise FAST_ZERO and honour it.
// Without NO_HOLE the range becomes a hole (brd frees its pages, null_blk
// unstores its blocks: an all-sparse copy costs no memory); with NO_HOLE
// the storage stays (brd clears the pages it has, null_blk stores zeros).
TEST(NbdWriteZeroes, NoHoleAndFastZero) {
  std::mt19937_64 rng(9);
  for (const char* driver : {"brd", "null_blk"}) {
    SCOPED_TRACE(driver);
    const bool brd = std::string(driver) == "brd";
    local_server s(driver);
    nbd::export_info go;
    auto c = s.open(true, true, &go);
    ASSERT_TRUE(c);
    EXPECT_TRUE(go.flags & nbd::TFLAG_SEND_WRITE_ZEROES);
    EXPECT_TRUE(go.flags & nbd::TFLAG_SEND_FAST_ZERO);
    bytes model = random_data(256 * KiB, rng);
    ASSERT_EQ(c->write(0, model).error, 0u);
    ASSERT_EQ(c->write_zeroes(0, 64 * KiB, nbd::CMD_FLAG_NO_HOLE).error, 0u);
    std::fill_n(model.begin(), 64 * KiB, 0);
    using extents = std::vector<nbd::extent>;
    EXPECT_EQ(c->block_status(0, 64 * KiB).extents, extents({{64 * KiB, nbd::STATE_ZERO}}));
    ASSERT_EQ(c->write_zeroes(64 * KiB, 64 * KiB).error, 0u);
    std::fill_n(model.begin() + 64 * KiB, 64 * KiB, 0);
    EXPECT_EQ(c->block_status(64 * KiB, 64 * KiB).extents, extents({{64 * KiB, nbd::STATE_HOLE | nbd::STATE_ZERO}}));
    ASSERT_EQ(c->write_zeroes(128 * KiB + 512, 1024).error, 0u);  // inside a page
    std::fill_n(model.begin() + 128 * KiB + 512, 1024, 0);
    ASSERT_EQ(c->write_zeroes(192 * KiB, 64 * KiB, nbd::CMD_FLAG_FAST_ZERO).error, 0u);
    std::fill_n(model.begin() + 192 * KiB, 64 * KiB, 0);
    // NO_HOLE over a hole: brd keeps the hole, null_blk stores zeros.
    ASSERT_EQ(c->write_zeroes(1 * MiB, 16 * KiB, nbd::CMD_FLAG_NO_HOLE).error, 0u);
    EXPECT_EQ(c->block_status(1 * MiB, 16 * KiB).extents,
              extents({{16 * KiB, brd ? nbd::STATE_HOLE | nbd::STATE_ZERO : nbd::STATE_ZERO}}));
    auto r = c->read(0, 256 * KiB);
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
    EXPECT_TRUE(r.data == model);
  }
}

}  // namespace
}  // namespace iov_test::nbd
