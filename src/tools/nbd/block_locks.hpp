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
// Only a read-modify-write can lose a write, so while no client that may
// write parts of blocks is connected, a write of whole blocks takes no
// stripe (whole_guard): it runs in an RCU read-side section instead, which a
// client of that kind waits out when it registers (add_partial_writer), as
// the kernel's rcu_sync lets percpu_rw_semaphore readers skip their lock
// until a writer comes. The stripes' lock and unlock, cache lines shared by
// every event loop, cost a 4 KiB WRITE about 0.2 µs on a 2-CPU Xeon
// (docs/nbd-storage-path.md).
//
//   block_locks locks;
//   { block_locks::guard g(locks, first_block, end_block); ...write... }
//   { block_locks::whole_guard g(locks, first_block, end_block); ...write of whole blocks... }
#pragma once

#include <atomic>
#include <bitset>
#include <cstdint>
#include <mutex>

#include "iov/rcu.hpp"

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
    guard(block_locks& l, uint64_t first, uint64_t end) : locks_(l) { held_ = locks_.lock(first, end); }
    ~guard() { locks_.unlock(held_); }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;

   private:
    block_locks& locks_;
    std::bitset<kStripes> held_;
  };

  // For a write of whole blocks [first, end): the stripes while a partial
  // writer is registered, else a read-side section (nothing in the write may
  // wait for a grace period).
  class whole_guard {
   public:
    whole_guard(block_locks& l, uint64_t first, uint64_t end) : locks_(l) {
      rcu_read_lock();
      if (l.partial_writers_.load(std::memory_order_acquire) == 0)
        return;
      rcu_read_unlock();
      in_section_ = false;
      held_ = locks_.lock(first, end);
    }
    ~whole_guard() {
      if (in_section_)
        rcu_read_unlock();
      else
        locks_.unlock(held_);
    }
    whole_guard(const whole_guard&) = delete;
    whole_guard& operator=(const whole_guard&) = delete;

   private:
    block_locks& locks_;
    bool in_section_ = true;
    std::bitset<kStripes> held_;
  };

  // A client that may write parts of blocks (it negotiated no block size):
  // from the return on, every write takes its stripes. Waits for a grace
  // period, so that the writes that found no partial writer have ended; the
  // caller must not be in a read-side section.
  void add_partial_writer() {
    partial_writers_.fetch_add(1, std::memory_order_acq_rel);
    synchronize_rcu();
  }
  void remove_partial_writer() { partial_writers_.fetch_sub(1, std::memory_order_release); }

 private:
  struct alignas(64) stripe {  // one cache line each: writers of different blocks do not share one
    std::mutex m;
  };
  // The stripes of blocks [first, end), taken in ascending order; released
  // in the reverse.
  std::bitset<kStripes> lock(uint64_t first, uint64_t end) {
    std::bitset<kStripes> held;
    if (end - first >= kStripes)
      held.set();
    else
      for (uint64_t b = first; b < end; b++)
        held.set(b % kStripes);
    for (unsigned k = 0; k < kStripes; k++)
      if (held[k])
        stripes_[k].m.lock();
    return held;
  }
  void unlock(const std::bitset<kStripes>& held) {
    for (unsigned k = kStripes; k-- > 0;)
      if (held[k])
        stripes_[k].m.unlock();
  }

  stripe stripes_[kStripes];
  std::atomic<unsigned> partial_writers_{0};  // clients registered by add_partial_writer()
};

}  // namespace iov::nbd
