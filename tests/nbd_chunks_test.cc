// Tests of iov-nbd's READ chunks and extended headers (src/tools/nbd),
// through the tests' own client (support/nbd_client.hpp), which checks every
// chunk's shape and bounds: a structured or extended READ sends the zeros of
// the device (brd's absent pages, null_blk's unstored blocks) as OFFSET_HOLE
// chunks, exactly where a per-page model of the disk says they are, unless
// the client asked for one chunk (DF); with NBD_OPT_EXTENDED_HEADERS every
// request and reply takes the 32-byte form, lengths are 64 bits, and
// BLOCK_STATUS answers with BLOCK_STATUS_EXT.
//
//   build/release/tests/nbd_chunks_test --gtest_filter='NbdExtended*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/nbd_client.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

constexpr uint64_t GiB = 1024 * MiB;
using piece = reply::piece;

// The chunks a READ of [off, off + len) should get, from the model at
// sector granularity: runs of data and of holes (what is not stored; stored
// zeros are data), at most `max_runs` of them, the last then carrying the
// rest as data; a single data run when there is nothing else.
std::vector<piece> expected_pieces(const alloc_model& m, uint64_t off, uint64_t len, size_t max_runs = 16) {
  std::vector<piece> out;
  out.reserve(max_runs);
  for (uint64_t s = off; s < off + len; s += 512) {
    const bool zero = m.unit[s / (4 * KiB)] == alloc_model::hole;
    if (!out.empty() && out.back().hole == zero) {
      out.back().length += 512;
      continue;
    }
    const bool last = !out.empty() && out.size() + 1 == max_runs;
    out.emplace_back(piece{s, last ? off + len - s : 512, last ? false : zero});
    if (last)
      break;
  }
  return out;
}

// null_blk with DISCARD on, so that TRIM leaves holes as on brd.
iov::blkdev_settings discarding(const std::string& driver) {
  return driver == "null_blk" ? iov::blkdev_settings{{"discard", "1"}} : iov::blkdev_settings{};
}

std::string describe(const std::vector<piece>& ps) {
  std::string s;
  for (const piece& p : ps)
    s += (p.hole ? "hole(" : "data(") + std::to_string(p.offset) + "," + std::to_string(p.length) + ") ";
  return s;
}

// A client after EXTENDED_HEADERS (and base:allocation when asked), in transmission.
std::unique_ptr<client> open_extended(local_server& s, bool meta = false) {
  return s.open(local_server::headers::extended, meta);
}

// --- OFFSET_HOLE chunks ---------------------------------------------------------------

class NbdHoleChunks : public testing::TestWithParam<std::tuple<const char*, bool>> {};

// The shaped disk read back over many ranges (page-aligned or not): what
// comes as data and as holes is exactly the model's runs, and the bytes are
// those of a DF read (one data chunk, checked against the same map).
TEST_P(NbdHoleChunks, AbsentPagesAreHolesAndDontFragmentIsOneChunk) {
  const auto [driver, extended] = GetParam();
  local_server s(driver, discarding(driver));
  alloc_model model(std::string(driver) == "brd", s.size());
  std::mt19937_64 rng(21);
  auto c = extended ? open_extended(s, true) : s.open(true, true);
  ASSERT_TRUE(c);
  shape_disk(*c, model, rng);
  ASSERT_FALSE(HasFatalFailure());
  std::vector<std::pair<uint64_t, uint64_t>> ranges = {
      {0, 64 * KiB},                           // one hole
      {1 * MiB, 8 * KiB},                      // one data run
      {1 * MiB - 4 * KiB, 32 * KiB},           // hole, data, hole, data, hole
      {1 * MiB - 512, 1024},                   // inside pages: half hole, half data
      {2 * MiB, 64 * KiB},                     // data, stored zeros, data, hole, data
      {3 * MiB, 128 * KiB},                    // zeros, hole, data, hole, data, hole
      {0, s.size()},                           // more runs than one reply sends
  };
  for (int i = 0; i < 40; i++) {
    const uint64_t sectors = s.size() / 512, first = rng() % sectors, n = 1 + rng() % std::min<uint64_t>(
                                                                                 sectors - first, 4096);
    ranges.emplace_back(first * 512, n * 512);
  }
  for (auto [off, len] : ranges) {
    SCOPED_TRACE(std::to_string(off) + "+" + std::to_string(len));
    auto df = c->read(off, len, CMD_FLAG_DF);
    ASSERT_TRUE(df.ok && df.error == 0) << df.problem;
    ASSERT_EQ(df.pieces, std::vector<piece>({{off, len, false}})) << describe(df.pieces);
    auto r = c->read(off, len);
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
    EXPECT_EQ(describe(r.pieces), describe(expected_pieces(model, off, len)));
    EXPECT_TRUE(r.data == df.data);
    for (const piece& p : r.pieces) {  // a hole reads as zeros in the DF read too
      if (p.hole) {
        EXPECT_TRUE(std::all_of(df.data.begin() + static_cast<ptrdiff_t>(p.offset - off),
                                df.data.begin() + static_cast<ptrdiff_t>(p.offset - off + p.length),
                                [](unsigned char b) { return b == 0; }));
      }
    }
  }
  // Simple replies are not affected: the bytes, whatever the map.
  auto plain = s.open(false);
  ASSERT_TRUE(plain);
  auto r = plain->read(1 * MiB - 4 * KiB, 32 * KiB);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_TRUE(r.pieces.empty());
  EXPECT_EQ(r.data, c->read(1 * MiB - 4 * KiB, 32 * KiB, CMD_FLAG_DF).data);
}

INSTANTIATE_TEST_SUITE_P(Chunks, NbdHoleChunks,
                         testing::Combine(testing::Values("brd", "null_blk"), testing::Bool()),
                         [](const auto& i) {
                           return std::string(std::get<0>(i.param)) +
                                  (std::get<1>(i.param) ? "_Extended" : "_Structured");
                         });

// --- Simple replies where structured ones are negotiated -------------------------------

// A success without data to anything but READ is one 16-byte simple reply
// (the protocol allows it; libnbd reads it in one recv); READ stays
// structured, even of nothing, and so does an error, which carries its text.
TEST(NbdStructuredReplies, SuccessWithoutDataIsSimpleElseChunks) {
  local_server s;
  auto c = s.open(/*structured=*/true);
  ASSERT_TRUE(c);
  std::mt19937_64 rng(29);
  const bytes d = random_data(8 * KiB, rng);
  auto simple = [](const reply& r) {
    EXPECT_TRUE(r.ok && r.error == 0) << r.problem;
    EXPECT_TRUE(r.chunk_types.empty()) << "a chunk where a simple reply does";
  };
  simple(c->write(4 * KiB, d));
  simple(c->write(64 * KiB, d, CMD_FLAG_FUA));
  simple(c->flush());
  simple(c->trim(0, 4 * KiB));
  simple(c->write_zeroes(128 * KiB, 8 * KiB));
  simple(c->cache(0, 4 * KiB));
  auto r = c->read(4 * KiB, d.size());
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.chunk_types, std::vector<uint16_t>({REPLY_TYPE_OFFSET_DATA}));
  EXPECT_TRUE(r.data == d);
  auto empty = c->read(0, 0);
  ASSERT_TRUE(empty.ok && empty.error == 0) << empty.problem;
  EXPECT_EQ(empty.chunk_types, std::vector<uint16_t>({REPLY_TYPE_NONE}));
  auto bad = c->write(s.size(), d);
  ASSERT_TRUE(bad.ok) << bad.problem;
  EXPECT_EQ(bad.error, uint32_t{NBD_ENOSPC});
  EXPECT_EQ(bad.chunk_types, std::vector<uint16_t>({REPLY_TYPE_ERROR}));
  EXPECT_NE(bad.message.find("beyond the end"), std::string::npos) << bad.message;
}

// --- Extended headers -----------------------------------------------------------------

TEST(NbdExtendedHeaders, NegotiationAndWhatItExcludes) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  ASSERT_TRUE(c->send_option(OPT_EXTENDED_HEADERS, {1}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->type, REP_ERR_INVALID) << "the option takes no data";
  ASSERT_EQ(c->opt_extended_headers(), REP_ACK);
  ASSERT_TRUE(c->send_option(OPT_STRUCTURED_REPLY, {}));
  r = c->read_option_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->type, REP_ERR_EXT_HEADER_REQD) << "extended headers take precedence";
  auto m = c->opt_meta_context(OPT_SET_META_CONTEXT, "", {"base:allocation"});
  EXPECT_EQ(m.final_type, REP_ACK) << "contexts need no structured replies beside extended headers";
  EXPECT_EQ(m.contexts.size(), 1u);
  export_info go = c->opt_go("", {INFO_BLOCK_SIZE});
  ASSERT_TRUE(go.ok);
  EXPECT_TRUE(go.flags & TFLAG_SEND_DF);
  EXPECT_TRUE(c->write(0, bytes(4 * KiB, 9)).ok);
  EXPECT_EQ(c->read(0, 4 * KiB).data, bytes(4 * KiB, 9));

  // EXPORT_NAME is forbidden after extended headers and has no error reply.
  auto d = s.connect();
  ASSERT_TRUE(d && d->greet());
  ASSERT_EQ(d->opt_extended_headers(), REP_ACK);
  bytes name = {'i', 'o', 'v'};
  ASSERT_TRUE(d->send_option(OPT_EXPORT_NAME, name));
  EXPECT_TRUE(d->wait_closed());
}

// Every kind of reply, successes and errors, comes as an extended chunk
// carrying the request's offset (the client checks both), and the data
// match a flat model.
TEST(NbdExtendedHeaders, EveryReplyIsAnExtendedChunk) {
  local_server s;
  auto c = open_extended(s, true);
  ASSERT_TRUE(c);
  std::mt19937_64 rng(23);
  bytes model(s.size(), 0);
  for (int i = 0; i < 32; i++) {
    const uint64_t off = rng() % (s.size() / 4096) * 4096, len = std::min<uint64_t>(4096 * (1 + rng() % 40),
                                                                                    s.size() - off);
    bytes d = random_data(len, rng);
    auto w = c->write(off, d, i % 4 ? 0 : CMD_FLAG_FUA);
    ASSERT_TRUE(w.ok && w.error == 0) << w.problem;
    EXPECT_EQ(w.chunk_types, std::vector<uint16_t>({REPLY_TYPE_NONE}));
    std::copy(d.begin(), d.end(), model.begin() + static_cast<ptrdiff_t>(off));
  }
  auto all = c->read(0, s.size());
  ASSERT_TRUE(all.ok && all.error == 0) << all.problem;
  EXPECT_TRUE(all.data == model);
  EXPECT_TRUE(c->flush().ok);
  EXPECT_TRUE(c->cache(0, 64 * KiB).ok);
  auto t = c->trim(0, 64 * KiB);
  ASSERT_TRUE(t.ok && t.error == 0) << t.problem;
  std::fill_n(model.begin(), 64 * KiB, 0);
  auto z = c->write_zeroes(64 * KiB, 64 * KiB);
  ASSERT_TRUE(z.ok && z.error == 0) << z.problem;
  std::fill_n(model.begin() + 64 * KiB, 64 * KiB, 0);
  auto bs = c->block_status(0, 128 * KiB);
  ASSERT_TRUE(bs.ok && bs.error == 0) << bs.problem;
  EXPECT_EQ(bs.chunk_types, std::vector<uint16_t>({REPLY_TYPE_BLOCK_STATUS_EXT}));
  EXPECT_EQ(merged(bs.extents), std::vector<extent>({{128 * KiB, STATE_HOLE | STATE_ZERO}}));
  auto e = c->read(s.size(), 512);
  ASSERT_TRUE(e.ok) << e.problem;
  EXPECT_EQ(e.error, NBD_EINVAL);
  EXPECT_EQ(e.chunk_types, std::vector<uint16_t>({REPLY_TYPE_ERROR}));
  EXPECT_FALSE(e.message.empty());
  all = c->read(0, s.size());
  ASSERT_TRUE(all.ok && all.error == 0) << all.problem;
  EXPECT_TRUE(all.data == model);
  ASSERT_TRUE(c->disc());
  EXPECT_TRUE(c->wait_closed());
}

// Effect lengths beyond 32 bits: BLOCK_STATUS_EXT descriptors longer than
// 4 GiB, TRIM and WRITE_ZEROES over 6 GiB in one request, on a sparse 8 GiB
// disk; a READ beyond the largest payload is refused and the session goes on.
// (null_blk walks its map a block at a time: 4 KiB blocks keep this short.)
TEST(NbdExtendedHeaders, SixtyFourBitLengths) {
  for (const char* driver : {"brd", "null_blk"}) {
    SCOPED_TRACE(driver);
    iov::blkdev_settings settings = discarding(driver);
    if (std::string(driver) == "null_blk")
      settings.emplace_back("blocksize", "4096");
    local_server s(driver, settings, 8 * GiB);
    auto c = open_extended(s, true);
    ASSERT_TRUE(c);
    std::mt19937_64 rng(24);
    bytes d = random_data(4 * KiB, rng);
    ASSERT_EQ(c->write(5 * GiB, d).error, 0u);
    ASSERT_EQ(c->write(7 * GiB, d).error, 0u);
    auto bs = c->block_status(4 * GiB, 4 * GiB);
    ASSERT_TRUE(bs.ok && bs.error == 0) << bs.problem << bs.message;
    const uint32_t hole = STATE_HOLE | STATE_ZERO;
    EXPECT_EQ(describe(merged(bs.extents)),
              describe(std::vector<extent>{{1 * GiB, hole}, {4 * KiB, 0}, {2 * GiB - 4 * KiB, hole}, {4 * KiB, 0},
                        {1 * GiB - 4 * KiB, hole}}));
    bs = c->block_status(0, 8 * GiB, CMD_FLAG_REQ_ONE);
    ASSERT_TRUE(bs.ok && bs.error == 0) << bs.problem;
    ASSERT_EQ(bs.extents.size(), 1u);
    EXPECT_GT(bs.extents[0].length, uint64_t{UINT32_MAX}) << "one descriptor beyond 32 bits";
    EXPECT_EQ(bs.extents[0].flags, hole);
    EXPECT_LE(bs.extents[0].length, 5 * GiB);

    EXPECT_EQ(c->read(0, uint64_t{1} << 32).error, NBD_EINVAL) << "beyond the largest payload";
    EXPECT_EQ(c->read(8 * GiB - 4 * KiB, 8 * KiB).error, NBD_EINVAL);
    EXPECT_EQ(c->write_zeroes(4 * GiB, 5 * GiB).error, NBD_ENOSPC);
    EXPECT_EQ(c->read(5 * GiB, 4 * KiB).data, d) << "a refused request changes nothing";

    auto z = c->write_zeroes(1 * GiB, 6 * GiB - 4 * KiB);  // 5 GiB's page goes, 7 GiB's stays
    ASSERT_TRUE(z.ok && z.error == 0) << z.problem << z.message;
    EXPECT_EQ(c->read(5 * GiB, 4 * KiB).pieces, std::vector<piece>({{5 * GiB, 4 * KiB, true}}));
    EXPECT_EQ(c->read(7 * GiB, 4 * KiB).data, d);
    auto t = c->trim(0, 8 * GiB);
    ASSERT_TRUE(t.ok && t.error == 0) << t.problem;
    bs = c->block_status(6 * GiB, 2 * GiB);
    ASSERT_TRUE(bs.ok && bs.error == 0) << bs.problem;
    EXPECT_EQ(merged(bs.extents), std::vector<extent>({{2 * GiB, hole}}));
  }
}

// NBD_CMD_FLAG_PAYLOAD_LEN says whether a payload follows, for every
// command: a WRITE without it is refused and sends none; any other command
// with it has its payload consumed (inline or above 64 KiB) and refused; a
// payload beyond the largest ends the session, as does a compact header.
TEST(NbdExtendedHeaders, PayloadLengthFlag) {
  local_server s;
  auto c = open_extended(s);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send_request(CMD_WRITE, 0, 1, 0, 4 * KiB));
  auto r = c->read_reply(1, CMD_WRITE, 0, 4 * KiB);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.error, NBD_EINVAL);
  for (uint64_t len : {uint64_t{4 * KiB}, uint64_t{1 * MiB}}) {
    bytes junk(len, 0x5a);
    ASSERT_TRUE(c->send_request(CMD_READ, CMD_FLAG_PAYLOAD_LEN, 2, 0, len, junk.data(), junk.size()));
    r = c->read_reply(2, CMD_READ, 0, len);
    ASSERT_TRUE(r.ok) << r.problem;
    EXPECT_EQ(r.error, NBD_EINVAL) << len;
    ASSERT_TRUE(c->send_request(CMD_FLUSH, CMD_FLAG_PAYLOAD_LEN, 3, 0, len, junk.data(), junk.size()));
    r = c->read_reply(3, CMD_FLUSH);
    ASSERT_TRUE(r.ok) << r.problem;
    EXPECT_EQ(r.error, NBD_EINVAL) << len;
  }
  auto read = c->read(0, 4 * KiB);
  ASSERT_TRUE(read.ok && read.error == 0) << read.problem;
  EXPECT_EQ(read.data, bytes(4 * KiB, 0)) << "no payload was taken for data";
  ASSERT_TRUE(c->send_request(CMD_WRITE, CMD_FLAG_PAYLOAD_LEN, 4, 0, uint64_t{1} << 33));
  EXPECT_TRUE(c->wait_closed());

  auto d = open_extended(s);
  ASSERT_TRUE(d);
  ASSERT_TRUE(d->send_request(CMD_READ, 0, 5, 0, 512, nullptr, 0, kRequestMagic));
  EXPECT_TRUE(d->wait_closed()) << "a compact header after extended headers";
}

}  // namespace
}  // namespace iov_test::nbd
