// event_loop.hpp: one thread serving many connections with epoll. Every
// socket is non-blocking and registered edge-triggered for reading (and for
// writing while its replies wait); a connection (connection.hpp) runs when its socket becomes ready,
// when payload memory it waits for is granted, or on its next turn after
// yielding to the others; deadlines are checked four times a second. A
// server has a few loops (one per CPU by default) and hands each accepted
// socket to the least loaded.
//
//   event_loop loop(ctx, &open_count);
//   if (absl::Status st = loop.start(max_connections); !st.ok()) return st;
//   loop.adopt(fd);   // from any thread
//   loop.stop();      // closes every connection, ends the thread
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "nbd/budget.hpp"
#include "nbd/connection.hpp"
#include "nbd/page_recycle.hpp"

namespace iov::nbd {

class event_loop final : public payload_budget::listener {
 public:
  // `open` counts the server's connections; the loop decrements it for each
  // connection it ends.
  event_loop(const context& ctx, std::atomic<unsigned>* open) : ctx_(ctx), open_(open) {}
  ~event_loop();  // stop()
  event_loop(const event_loop&) = delete;
  event_loop& operator=(const event_loop&) = delete;

  // The epoll instance, the wake-up eventfd and the thread; room for
  // `capacity` connections is reserved now, so that serving them allocates
  // no bookkeeping.
  absl::Status start(unsigned capacity);
  // From any thread: serve the connected, non-blocking socket `fd` (its
  // count already taken in *open). False when the connection cannot be set
  // up (no memory): fd is closed then too.
  bool adopt(int fd);
  // From any thread: end every connection and the thread; returns after.
  void stop();
  unsigned load() const { return load_.load(std::memory_order_relaxed); }

  // payload_budget::listener: a connection parked here may run.
  void budget_granted() override;

 private:
  void loop();
  void wake();
  void take_inbox(clock_type::time_point now);
  bool watch(connection* c, int op, bool out);
  void run(connection* c, clock_type::time_point now);
  void remove(connection* c);
  void sweep(clock_type::time_point now);

  const context& ctx_;
  std::atomic<unsigned>* open_;
  // The pages its connections' inline WRITEs replaced, reused once no
  // reader holds them (used from the loop thread only; destroyed after
  // every connection).
  page_recycler recycler_;
  int epfd_ = -1, wakefd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false}, granted_{false};
  std::atomic<unsigned> load_{0};

  std::mutex inbox_lock_;
  std::vector<connection*> inbox_;  // adopted, not yet registered (capacity reserved)
  std::vector<connection*> taken_;  // the loop's side of the inbox swap

  // The loop thread's own.
  std::vector<connection*> conns_;    // slot -> connection
  std::vector<connection*> yielded_;  // to run again
};

}  // namespace iov::nbd
