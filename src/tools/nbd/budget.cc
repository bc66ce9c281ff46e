// budget.cc: the shared payload memory (see budget.hpp).
#include "nbd/budget.hpp"

namespace iov::nbd {

namespace {
void raise_peak(std::atomic<uint64_t>* peak, uint64_t v) {
  uint64_t cur = peak->load(std::memory_order_relaxed);
  while (v > cur && !peak->compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
}  // namespace

payload_budget::result payload_budget::acquire(waiter* w, uint64_t bytes) {
  if (bytes > total_)
    return too_big;
  std::lock_guard<std::mutex> guard(lock_);
  w->bytes = bytes;
  w->granted_.store(false, std::memory_order_relaxed);
  const uint64_t used = in_use_.load(std::memory_order_relaxed);
  if (!head_ && bytes <= total_ - used) {  // nobody ahead, and it fits
    in_use_.store(used + bytes, std::memory_order_relaxed);
    raise_peak(&peak_, used + bytes);
    w->granted_.store(true, std::memory_order_release);
    return granted;
  }
  w->next = nullptr;
  w->queued = true;
  (tail_ ? tail_->next : head_) = w;
  tail_ = w;
  waits_.fetch_add(1, std::memory_order_relaxed);
  return queued;
}

// Grants from the head while the head fits; records whom to tell.
void payload_budget::grant_queued_locked(listener** told, unsigned* ntold, unsigned max) {
  while (head_ && head_->bytes <= total_ - in_use_.load(std::memory_order_relaxed) && *ntold < max) {
    waiter* w = head_;
    head_ = w->next;
    if (!head_)
      tail_ = nullptr;
    w->queued = false;
    const uint64_t used = in_use_.load(std::memory_order_relaxed) + w->bytes;
    in_use_.store(used, std::memory_order_relaxed);
    raise_peak(&peak_, used);
    w->granted_.store(true, std::memory_order_release);
    told[(*ntold)++] = w->to_tell;
  }
}

void payload_budget::give_back(uint64_t bytes) {
  listener* told[16];
  unsigned ntold = 0;
  for (bool more = true; more;) {
    {
      std::lock_guard<std::mutex> guard(lock_);
      in_use_.fetch_sub(bytes, std::memory_order_relaxed);
      bytes = 0;
      ntold = 0;
      grant_queued_locked(told, &ntold, 16);
      more = ntold == 16;
    }
    // Outside the lock: a listener (an event loop) outlives every waiter.
    for (unsigned k = 0; k < ntold; k++)
      told[k]->budget_granted();
  }
}

void payload_budget::release(waiter* w) {
  uint64_t bytes = 0;
  bool was_queued = false;
  {
    std::lock_guard<std::mutex> guard(lock_);
    if (w->queued) {
      waiter* prev = nullptr;
      for (waiter* p = head_; p; prev = p, p = p->next) {
        if (p != w)
          continue;
        (prev ? prev->next : head_) = w->next;
        if (tail_ == w)
          tail_ = prev;
        break;
      }
      w->queued = false;
      was_queued = true;
    } else if (w->granted()) {
      bytes = w->bytes;
    }
    w->granted_.store(false, std::memory_order_relaxed);
  }
  if (bytes || was_queued)
    give_back(bytes);  // a waiter that was behind w may fit now
}

}  // namespace iov::nbd
