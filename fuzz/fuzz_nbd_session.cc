// fuzz_nbd_session: an iov::nbd::server (src/tools/nbd) driven past the
// handshake, in this process over a socketpair, by the tests' NBD client
// (tests/support/nbd_client.cc: written from the protocol, sharing no code
// with the server), and every READ checked byte for byte against a flat
// model of what was written. The fuzzer's bytes choose:
//   - the device: brd, or memory-backed null_blk of 512 or 4096-byte blocks,
//     with or without its cache (--cache_size);
//   - the transport: plain, or TLS with a PSK;
//   - the replies: simple, structured or extended (extended headers);
//   - whether the client negotiates block sizes (then every request is in
//     whole blocks) or not (any offset and length: minimum block size 1);
//   - the server's per-call limit (server_limits::io_per_call), 1 byte to
//     16 KiB: each recv, sendmsg and TLS record moves at most that much, so
//     that a record or a short transfer ends on any byte of a message;
//   - up to 8 WRITE, READ, TRIM and WRITE_ZEROES requests, each anywhere,
//     or at, just past or near the last one's offset (so that they overlap);
//     a WRITE may be read back at once.
// A request's length is bounded by 128 times the per-call limit (at least a
// block), and the requests' lengths together by 1024 times it (at least
// 2 KiB), so that no input makes millions of calls (a TLS record of one
// byte costs about half a millisecond). After the requests the whole device
// is read directly and compared with the model.
//
//   build/fuzz/fuzz/fuzz_nbd_session -max_total_time=60 build/fuzz/corpus/fuzz_nbd_session
//   IOV_FUZZ_TRACE=1 build/fuzz/fuzz/fuzz_nbd_session crash-...   # replay one input, each request shown
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_model.hpp"
#include "fuzz_nbd_psk.hpp"
#include "iov_drivers/blkdev.hpp"
#include "nbd/server.hpp"
#include "support/nbd_client.hpp"

namespace {

namespace client = iov_test::nbd;
constexpr uint64_t kDeviceSize = 256 * 1024;
constexpr uint64_t kMaxLength = 96 * 1024;  // above kInlinePayload: a WRITE's payload in pieces too
constexpr int kOps = 8;

struct device_choice {
  const char* name;
  const char* driver;
  iov::blkdev_settings settings;
};

const device_choice kDevices[] = {
    {"brd", "brd", {}},
    {"null_blk", "null_blk", {{"memory_backed", "1"}}},
    {"null_blk 4k", "null_blk", {{"memory_backed", "1"}, {"blocksize", "4096"}}},
    {"null_blk cache", "null_blk", {{"memory_backed", "1"}, {"cache_size", "1"}}},
    {"null_blk 4k cache", "null_blk", {{"memory_backed", "1"}, {"blocksize", "4096"}, {"cache_size", "1"}}},
};

const char* const kReplies[] = {"simple", "structured", "extended"};

// The model: the device's bytes, zero at the start. A TRIM is advisory
// (the protocol leaves what it covered unspecified until written again):
// the whole blocks it covers may read as before or as zeros (brd discards
// whole pages only, null_blk its blocks), `loose` until a READ says which.
struct flat_disk {
  std::vector<unsigned char> bytes = std::vector<unsigned char>(kDeviceSize);
  std::vector<unsigned char> loose = std::vector<unsigned char>(kDeviceSize);
  FUZZ_MODEL void write(uint64_t off, const client::bytes& d) {
    std::memcpy(&bytes[off], d.data(), d.size());
    std::memset(&loose[off], 0, d.size());
  }
  FUZZ_MODEL void zero(uint64_t off, uint64_t len) {
    std::memset(&bytes[off], 0, len);
    std::memset(&loose[off], 0, len);
  }
  FUZZ_MODEL void trim(uint64_t off, uint64_t len) { std::memset(&loose[off], 1, len); }
  // Whether d, read at off, is what the model allows; a loose byte then
  // takes the value read (a discard is done or not; it does not come back).
  FUZZ_MODEL bool settle(uint64_t off, const client::bytes& d, size_t* bad) {
    for (size_t k = 0; k < d.size(); k++) {
      if (d[k] == bytes[off + k]) {
        loose[off + k] = 0;
      } else if (loose[off + k] && d[k] == 0) {
        bytes[off + k] = 0;
        loose[off + k] = 0;
      } else {
        *bad = k;
        return false;
      }
    }
    return true;
  }
};

// A READ's bytes against the model; the first differing byte shown.
void check_read(flat_disk& m, uint64_t off, const client::bytes& d, uint64_t len) {
  FUZZ_CHECK(d.size() == len);
  size_t k = 0;
  if (m.settle(off, d, &k))
    return;
  std::fprintf(stderr, "fuzz_nbd_session: READ [%llu, +%llu): byte %zu is %02x, the model's %02x%s\n",
               static_cast<unsigned long long>(off), static_cast<unsigned long long>(len), k, d[k],
               m.bytes[off + k], m.loose[off + k] ? " or 00" : "");
  FUZZ_CHECK(!"a READ returned other bytes than were written");
}

// The device read directly (no NBD), against the model.
void check_device(iov::blkdev& dev, flat_disk& m) {
  client::bytes all(kDeviceSize);
  iov::iov_iter it;
  iov::iov_iter_ubuf(&it, iov::ITER_DEST, all.data(), all.size());
  iov::blk_request br{.op = iov::REQ_OP_READ, .sector = 0, .iter = &it};
  FUZZ_CHECK(dev.submit(br) == 0);
  check_read(m, 0, all, kDeviceSize);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::input in(data, size);
  const device_choice& d = kDevices[in.u8() % std::size(kDevices)];
  const uint8_t how = in.u8();
  const bool tls = how & 1, negotiate_blocks = how & 8;
  const unsigned replies = (how >> 1 & 3) % 3;
  const size_t per_call = 1 + in.u16() % 16384;

  iov::blkdev_settings settings = d.settings;
  settings.emplace_back("size", std::to_string(kDeviceSize));
  auto dev = iov::blkdev_create(d.driver, settings);
  FUZZ_CHECK(dev.ok());
  const iov::queue_limits& lim = (*dev)->limits();
  const uint64_t lbs = lim.logical_block_size;
  fuzz::trace("%s, %s, %s replies, %s, io_per_call %zu", d.name, tls ? "TLS-PSK" : "plain", kReplies[replies],
              negotiate_blocks ? "block sizes negotiated" : "any offset", per_call);

  iov::nbd::server_options opts;
  opts.limits.threads = 1;
  opts.limits.io_per_call = per_call;
  if (tls) {
    opts.tls = iov::nbd::tls_mode::require;
    opts.credentials = fuzz::nbd_psk_credentials();
  }
  iov::nbd::server server(**dev, opts);
  FUZZ_CHECK(server.start().ok());
  int sv[2];
  FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  FUZZ_CHECK(server.adopt(sv[1]));  // the server owns sv[1] now

  client::client c(sv[0]);  // owns sv[0]
  FUZZ_CHECK(c.greet());
  if (tls)
    FUZZ_CHECK(c.starttls({.psk_file = fuzz::nbd_psk_file()}));
  if (replies == 1)
    FUZZ_CHECK(c.opt_structured_reply());
  if (replies == 2)
    FUZZ_CHECK(c.opt_extended_headers() == client::REP_ACK);
  const auto go = c.opt_go("", negotiate_blocks ? std::vector<uint16_t>{client::INFO_BLOCK_SIZE}
                                                : std::vector<uint16_t>{});
  FUZZ_CHECK(go.ok && go.size == kDeviceSize);

  flat_disk model;
  const uint64_t most = std::max<uint64_t>(std::min<uint64_t>(kMaxLength, per_call * 128), lbs);
  uint64_t budget = std::max<uint64_t>(per_call * 1024, 2048), last = 0;
  for (int n = 0; n < kOps && !in.empty() && budget; n++) {
    const unsigned type = in.u8() % 4;
    const uint16_t flags = in.u8();
    // Where: anywhere, where the last request was, a little past it, or in
    // the first 64 KiB; so that requests overlap often (a READ's data kept
    // past a WRITE shows only then).
    const unsigned where = in.u8() % 4;
    uint64_t off = where == 0   ? in.below(kDeviceSize)
                   : where == 1 ? last
                   : where == 2 ? std::min(last + in.below(16384), kDeviceSize - 1)
                                : in.below(65536);
    uint64_t len = std::min(1 + in.below(most), budget);
    budget -= len;
    if (negotiate_blocks) {
      off = off / lbs * lbs;
      len = std::max(len / lbs, uint64_t{1}) * lbs;
    }
    len = std::min(len, kDeviceSize - off);
    last = off;
    client::reply r;
    switch (type) {
      case 0: {
        client::bytes w(len);
        for (auto& b : w)
          b = in.u8();
        fuzz::trace("WRITE [%llu, +%llu)%s", static_cast<unsigned long long>(off), static_cast<unsigned long long>(len),
                    flags & 1 ? " FUA" : "");
        r = c.write(off, w, flags & 1 ? client::CMD_FLAG_FUA : 0);
        FUZZ_CHECK(r.ok && r.error == 0);
        model.write(off, w);
        if (flags & 8) {  // read back at once: two of these over one range catch a READ's data kept too long
          fuzz::trace("READ [%llu, +%llu) back", static_cast<unsigned long long>(off),
                      static_cast<unsigned long long>(len));
          r = c.read(off, len);
          FUZZ_CHECK(r.ok && r.error == 0);
          check_read(model, off, r.data, len);
        }
        break;
      }
      case 1: {
        const bool df = replies && (flags & 4);
        fuzz::trace("READ [%llu, +%llu)%s", static_cast<unsigned long long>(off), static_cast<unsigned long long>(len),
                    df ? " DF" : "");
        r = c.read(off, len, df ? client::CMD_FLAG_DF : 0);
        FUZZ_CHECK(r.ok && r.error == 0);
        check_read(model, off, r.data, len);
        break;
      }
      case 2: {
        fuzz::trace("TRIM [%llu, +%llu)", static_cast<unsigned long long>(off), static_cast<unsigned long long>(len));
        r = c.trim(off, len);
        FUZZ_CHECK(r.ok && r.error == 0);
        // The whole blocks inside may be discarded; the partial ones at the
        // ends are not touched.
        const uint64_t s = (off + lbs - 1) / lbs * lbs, e = (off + len) / lbs * lbs;
        if (e > s)
          model.trim(s, e - s);
        break;
      }
      default: {
        const bool no_hole = flags & 2;
        fuzz::trace("WRITE_ZEROES [%llu, +%llu)%s", static_cast<unsigned long long>(off),
                    static_cast<unsigned long long>(len), no_hole ? " NO_HOLE" : "");
        r = c.write_zeroes(off, len, no_hole ? client::CMD_FLAG_NO_HOLE : 0);
        FUZZ_CHECK(r.ok);
        if (!lim.max_write_zeroes_sectors) {
          FUZZ_CHECK(r.error == client::NBD_EINVAL);  // not advertised, so refused
          break;
        }
        FUZZ_CHECK(r.error == 0);
        model.zero(off, len);
        break;
      }
    }
  }
  FUZZ_CHECK(c.disc());
  check_device(**dev, model);
  return 0;
}
