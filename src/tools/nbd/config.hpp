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
  // kInlinePayload, reserved whole when the header arrives (a connection
  // waits, reading nothing more, while they are spent) and allocated as the
  // bytes arrive.
  uint64_t payload_memory = uint64_t{64} << 20;
  // The largest READ or WRITE, before max_payload() caps it.
  uint32_t max_payload = 32u << 20;
  // Event-loop threads; 0: one per CPU, at most 8.
  unsigned threads = 0;
};

// The largest request served: max_payload, no more than payload_memory
// (so that any WRITE can be given its reservation), at least kInlinePayload,
// in whole 4 KiB.
inline uint32_t max_payload(const server_limits& l) {
  uint64_t m = l.max_payload < l.payload_memory ? l.max_payload : l.payload_memory;
  if (m < kInlinePayload)
    m = kInlinePayload;
  return static_cast<uint32_t>(m & ~uint64_t{4095});
}

}  // namespace iov::nbd
