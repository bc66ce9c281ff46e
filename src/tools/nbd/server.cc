// server.cc: the listener, the accept loop and the event loops (see server.hpp).
#include "nbd/server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>

#include "absl/strings/str_cat.h"
#include "nbd/event_loop.hpp"
#include "nbd/log.hpp"

namespace iov::nbd {

namespace {

constexpr int64_t kAcceptBackoffMs = 100;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now().time_since_epoch()).count();
}

// Whether the device lends its pages (brd; null_blk without memory).
bool lends(blkdev& dev) {
  blk_lease probe;
  return dev.lend_pages(0, 0, &probe) == 0;
}

}  // namespace

server::server(blkdev& dev, const server_options& opts)
    : dev_(dev),
      opts_(opts),
      budget_(opts.limits.payload_memory),
      ctx_{dev,
           opts_.exp,
           opts_.limits,
           budget_,
           locks_,
           max_payload(opts_.limits),
           write_piece(opts_.limits),
           lends(dev),
           dev.can_replace_pages(),
           opts_.credentials ? opts_.tls : tls_mode::off,
           opts_.credentials.get()} {}

server::~server() {
  shut_down();
  loops_.clear();
  for (int fd : wake_)
    if (fd >= 0)
      close(fd);
}

absl::Status server::listen() {
  if (dev_.get_capacity() >> (63 - SECTOR_SHIFT))
    return absl::InvalidArgumentError("the device is 2^63 bytes or larger: NBD cannot describe its size");
  absl::Status st = opts_.inherited_fd >= 0    ? listener_.adopt(opts_.inherited_fd)
                    : opts_.socket_path.empty() ? listener_.open_tcp(opts_.bind_address, opts_.port)
                                                : listener_.open_unix(opts_.socket_path);
  if (!st.ok())
    return st;
  return start();
}

absl::Status server::start() {
  if (!loops_.empty())
    return absl::OkStatus();
  if (opts_.limits.max_connections == 0)
    return absl::InvalidArgumentError("max_connections must be at least 1");
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
    return absl::ResourceExhaustedError(absl::StrCat("pipe: ", std::strerror(errno)));
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  const unsigned n = opts_.limits.threads ? opts_.limits.threads : std::min(cpus, 8u);
  for (unsigned k = 0; k < n; k++) {
    auto loop = std::unique_ptr<event_loop>(new (std::nothrow) event_loop(ctx_, &open_));
    if (!loop)
      return absl::ResourceExhaustedError("out of memory for an event loop");
    if (absl::Status st = loop->start(opts_.limits.max_connections); !st.ok())
      return st;
    loops_.push_back(std::move(loop));
  }
  return absl::OkStatus();
}

void server::stop() {
  stopping_.store(true, std::memory_order_relaxed);
  char c = 1;
  if (wake_[1] >= 0) {
    [[maybe_unused]] ssize_t n = write(wake_[1], &c, 1);
  }
}

bool server::adopt(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0 && !(flags & O_NONBLOCK))
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  const unsigned max = opts_.limits.max_connections;
  unsigned open = open_.load(std::memory_order_relaxed);
  do {
    if (open >= max || loops_.empty() || stopping_.load(std::memory_order_relaxed)) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      ::shutdown(fd, SHUT_RDWR);  // the client sees the end at once
      close(fd);
      if (open >= max)
        log_event(event::refused, "refused a connection: %u open (--max-connections=%u)", open, max);
      return false;
    }
  } while (!open_.compare_exchange_weak(open, open + 1, std::memory_order_relaxed));
  event_loop* least = loops_.front().get();
  for (const auto& l : loops_)
    if (l->load() < least->load())
      least = l.get();
  accepted_.fetch_add(1, std::memory_order_relaxed);
  if (!least->adopt(fd)) {
    accepted_.fetch_sub(1, std::memory_order_relaxed);
    open_.fetch_sub(1, std::memory_order_relaxed);
    refused_.fetch_add(1, std::memory_order_relaxed);
    log_event(event::no_memory, "out of memory for a new connection: refused");
    return false;
  }
  return true;
}

// Takes every client waiting in the listen queue. When descriptors or
// memory run out, accepting pauses: the clients stay queued, and are taken
// once some free up.
void server::accept_all() {
  for (;;) {
    const int fd = listener_.accept_one();
    if (fd >= 0) {
      adopt(fd);
      continue;
    }
    switch (-fd) {
      case EAGAIN:
        return;
      case EINTR:
      case ECONNABORTED:
      case EPROTO:
      case EPERM:
        continue;  // this client's trouble, not the listener's
      default:
        log_event(event::accept_failed, "cannot accept a connection (%s): the waiting clients are taken when it "
                  "passes", std::strerror(-fd));
        backoff_until_ms_ = now_ms() + kAcceptBackoffMs;
        return;
    }
  }
}

void server::run() {
  if (wake_[0] < 0)
    return;
  while (!stopping_.load(std::memory_order_relaxed)) {
    const int64_t now = now_ms();
    const bool paused = now < backoff_until_ms_;
    pollfd fds[2] = {{wake_[0], POLLIN, 0}, {paused ? -1 : listener_.fd(), POLLIN, 0}};
    const int n = poll(fds, 2, paused ? static_cast<int>(backoff_until_ms_ - now) : -1);
    if (n < 0 && errno != EINTR) {
      log_event(event::io_error, "poll: %s: the server stops", std::strerror(errno));
      break;
    }
    if (fds[0].revents)
      break;
    if (fds[1].revents)
      accept_all();
  }
  shut_down();
}

void server::shut_down() {
  stopping_.store(true, std::memory_order_relaxed);
  for (auto& l : loops_)
    l->stop();
  listener_.close();
}

server_stats server::stats() const {
  return {open_.load(std::memory_order_relaxed),    accepted_.load(std::memory_order_relaxed),
          refused_.load(std::memory_order_relaxed), budget_.in_use(),
          budget_.peak(),                           budget_.waits()};
}

}  // namespace iov::nbd
