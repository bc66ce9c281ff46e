// page_recycle.cc: see page_recycle.hpp.
#include "nbd/page_recycle.hpp"

#include <new>

#include "iov/page_alloc.hpp"

namespace iov::nbd {

page_recycler::~page_recycler() {
  for (page* p : ready_)
    free_page(p);
  if (open_) {
    for (unsigned k = 0; k < open_->n; k++)
      free_page_rcu(open_->pages[k]);
    delete open_;
  }
  // A batch whose callback has not run yet is left to it.
  for (batch* b : waiting_)
    if (b->state.exchange(kOrphaned, std::memory_order_acq_rel) == kPassed)
      free_batch(b);
  for (batch* b : spare_)
    delete b;
}

// On liburcu's callback thread: the batch's pages are the loop's again; or,
// if the loop's recycler has gone meanwhile, freed here.
void page_recycler::grace_period_passed(rcu_head* head) {
  auto* b = reinterpret_cast<batch*>(head);
  if (b->state.exchange(kPassed, std::memory_order_acq_rel) == kOrphaned)
    free_batch(b);
}

void page_recycler::free_batch(batch* b) {
  for (unsigned k = 0; k < b->n; k++)
    free_page(b->pages[k]);
  delete b;
}

// The batches whose grace period has passed, oldest first (liburcu runs
// callbacks in the order they were queued), into ready_.
void page_recycler::collect() {
  size_t k = 0;
  for (; k < waiting_.size() && waiting_[k]->state.load(std::memory_order_acquire) == kPassed; k++) {
    batch* b = waiting_[k];
    if (ready_.size() + b->n > ready_.capacity())
      break;  // never allocates: the rest waits for room
    ready_.insert(ready_.end(), b->pages, b->pages + b->n);
    b->n = 0;
    spare_.push_back(b);
  }
  waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(k));
}

page* page_recycler::alloc() {
  taken_ = true;
  if (ready_.empty() && !waiting_.empty())
    collect();
  if (ready_.empty())
    return alloc_page(GFP_NOIO);
  page* p = ready_.back();
  ready_.pop_back();
  return p;
}

void page_recycler::give_back(page* p) {
  if (!p)
    return;
  if (ready_.size() < ready_.capacity())
    ready_.push_back(p);
  else
    free_page(p);
}

void page_recycler::retire(page* p) {
  if (!p)
    return;
  if (!open_) {
    if (waiting_.size() == kMaxWaiting)
      collect();
    if (waiting_.size() == kMaxWaiting) {
      free_page_rcu(p);  // as many wait as are kept: this one the ordinary way
      return;
    }
    try {
      if (!spare_.empty()) {
        open_ = spare_.back();
        spare_.pop_back();
      } else {
        open_ = new batch;
      }
      // Room for all that may be held, so that sealing a batch and
      // collect() never allocate.
      waiting_.reserve(kMaxWaiting);
      spare_.reserve(kMaxWaiting + 1);
      ready_.reserve((kMaxWaiting + 1) * kBatch);
    } catch (const std::bad_alloc&) {
      free_page_rcu(p);
      return;
    }
    open_->state.store(kOpen, std::memory_order_relaxed);
  }
  open_->pages[open_->n++] = p;
  if (open_->n == kBatch)
    seal();
}

// The open batch to wait for its grace period (room in waiting_ is reserved).
void page_recycler::seal() {
  open_->state.store(kWaiting, std::memory_order_relaxed);
  waiting_.push_back(open_);
  call_rcu(&open_->head, grace_period_passed);  // releases the batch's stores to the callback
  open_ = nullptr;
}

void page_recycler::trim() {
  if (!taken_) {
    if (open_)
      seal();  // a part batch: its pages are freed by a later trim
    collect();
    for (page* p : ready_)
      free_page(p);
    ready_.clear();
  }
  taken_ = false;
}

size_t page_recycler::waiting() const {
  size_t n = open_ ? open_->n : 0;
  for (const batch* b : waiting_)
    n += b->n;
  return n;
}

}  // namespace iov::nbd
