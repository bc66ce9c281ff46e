// page_recycle.hpp: the pages an event loop's WRITEs replaced on the device
// (blkdev::replace_pages), taken back for its next WRITEs once no reader can
// hold them. Freeing each one after its own grace period (free_page_rcu) cost
// a 4 KiB WRITE on brd 0.6-1.0 µs of the server's CPU over a copy into the
// page in place (docs/nbd-benchmarks.md): a call_rcu per page, the free on liburcu's
// callback thread into that thread's page cache, from there to the buddy
// lists under the allocator's lock, and back out to the event loop's cache
// for the next WRITE's alloc_page. Here the pages stay with the loop: kBatch
// of them wait for one grace period together (one call_rcu, whose callback
// only marks the batch ready), then are handed out again as they are.
//
// One per event loop, used from its thread only; what it holds is bounded:
// at most kMaxWaiting batches wait for their grace period (a page retired
// beyond that is freed after its own, as before), the pages ready for
// reuse are those of batches that waited, and they are freed once the loop
// stops writing (trim). A batch still waiting when the recycler goes is
// freed by its callback.
//
//   page_recycler r;
//   page* p = r.alloc();             // a reused page (old bytes) or alloc_page(GFP_NOIO); nullptr: no memory
//   dev.replace_pages(idx, &p, 1, &why, &old);
//   r.retire(old);                   // reused after a grace period (nullptr: nothing)
#pragma once

#include <atomic>
#include <cstddef>
#include <vector>

#include "iov/page.hpp"
#include "iov/rcu.hpp"

namespace iov::nbd {

class page_recycler {
 public:
  static constexpr unsigned kBatch = 64;       // pages per grace period
  // Batches waiting at most: 8 MiB. liburcu's callback thread waits 10 ms
  // between grace periods, so a page waits 10-20 ms: at 100K 4 KiB WRITEs a
  // second, 1000-2000 pages, which 16 batches did not cover.
  static constexpr unsigned kMaxWaiting = 32;

  page_recycler() = default;
  ~page_recycler();
  page_recycler(const page_recycler&) = delete;
  page_recycler& operator=(const page_recycler&) = delete;

  // An order-0 page whose bytes are the caller's to overwrite: one retired
  // whose grace period has passed, else a new one. nullptr without memory.
  page* alloc();
  // p (nullptr: nothing) is no longer reachable by a new reader; those that
  // hold it may still read it until a grace period ends.
  void retire(page* p);
  // Gives back a page no reader ever saw (one alloc() handed out unused).
  void give_back(page* p);
  // Frees the ready pages if alloc() took none since the last call: the
  // event loop calls it on its sweeps (four a second), so that a loop whose
  // clients stopped writing gives back what it kept within half a second.
  void trim();

  // Pages held: waiting for a grace period (the open batch included) and ready.
  size_t waiting() const;
  size_t ready() const { return ready_.size(); }
  bool empty() const { return !open_ && waiting_.empty() && ready_.empty(); }

 private:
  enum state : int { kOpen, kWaiting, kPassed, kOrphaned };
  struct batch {
    rcu_head head;  // first: the callback finds the batch from it
    std::atomic<int> state{kOpen};
    unsigned n = 0;
    page* pages[kBatch];
  };
  static void grace_period_passed(rcu_head* head);
  static void free_batch(batch* b);
  void seal();
  void collect();

  batch* open_ = nullptr;        // filling
  std::vector<batch*> waiting_;  // handed to call_rcu, oldest first
  std::vector<batch*> spare_;    // emptied, for the next open batch
  std::vector<page*> ready_;     // past their grace period
  bool taken_ = false;           // alloc() called since the last trim()
};

}  // namespace iov::nbd
