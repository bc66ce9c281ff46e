// connection.cc: a connection's phases and its deadlines (see
// connection.hpp); what it says is in handshake.cc and transmission.cc.
#include "nbd/connection.hpp"

#include <new>

#include "nbd/log.hpp"

namespace iov::nbd {

namespace {
constexpr unsigned kMessagesPerRun = 64;  // then the other connections get their turn
}  // namespace

connection::connection(int fd, const context& ctx, payload_budget::listener* loop, clock_type::time_point now,
                       page_recycler* recycler)
    : ctx_(ctx),
      loop_(loop),
      recycler_(recycler),
      accepted_(now),
      transport_(fd, ctx.limits, now),
      out_(ctx.dev, ctx.lends) {
  handshake_.emplace(ctx_, out_);
}

connection::next connection::run(clock_type::time_point now) {
  transport_.start_run(now);
  try {
    return drive();
  } catch (const std::bad_alloc&) {
    out_.release_lease();
    log_event(event::no_memory, "out of memory serving a client: its connection is closed");
    return next::close;
  }
}

connection::next connection::drive() {
  for (unsigned handled = 0;;) {
    if (phase_ == phase::tls_handshake) {
      next n = drive_tls_handshake();
      if (phase_ == phase::tls_handshake || n == next::close)
        return n;
      continue;
    }
    if (phase_ == phase::closing) {
      io r = out_.flush(transport_);
      return r == io::again ? next::wait : next::close;
    }
    if (out_.full()) {
      io r = out_.flush(transport_);
      if (r == io::again)
        return next::wait;  // the client is not reading: take nothing more until it does
      if (r == io::error)
        return next::close;
    }
    if (handled == kMessagesPerRun) {
      io r = out_.flush(transport_);
      return r == io::error ? next::close : r == io::again ? next::wait : next::yield;
    }
    switch (take_message()) {
      case step::done:
        handled++;
        continue;
      case step::close:
        phase_ = phase::closing;  // after the replies already queued
        continue;
      case step::park:
        return out_.flush(transport_) == io::error ? next::close : next::park;
      case step::fail:
        return next::close;
      case step::need_input:
        break;
    }
    switch (fill()) {
      case io::done:
        continue;
      case io::eof:
        phase_ = phase::closing;  // a client that half-closes still gets its replies
        continue;
      case io::error:
        return next::close;
      case io::again: {
        io r = out_.flush(transport_);  // nothing more to read now: send what the batch produced
        return r == io::error ? next::close : next::wait;
      }
    }
  }
}

// One message from the input, if it is all there. The handshake's last
// hands what it negotiated to transmission: the idle and request timeouts
// count from there.
step connection::take_message() {
  if (phase_ == phase::transmission)
    return transmission_->take();
  const step s = handshake_->take(in_);
  if (s != step::done)
    return s;
  switch (handshake_->where()) {
    case handshake::state::starttls:
      phase_ = phase::tls_handshake;
      break;
    case handshake::state::transmission:
      transmission_.emplace(ctx_, handshake_->result(), transport_, in_, out_, loop_, recycler_);
      handshake_.reset();
      phase_ = phase::transmission;
      transport_.progress();
      break;
    case handshake::state::client_flags:
    case handshake::state::options:
      break;
  }
  return s;
}

// Nothing more to read in this run once a recv found the socket drained.
io connection::fill() {
  if (transport_.drained())
    return io::again;
  return phase_ == phase::transmission ? transmission_->fill() : in_.fill(transport_);
}

// After STARTTLS's ACK has gone out in plain text: the TLS handshake, as far
// as the socket lets it go; back to the options once it is complete.
connection::next connection::drive_tls_handshake() {
  if (!transport_.tls()) {
    io r = out_.flush(transport_);
    if (r != io::done)
      return r == io::again ? next::wait : next::close;
    if (!transport_.start_tls(*ctx_.credentials))
      return next::close;
  }
  switch (transport_.tls_handshake()) {
    case io::done:
      handshake_->tls_started();
      phase_ = phase::handshake;
      return next::yield;
    case io::again:
      return next::wait;
    case io::eof:
    case io::error:
      break;
  }
  return next::close;
}

bool connection::expired(clock_type::time_point now, const char** why) const {
  const server_limits& l = ctx_.limits;
  auto past = [now](clock_type::time_point since, unsigned seconds) {
    return seconds && now - since >= std::chrono::seconds(seconds);
  };
  if (phase_ == phase::handshake || phase_ == phase::tls_handshake) {
    *why = "the handshake took longer than --handshake-timeout";
    return past(accepted_, l.handshake_timeout);
  }
  if (transmission_ && transmission_->parked())
    return false;  // the server's wait, not the client's
  const bool busy = in_.available() || !out_.empty() || phase_ != phase::transmission || transmission_->mid_payload();
  *why =
      busy ? "a request or its reply stalled for longer than --request-timeout" : "idle for longer than --idle-timeout";
  return past(transport_.last_progress(), busy ? l.request_timeout : l.idle_timeout);
}

}  // namespace iov::nbd
