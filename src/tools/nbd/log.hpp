// log.hpp: one line on stderr for each event a server survives (a refused
// connection, a timeout, memory or descriptors that ran out), at most one a
// second of each kind, the next one saying how many were left out. Protocol
// breaches are not logged: any client may send anything.
//
//   iov::nbd::log_event(iov::nbd::event::refused, "refused a connection: %u open", n);
//   // iov-nbd: refused a connection: 100 open (and 41 more like it)
#pragma once

namespace iov::nbd {

enum class event : unsigned char { refused, accept_failed, timeout, no_memory, io_error, kinds };

void log_event(event kind, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace iov::nbd
