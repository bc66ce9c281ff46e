// context.hpp: what every connection of a server shares (the device, its
// limits, the payload budget, the block locks, TLS), and the clock its
// deadlines use. The server builds one; each connection (connection.hpp)
// and its parts hold a reference to it.
//
//   const context ctx{dev, exp, limits, budget, locks, max_payload(limits), write_piece(limits), ...};
#pragma once

#include <chrono>
#include <cstdint>

#include "iov_drivers/blkdev.hpp"
#include "nbd/block_locks.hpp"
#include "nbd/budget.hpp"
#include "nbd/config.hpp"
#include "nbd/tls.hpp"

namespace iov::nbd {

using clock_type = std::chrono::steady_clock;

struct context {
  blkdev& dev;
  const export_options& exp;
  const server_limits& limits;
  payload_budget& budget;
  block_locks& locks;    // held by every write of the device (block_locks.hpp)
  uint32_t max_payload;  // max_payload(limits)
  uint64_t piece;        // write_piece(limits)
  bool lends;            // the device lends its pages (blkdev::lend_pages)
  bool replaces;         // it takes a WRITE's whole pages (blkdev::replace_pages)
  tls_mode tls;          // off unless credentials are loaded
  const tls_credentials* credentials;

  // Whole logical blocks of the device, as every request of a client that
  // negotiated block sizes must be (another client's may be any bytes), and
  // as a WRITE must be for the device to take its pages whole.
  bool block_aligned(uint64_t offset, uint64_t length) const {
    const uint64_t lbs = dev.limits().logical_block_size;
    return offset % lbs == 0 && length % lbs == 0;
  }
};

}  // namespace iov::nbd
