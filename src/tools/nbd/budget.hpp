// budget.hpp: the payload memory every connection of a server shares. A
// connection reserves a piece of a WRITE's payload (config.hpp: write_piece)
// before it receives it and gives it back once the piece is written; when
// the memory is spent it waits,
// in arrival order, reading nothing more from its client, until enough is
// given back (back-pressure instead of exhaustion). A reservation is all or
// nothing, so no two half-served connections can wait on each other.
//
//   payload_budget budget(64 << 20);
//   payload_budget::waiter w;
//   w.to_tell = &my_event_loop;
//   if (budget.acquire(&w, n) == payload_budget::queued) park();   // to_tell is told when granted
//   ...
//   budget.release(&w);                                             // done, or given up
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace iov::nbd {

class payload_budget {
 public:
  // Told, from whichever thread gave memory back, that one of its waiters
  // was granted; it then finds them by waiter::granted().
  struct listener {
    virtual void budget_granted() = 0;

   protected:
    ~listener() = default;
  };
  // One reservation in waiting; embedded in its connection.
  struct waiter {
    listener* to_tell = nullptr;
    uint64_t bytes = 0;
    waiter* next = nullptr;
    bool queued = false;
    std::atomic<bool> granted_{false};
    bool granted() const { return granted_.load(std::memory_order_acquire); }
  };
  enum result { granted, queued, too_big };

  explicit payload_budget(uint64_t total) : total_(total) {}
  payload_budget(const payload_budget&) = delete;
  payload_budget& operator=(const payload_budget&) = delete;

  // Reserves `bytes` for w: granted now, queued (w->to_tell is told later,
  // after which w->granted() holds), or too_big (more than the whole budget).
  result acquire(waiter* w, uint64_t bytes);
  // Gives back w's reservation, or withdraws it if still queued; the queued
  // waiters that now fit are granted, first come first served. Afterwards w
  // may be reused or destroyed. Does nothing for a waiter that holds nothing.
  void release(waiter* w);

  uint64_t total() const { return total_; }
  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  uint64_t waits() const { return waits_.load(std::memory_order_relaxed); }

 private:
  void give_back(uint64_t bytes);
  void grant_queued_locked(listener** told, unsigned* ntold, unsigned max);

  const uint64_t total_;
  std::mutex lock_;
  waiter* head_ = nullptr;  // FIFO of queued waiters
  waiter* tail_ = nullptr;
  std::atomic<uint64_t> in_use_{0}, peak_{0}, waits_{0};
};

}  // namespace iov::nbd
