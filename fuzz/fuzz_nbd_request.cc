// fuzz_nbd_request: the fuzzer's bytes as an NBD client's side of the stream,
// fed over a socketpair to an iov::nbd::server (src/tools/nbd) with small
// limits, serving a 1 MiB brd or null_blk device: the handshake, option
// haggling and transmission must never crash, leak or hang, and the payload
// memory never exceed its limit, whatever arrives. The first
// byte picks how much of the stream the harness makes well formed, so that
// the fuzzer reaches deep states without having to find the magics:
//   0  the bytes as they are, from the client flags on
//   1  client flags and NBD_OPT_GO given, then the bytes as requests
//   2  the same after STRUCTURED_REPLY and SET_META_CONTEXT base:allocation
//   3  records: options with the right magic, then requests with the right
//      magic whose fields, flags and payloads come from the bytes; in the
//      compact form, or extended (after NBD_OPT_EXTENDED_HEADERS: 32-byte
//      headers, 64-bit lengths, NBD_CMD_FLAG_PAYLOAD_LEN) when the second
//      byte says so
// The second byte also picks TLS: off, on or require, with a PSK (the same
// for every input); with require, every option but STARTTLS and ABORT
// before the handshake is refused. With TLS and bit 8, the harness sends
// the client flags and STARTTLS, waits for the ACK (the server drops a
// client that sends more before it), then the bytes as the TLS handshake,
// whose state machine before the key exchange is then fuzzed.
// The server's replies are drained as they come; the stream ends with a
// half-close, so the connection always sees EOF and returns.
//
//   build/fuzz/fuzz/fuzz_nbd_request -max_total_time=60 build/fuzz/corpus/fuzz_nbd_request
//   build/fuzz/fuzz/fuzz_nbd_request crash-...          # replay one input
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "fuzz_model.hpp"
#include "fuzz_nbd_psk.hpp"
#include "iov_drivers/blkdev.hpp"
#include "nbd/server.hpp"

namespace {

using bytes = std::vector<unsigned char>;
constexpr uint64_t kDeviceSize = 1 << 20;

void put16(bytes* b, uint16_t v) { b->push_back(v >> 8), b->push_back(v & 0xff); }
void put32(bytes* b, uint32_t v) { put16(b, v >> 16), put16(b, v & 0xffff); }
void put64(bytes* b, uint64_t v) { put32(b, v >> 32), put32(b, v & 0xffffffff); }

void option(bytes* s, uint32_t opt, const bytes& data) {
  put64(s, 0x49484156454f5054ull);  // IHAVEOPT
  put32(s, opt);
  put32(s, static_cast<uint32_t>(data.size()));
  s->insert(s->end(), data.begin(), data.end());
}

bytes go_payload() { return {0, 0, 0, 0, 0, 0}; }  // the empty name, no information requests

bytes meta_payload() {
  static const char kAllocation[] = "base:allocation";
  bytes b{0, 0, 0, 0, 0, 0, 0, 1};
  put32(&b, sizeof kAllocation - 1);
  b.insert(b.end(), kAllocation, kAllocation + sizeof kAllocation - 1);
  return b;
}

bytes take(fuzz::input& in, size_t n) {
  bytes b;
  for (size_t k = 0; k < n && !in.empty(); k++)
    b.push_back(in.u8());
  return b;
}

// An offset near where bounds checks decide: inside, at and past the end, misaligned, huge.
uint64_t pick_offset(fuzz::input& in) {
  switch (in.u8() % 5) {
    case 0: return in.below(kDeviceSize / 512) * 512;
    case 1: return kDeviceSize - 512 * (in.u8() % 4);
    case 2: return in.below(kDeviceSize);
    case 3: return ~uint64_t{0} - in.u16();
    default: return in.u64();
  }
}

uint32_t pick_length(fuzz::input& in) {
  switch (in.u8() % 4) {
    case 0: return static_cast<uint32_t>(512 * in.below(130));
    case 1: return in.u16();
    case 2: return static_cast<uint32_t>(kDeviceSize) + 512 * (in.u8() % 3) - 512;
    default: return in.u32();
  }
}

// Mode 3: options, then requests, each with its magic.
void records(fuzz::input& in, bytes* s, bool extended) {
  put32(s, 3);  // FIXED_NEWSTYLE | NO_ZEROES
  for (int n = in.u8() % 4; n > 0 && !in.empty(); n--) {
    uint32_t opt = in.u8() % 12;
    if (opt == 2 || opt == 1)  // ABORT and EXPORT_NAME end the haggling: only at the end
      opt = 8;
    option(s, opt, opt == 10 && in.u8() % 2 ? meta_payload() : take(in, in.u8() % 24));
  }
  if (in.u8() % 4 == 0) {
    option(s, 1, {});  // EXPORT_NAME, the empty name
  } else {
    option(s, extended ? 11 : 8, {});
    option(s, 10, meta_payload());
    option(s, 7, go_payload());
  }
  for (int n = 0; n < 32 && !in.empty(); n++) {
    uint16_t type = in.u8() % 9, flags = in.u8() % 4 ? in.u8() & 0x3f : in.u16();
    uint64_t offset = pick_offset(in);
    uint64_t length = pick_length(in);
    if (extended && in.u8() % 4 == 0)
      length |= uint64_t{in.u32()} << 32;  // an effect length beyond 32 bits
    if (extended && type == 1 && in.u8() % 8)
      flags |= 1 << 5;  // PAYLOAD_LEN, as a WRITE must have it
    const bool payload_follows = extended ? (flags & (1 << 5)) != 0 : type == 1;
    put32(s, extended ? 0x21e41c71 : 0x25609513);
    put16(s, flags);
    put16(s, type);
    put64(s, n);
    put64(s, offset);
    if (payload_follows) {  // a payload of what the length says, or cut short at the end
      length = std::min<uint64_t>(length, 256 * 1024);
      extended ? put64(s, length) : put32(s, static_cast<uint32_t>(length));
      bytes payload(length, static_cast<unsigned char>(in.u8()));
      bool cut = in.u8() % 16 == 0;
      s->insert(s->end(), payload.begin(), cut ? payload.begin() + payload.size() / 2 : payload.end());
      if (cut)
        return;
    } else {
      extended ? put64(s, length) : put32(s, static_cast<uint32_t>(length));
    }
  }
}

bytes build_stream(fuzz::input& in, unsigned mode, bool extended, size_t* hold) {
  bytes s;
  if (hold) {  // client flags and STARTTLS; the rest, after its ACK, to the TLS handshake
    put32(&s, 3);
    option(&s, 5, {});
    *hold = s.size();
    mode = 0;
  }
  if (mode == 3) {
    records(in, &s, extended);
    return s;
  }
  if (mode >= 1) {
    put32(&s, 3);
    if (mode == 2) {
      option(&s, 8, {});
      option(&s, 10, meta_payload());
    }
    option(&s, 7, go_payload());
  }
  while (!in.empty())
    s.push_back(in.u8());
  return s;
}

// Writes the stream, drains replies, half-closes, and drains to EOF; bounded
// by a wait that only a hung server would exhaust.
// Bytes past `hold` wait until `wait_for` bytes have come back (STARTTLS's
// ACK: the client must not send its ClientHello before it).
void pump(int fd, const bytes& stream, size_t hold = SIZE_MAX, size_t wait_for = 0) {
  size_t sent = 0, received = 0;
  bool write_open = true;
  char sink[65536];
  for (;;) {
    const size_t limit = received >= wait_for ? stream.size() : std::min(hold, stream.size());
    if (write_open && sent == stream.size()) {
      shutdown(fd, SHUT_WR);
      write_open = false;
    }
    const bool want_out = write_open && sent < limit;
    pollfd p{fd, static_cast<short>(POLLIN | (want_out ? POLLOUT : 0)), 0};
    int n = poll(&p, 1, 20000);
    if (n == 0) {
      std::fprintf(stderr, "fuzz_nbd_request: the server neither reads nor closes (hung)\n");
      std::abort();
    }
    if (n < 0)
      continue;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t r = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
        return;  // the server is done with the connection
      if (r > 0)
        received += static_cast<size_t>(r);
    }
    if (want_out && (p.revents & POLLOUT)) {
      ssize_t w = send(fd, stream.data() + sent, limit - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w > 0)
        sent += static_cast<size_t>(w);
      else if (w < 0 && errno != EAGAIN && errno != EINTR)
        write_open = false;  // the server closed first: keep draining
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::input in(data, size);
  const uint8_t setup = in.u8();
  iov::blkdev_settings settings{{"size", std::to_string(kDeviceSize)}};
  const bool brd = !(setup & 4);
  if (!brd) {
    settings.emplace_back("memory_backed", setup & 128 ? "0" : "1");
    settings.emplace_back("blocksize", setup & 8 ? "4096" : "512");
    if (setup & 16)
      settings.emplace_back("cache_size", "1");
  } else if (setup & 8) {
    settings.emplace_back("detect_zeroes", "unmap");
  }
  auto dev = iov::blkdev_create(brd ? "brd" : "null_blk", settings);
  FUZZ_CHECK(dev.ok());
  const uint8_t more = in.u8();
  size_t hold = SIZE_MAX;
  const bool starttls_first = (more & 6) && (more & 8);
  bytes stream = build_stream(in, setup & 3, more & 1, starttls_first ? &hold : nullptr);

  int sv[2];
  FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  // The server core with small limits, so that the stream meets them: one
  // event loop, two connections, and payload memory of 128 KiB or 1 MiB
  // (which is then also the largest request).
  iov::nbd::server_options opts;
  opts.exp.read_only = setup & 32;
  opts.limits.threads = 1;
  opts.limits.max_connections = 2;
  opts.limits.payload_memory = setup & 64 ? 128 * 1024 : 1 << 20;
  if (more & 6) {
    opts.tls = (more & 6) == 2 ? iov::nbd::tls_mode::on : iov::nbd::tls_mode::require;
    opts.credentials = fuzz::nbd_psk_credentials();
  }
  iov::nbd::server server(**dev, opts);
  FUZZ_CHECK(server.start().ok());
  FUZZ_CHECK(server.adopt(sv[1]));  // the server owns sv[1] now
  // The greeting (18 bytes) and STARTTLS's ACK (20) come before the handshake.
  pump(sv[0], stream, hold, starttls_first ? 38 : 0);
  close(sv[0]);
  FUZZ_CHECK(server.stats().payload_peak <= opts.limits.payload_memory);
  return 0;
}
