// block_locks.hpp: striped locks over a device's logical blocks, shared by
// every connection of a server. A client that negotiated no block size may
// write any byte range (minimum block size 1), which the server does as a
// read-modify-write of the edge blocks: between that read and that write,
// no other write of the same block may land, or it would be lost. So every
// write of the device (WRITE, TRIM, WRITE_ZEROES, aligned or not) holds the
// stripes of the blocks it covers while it runs. Reads take none: a
// read-modify-write puts back the bytes it read, so a reader sees nothing of
// it but the bytes written.
//
//   block_locks locks;
//   { block_locks::guard g(locks, first_block, end_block); ...write... }
#pragma once

#include <bitset>
#include <cstdint>
#include <mutex>

namespace iov::nbd {

class block_locks {
 public:
  // Sixteen: a handful of event loops rarely meet on one stripe, and a
  // write that covers them all holds 16 locks, well under the 64 a thread
  // may hold at once under ThreadSanitizer's deadlock detector (with 64
  // stripes, a large write plus the xarray's lock aborted every NBD test
  // under TSan).
  static constexpr unsigned kStripes = 16;

  // Holds the stripes of blocks [first, end), taken in ascending stripe
  // order (so that two guards never wait for each other in a cycle).
  class guard {
   public:
    guard(block_locks& l, uint64_t first, uint64_t end) : locks_(l) {
      if (end - first >= kStripes)
        held_.set();
      else
        for (uint64_t b = first; b < end; b++)
          held_.set(b % kStripes);
      for (unsigned k = 0; k < kStripes; k++)
        if (held_[k])
          locks_.stripes_[k].m.lock();
    }
    ~guard() {
      for (unsigned k = kStripes; k-- > 0;)
        if (held_[k])
          locks_.stripes_[k].m.unlock();
    }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;

   private:
    block_locks& locks_;
    std::bitset<kStripes> held_;
  };

 private:
  struct alignas(64) stripe {  // one cache line each: writers of different blocks do not share one
    std::mutex m;
  };
  stripe stripes_[kStripes];
};

}  // namespace iov::nbd
