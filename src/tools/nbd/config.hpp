// config.hpp: what an iov-nbd server is told: the export it serves, and the
// limits that keep any client, or many, from taking more than their share
// (modelled on qemu-nbd's and nbdkit's: a connection limit, a handshake
// limit, payload memory shared by all).
//
//   iov::nbd::server_limits lim;
//   lim.max_connections = 16;
//   lim.payload_memory = 256 << 20;
//   uint32_t largest = iov::nbd::max_payload(lim);   // what NBD_INFO_BLOCK_SIZE advertises
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace iov::nbd {

struct export_options {
  bool read_only = false;
  std::string name = "";           // what NBD_OPT_LIST reports; any name is served
  std::string description = "iov";
};

// Payloads up to this size are received into the connection's own input
// buffer; larger ones draw on the shared payload memory.
inline constexpr uint32_t kInlinePayload = 64 * 1024;
// A larger payload is received, and written, a piece at a time: at most
// this much (or the payload memory, if smaller), between multiples of it on
// the device. A WRITE of one piece reaches the device whole or not at all.
inline constexpr uint64_t kWritePiece = 4 << 20;

struct server_limits {
  // Connections served at once (fio's 128 jobs fit); one more is accepted
  // and closed at once.
  unsigned max_connections = 256;
  // Seconds from accept to the end of the handshake (NBD_OPT_GO); 0: none.
  unsigned handshake_timeout = 10;
  // Seconds a connection in transmission may stay without any request; 0:
  // none (the kernel's client and others keep idle connections for long).
  unsigned idle_timeout = 0;
  // Seconds a client may keep the server waiting in the middle of a message:
  // a request (header or payload) partly received, or replies it does not
  // take; counted from the last request completed or 64 KiB moved. 0: none.
  unsigned request_timeout = 30;
  // Bytes shared by every connection for WRITE payloads above
  // kInlinePayload, reserved a piece (write_piece()) at a time as the
  // payload arrives (a connection waits, reading nothing more, while they
  // are spent) and allocated as the bytes arrive.
  uint64_t payload_memory = uint64_t{64} << 20;
  // The largest READ or WRITE (nbdkit's): advertised in NBD_INFO_BLOCK_SIZE.
  uint32_t max_payload = 64u << 20;
  // Event-loop threads; 0: one per CPU, at most 8.
  unsigned threads = 0;
  // A test knob, not a tuning one: the most bytes one recv(), one sendmsg()
  // and one TLS record (each way, and each of GnuTLS's own socket calls)
  // moves, so that a short transfer or a record boundary can fall on any
  // byte of a message (fuzz/fuzz_nbd_session.cc); 0: no limit.
  size_t io_per_call = 0;
};

// The largest request served: max_payload, at least kInlinePayload, in
// whole 4 KiB. The payload memory does not bound it: a WRITE takes it a
// piece at a time.
inline uint32_t max_payload(const server_limits& l) {
  const uint64_t m = l.max_payload < kInlinePayload ? kInlinePayload : l.max_payload;
  return static_cast<uint32_t>(m & ~uint64_t{4095});
}

// A WRITE payload's piece: kWritePiece, or the payload memory if smaller,
// in whole 4 KiB (so whole logical blocks), at least kInlinePayload.
inline uint64_t write_piece(const server_limits& l) {
  uint64_t m = l.payload_memory < kWritePiece ? l.payload_memory : kWritePiece;
  if (m < kInlinePayload)
    m = kInlinePayload;
  return m & ~uint64_t{4095};
}

}  // namespace iov::nbd
