// event_loop.cc: epoll over the connections of one thread (see event_loop.hpp).
#include "nbd/event_loop.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "nbd/log.hpp"

namespace iov::nbd {

namespace {
constexpr int kSweepMs = 250;   // deadlines are seconds: checked four times a second
constexpr int kMaxEvents = 64;
}  // namespace

event_loop::~event_loop() {
  stop();
  if (epfd_ >= 0)
    close(epfd_);
  if (wakefd_ >= 0)
    close(wakefd_);
}

absl::Status event_loop::start(unsigned capacity) {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  wakefd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epfd_ < 0 || wakefd_ < 0)
    return absl::ResourceExhaustedError(absl::StrCat("epoll/eventfd: ", std::strerror(errno)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the wake-up
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev) != 0)
    return absl::ResourceExhaustedError(absl::StrCat("epoll_ctl: ", std::strerror(errno)));
  try {
    inbox_.reserve(capacity);
    taken_.reserve(capacity);
    conns_.reserve(capacity);
    yielded_.reserve(capacity);
    thread_ = std::thread([this] { loop(); });
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory for an event loop");
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot create an event-loop thread: ", e.what()));
  }
  return absl::OkStatus();
}

bool event_loop::adopt(int fd) {
  connection* c = nullptr;
  try {
    c = new connection(fd, ctx_, this, clock_type::now(), &recycler_);
  } catch (const std::bad_alloc&) {
    ::close(fd);
    return false;
  }
  bool queued;
  {
    std::lock_guard<std::mutex> guard(inbox_lock_);
    queued = inbox_.size() < inbox_.capacity();  // always, within the server's connection limit
    if (queued)
      inbox_.push_back(c);
  }
  if (!queued) {
    delete c;
    return false;
  }
  load_.fetch_add(1, std::memory_order_relaxed);
  wake();
  return true;
}

void event_loop::stop() {
  if (!thread_.joinable())
    return;
  stopping_.store(true, std::memory_order_release);
  wake();
  thread_.join();
}

void event_loop::budget_granted() {
  granted_.store(true, std::memory_order_release);
  wake();
}

void event_loop::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wakefd_, &one, sizeof one);
}

void event_loop::take_inbox(clock_type::time_point now) {
  {
    std::lock_guard<std::mutex> guard(inbox_lock_);
    inbox_.swap(taken_);  // both keep the room reserved at start()
  }
  for (connection* c : taken_) {
    c->slot = conns_.size();
    conns_.push_back(c);
    if (!watch(c, EPOLL_CTL_ADD, false)) {
      log_event(event::accept_failed, "cannot watch a connection (%s): closed", std::strerror(errno));
      remove(c);
      continue;
    }
    run(c, now);  // the greeting goes out now
  }
  taken_.clear();
}

// Readable always; writable only while replies wait, so that a client
// taking its replies does not wake the loop for each one.
bool event_loop::watch(connection* c, int op, bool out) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET | (out ? EPOLLOUT : 0u);
  ev.data.ptr = c;
  c->polls_out = out;
  return epoll_ctl(epfd_, op, c->fd(), &ev) == 0;
}

void event_loop::run(connection* c, clock_type::time_point now) {
  const connection::next next = c->run(now);
  if (next != connection::next::close && c->output_pending() != c->polls_out &&
      !watch(c, EPOLL_CTL_MOD, c->output_pending())) {
    log_event(event::io_error, "cannot watch a connection (%s): closed", std::strerror(errno));
    return remove(c);
  }
  switch (next) {
    case connection::next::wait:
    case connection::next::park:
      return;
    case connection::next::yield:
      if (!c->yielded) {
        c->yielded = true;
        yielded_.push_back(c);
      }
      return;
    case connection::next::close:
      remove(c);
      return;
  }
}

void event_loop::remove(connection* c) {
  // Explicitly: a descriptor copied meanwhile (a fork in another thread)
  // would keep the socket, and so its registration, alive past close().
  epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd(), nullptr);
  if (c->yielded)
    yielded_.erase(std::find(yielded_.begin(), yielded_.end(), c));
  connection* last = conns_.back();
  last->slot = c->slot;
  conns_[c->slot] = last;
  conns_.pop_back();
  delete c;  // closes the socket and gives back its memory
  load_.fetch_sub(1, std::memory_order_relaxed);
  open_->fetch_sub(1, std::memory_order_relaxed);
}

void event_loop::sweep(clock_type::time_point now) {
  recycler_.trim();
  for (size_t k = 0; k < conns_.size();) {
    connection* c = conns_[k];
    const char* why = nullptr;
    if (c->expired(now, &why)) {
      log_event(event::timeout, "closed a connection: %s", why);
      remove(c);  // conns_[k] is now another connection, or past the end
    } else {
      k++;
    }
  }
}

void event_loop::loop() {
  epoll_event events[kMaxEvents];
  auto last_sweep = clock_type::now();
  std::vector<connection*> turn;
  turn.reserve(conns_.capacity());
  while (!stopping_.load(std::memory_order_acquire)) {
    // Without connections, sweeps go on while the recycler holds pages.
    const int timeout = !yielded_.empty() ? 0 : conns_.empty() && recycler_.empty() ? -1 : kSweepMs;
    const int n = epoll_wait(epfd_, events, kMaxEvents, timeout);
    if (n < 0 && errno != EINTR) {
      log_event(event::io_error, "epoll_wait: %s", std::strerror(errno));
      break;
    }
    const auto now = clock_type::now();
    for (int k = 0; k < n; k++) {
      if (events[k].data.ptr) {
        auto* c = static_cast<connection*>(events[k].data.ptr);
        if (events[k].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
          c->hung_up();
        run(c, now);
        continue;
      }
      uint64_t count;
      [[maybe_unused]] ssize_t r = read(wakefd_, &count, sizeof count);
      take_inbox(now);
    }
    if (granted_.exchange(false, std::memory_order_acq_rel)) {
      for (size_t k = 0; k < conns_.size(); k++)
        if (conns_[k]->ready_after_park())
          turn.push_back(conns_[k]);
      for (connection* c : turn)
        run(c, now);  // may remove c, never another: turn stays valid
      turn.clear();
    }
    if (!yielded_.empty()) {
      turn.swap(yielded_);
      for (connection* c : turn)
        c->yielded = false;
      for (connection* c : turn)
        run(c, now);
      turn.clear();
    }
    if (now - last_sweep >= std::chrono::milliseconds(kSweepMs)) {
      sweep(now);
      last_sweep = now;
    }
  }
  take_inbox(clock_type::now());  // adopted while stopping: closed with the rest
  while (!conns_.empty())
    remove(conns_.back());
}

}  // namespace iov::nbd
