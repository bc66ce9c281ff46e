// nbd_client_tls.cc: the tests' NBD client over TLS (NBD_OPT_STARTTLS), with
// GnuTLS as a client: PSK from psktool's file, or X.509 trusting a given CA
// and presenting a certificate when given one. The socket stays blocking as
// the plain client's does; every call passes MSG_DONTWAIT and waits in
// poll() against the client's deadline, so a stalled server fails a test.
//
//   auto c = client::connect_unix(path);
//   ASSERT_TRUE(c && c->greet() && c->starttls({.psk_file = "keys.psk"}));
#include <gnutls/gnutls.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include "support/nbd_client.hpp"

namespace iov_test::nbd {

struct tls_link {
  gnutls_session_t session = nullptr;
  gnutls_psk_client_credentials_t psk = nullptr;
  gnutls_certificate_credentials_t x509 = nullptr;
  ~tls_link() {
    if (session)
      gnutls_deinit(session);
    if (psk)
      gnutls_psk_free_client_credentials(psk);
    if (x509)
      gnutls_certificate_free_credentials(x509);
  }
};

void tls_link_deleter::operator()(tls_link* t) const { delete t; }

namespace {

using clock_type = std::chrono::steady_clock;

ssize_t push(gnutls_transport_ptr_t fd, const void* p, size_t n) {
  return ::send(static_cast<int>(reinterpret_cast<intptr_t>(fd)), p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
}
ssize_t pull(gnutls_transport_ptr_t fd, void* p, size_t n) {
  return ::recv(static_cast<int>(reinterpret_cast<intptr_t>(fd)), p, n, MSG_DONTWAIT);
}

// Runs op() until it stops saying "again", waiting in between for the
// direction GnuTLS waits on; op()'s last result, or GNUTLS_E_TIMEDOUT.
template <class Op>
ssize_t retry(int fd, gnutls_session_t s, clock_type::time_point deadline, Op op) {
  for (;;) {
    ssize_t r = op();
    if (r != GNUTLS_E_AGAIN && r != GNUTLS_E_INTERRUPTED)
      return r;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
    if (left <= 0)
      return GNUTLS_E_TIMEDOUT;
    pollfd pf{fd, static_cast<short>(gnutls_record_get_direction(s) ? POLLOUT : POLLIN), 0};
    if (poll(&pf, 1, static_cast<int>(left)) < 0 && errno != EINTR)
      return GNUTLS_E_PULL_ERROR;
  }
}

// psktool's line "identity:hexkey": the first one.
bool read_psk(const std::string& file, std::string* identity, std::string* key) {
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line))
    return false;
  const size_t colon = line.find(':');
  if (colon == std::string::npos)
    return false;
  *identity = line.substr(0, colon);
  *key = line.substr(colon + 1);
  return true;
}

}  // namespace

bool client::starttls(const tls_settings& settings) {
  if (!send_option(OPT_STARTTLS, {}))
    return false;
  auto r = read_option_reply();
  if (!r)
    return false;
  if (r->type != REP_ACK) {
    last_error_ = "STARTTLS refused: reply type " + std::to_string(r->type);
    return false;
  }
  auto t = std::unique_ptr<tls_link, tls_link_deleter>(new tls_link);
  auto fail = [this](const char* what, int err) {
    last_error_ = std::string(what) + ": " + gnutls_strerror(err);
    return false;
  };
  if (int err = gnutls_init(&t->session, GNUTLS_CLIENT | GNUTLS_NONBLOCK))
    return fail("gnutls_init", err);
  if (!settings.psk_file.empty()) {
    std::string identity, key;
    if (!read_psk(settings.psk_file, &identity, &key)) {
      last_error_ = "cannot read a key from " + settings.psk_file;
      return false;
    }
    gnutls_datum_t k{reinterpret_cast<unsigned char*>(key.data()), static_cast<unsigned>(key.size())};
    if (int err = gnutls_psk_allocate_client_credentials(&t->psk))
      return fail("PSK credentials", err);
    if (int err = gnutls_psk_set_client_credentials(t->psk, identity.c_str(), &k, GNUTLS_PSK_KEY_HEX))
      return fail("PSK key", err);
    if (int err = gnutls_priority_set_direct(t->session, "NORMAL:+ECDHE-PSK:+DHE-PSK:+PSK", nullptr))
      return fail("PSK priority", err);
    if (int err = gnutls_credentials_set(t->session, GNUTLS_CRD_PSK, t->psk))
      return fail("PSK credentials", err);
  } else {
    if (int err = gnutls_certificate_allocate_credentials(&t->x509))
      return fail("X.509 credentials", err);
    if (int err = gnutls_certificate_set_x509_trust_file(t->x509, settings.ca_file.c_str(), GNUTLS_X509_FMT_PEM);
        err < 0)
      return fail("the CA file", err);
    if (!settings.cert_file.empty())
      if (int err = gnutls_certificate_set_x509_key_file(t->x509, settings.cert_file.c_str(),
                                                         settings.key_file.c_str(), GNUTLS_X509_FMT_PEM))
        return fail("the client certificate", err);
    if (int err = gnutls_set_default_priority(t->session))
      return fail("priority", err);
    if (int err = gnutls_credentials_set(t->session, GNUTLS_CRD_CERTIFICATE, t->x509))
      return fail("X.509 credentials", err);
    gnutls_session_set_verify_cert(t->session, nullptr, 0);  // the chain; the tests' names are not DNS names
  }
  gnutls_transport_set_ptr(t->session, reinterpret_cast<gnutls_transport_ptr_t>(static_cast<intptr_t>(fd_)));
  gnutls_transport_set_push_function(t->session, push);
  gnutls_transport_set_pull_function(t->session, pull);
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
  ssize_t err = retry(fd_, t->session, deadline, [&] { return gnutls_handshake(t->session); });
  if (err < 0)
    return fail("TLS handshake", static_cast<int>(err));
  tls_ = std::move(t);
  return true;
}

bool client::tls_send(const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
  for (size_t done = 0; done < n;) {
    ssize_t r = retry(fd_, tls_->session, deadline,
                      [&] { return gnutls_record_send(tls_->session, p + done, n - done); });
    if (r <= 0) {
      last_error_ = std::string("TLS send: ") + gnutls_strerror(static_cast<int>(r));
      return false;
    }
    done += static_cast<size_t>(r);
  }
  return true;
}

bool client::tls_recv(void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
  for (size_t done = 0; done < n;) {
    ssize_t r = retry(fd_, tls_->session, deadline,
                      [&] { return gnutls_record_recv(tls_->session, p + done, n - done); });
    if (r <= 0) {
      last_error_ = r == 0 ? "the server closed the connection"
                           : std::string("TLS recv: ") + gnutls_strerror(static_cast<int>(r));
      return false;
    }
    done += static_cast<size_t>(r);
  }
  return true;
}

bool client::tls_wait_closed() {
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
  char scratch[4096];
  for (;;) {
    ssize_t r = retry(fd_, tls_->session, deadline,
                      [&] { return gnutls_record_recv(tls_->session, scratch, sizeof scratch); });
    if (r == GNUTLS_E_TIMEDOUT) {
      last_error_ = "the server kept the connection open";
      return false;
    }
    if (r <= 0)
      return true;  // the end, or the stream broken by the server's close
  }
}

}  // namespace iov_test::nbd
