// log.cc: rate-limited event lines (see log.hpp).
#include "nbd/log.hpp"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace iov::nbd {

namespace {
struct kind_state {
  std::chrono::steady_clock::time_point last{};
  unsigned long left_out = 0;
  bool seen = false;
};
std::mutex log_lock;
kind_state states[static_cast<int>(event::kinds)];
}  // namespace

void log_event(event kind, const char* format, ...) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> guard(log_lock);
  kind_state& s = states[static_cast<int>(kind)];
  if (s.seen && now - s.last < std::chrono::seconds(1)) {
    s.left_out++;
    return;
  }
  char line[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (s.left_out)
    std::fprintf(stderr, "iov-nbd: %s (and %lu more like it)\n", line, s.left_out);
  else
    std::fprintf(stderr, "iov-nbd: %s\n", line);
  s.seen = true;
  s.last = now;
  s.left_out = 0;
}

}  // namespace iov::nbd
