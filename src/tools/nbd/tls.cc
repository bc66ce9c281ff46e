// tls.cc: GnuTLS credentials and sessions (see tls.hpp).
#include "nbd/tls.hpp"

#include <gnutls/gnutls.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <cstdint>
#include <fstream>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace iov::nbd {

namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { gnutls_global_init(); });
}

// What GnuTLS's socket calls go through: the descriptor, and the most one
// call moves (server_limits::io_per_call; 0: no limit).
struct transport {
  int fd;
  size_t per_call;
};

// The socket I/O GnuTLS does, never raising SIGPIPE (the server in a test
// program does not ignore it) and never blocking.
ssize_t push(gnutls_transport_ptr_t ptr, const giovec_t* iov, int n) {
  const auto* t = static_cast<const transport*>(ptr);
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(reinterpret_cast<const iovec*>(iov));
  msg.msg_iovlen = static_cast<size_t>(n);
  iovec cut[16];
  if (t->per_call) {  // the first per_call bytes, over the vectors they span
    size_t left = t->per_call, k = 0;
    for (; k < msg.msg_iovlen && k < std::size(cut) && left; k++) {
      cut[k] = msg.msg_iov[k];
      cut[k].iov_len = std::min(cut[k].iov_len, left);
      left -= cut[k].iov_len;
    }
    msg.msg_iov = cut;
    msg.msg_iovlen = k;
  }
  return sendmsg(t->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}
ssize_t pull(gnutls_transport_ptr_t ptr, void* p, size_t n) {
  const auto* t = static_cast<const transport*>(ptr);
  return recv(t->fd, p, t->per_call ? std::min(n, t->per_call) : n, MSG_DONTWAIT);
}

bool readable(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

}  // namespace

struct tls_credentials::impl {
  gnutls_psk_server_credentials_t psk = nullptr;
  gnutls_certificate_credentials_t x509 = nullptr;
  bool verify_peer = false;
};

struct tls_session::impl {
  gnutls_session_t s = nullptr;
  transport io{};
  ~impl() {
    if (s)
      gnutls_deinit(s);
  }
};

tls_credentials::~tls_credentials() {
  if (impl_ && impl_->psk)
    gnutls_psk_free_server_credentials(impl_->psk);
  if (impl_ && impl_->x509)
    gnutls_certificate_free_credentials(impl_->x509);
}

// psktool's format: one "identity:hexkey" a line. GnuTLS reads the file at
// each handshake; it is checked here so that a bad one fails at start.
absl::StatusOr<std::unique_ptr<tls_credentials>> tls_credentials::load_psk(const std::string& file) {
  global_init();
  std::ifstream in(file);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("--tls-psk=", file, ": cannot be read"));
  std::string line;
  bool any = false;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    const size_t colon = line.find(':');
    if (colon == 0 || colon == std::string::npos || colon + 1 == line.size() ||
        line.find_first_not_of("0123456789abcdefABCDEF", colon + 1) != std::string::npos)
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-psk=", file, ": not psktool's format (identity:hexkey a line)"));
    any = true;
  }
  if (!any)
    return absl::InvalidArgumentError(absl::StrCat("--tls-psk=", file, ": no key"));
  std::unique_ptr<tls_credentials> c(new tls_credentials);
  c->impl_ = std::make_unique<impl>();
  if (gnutls_psk_allocate_server_credentials(&c->impl_->psk) != 0 ||
      gnutls_psk_set_server_credentials_file(c->impl_->psk, file.c_str()) != 0)
    return absl::InternalError(absl::StrCat("--tls-psk=", file, ": GnuTLS refused it"));
  return c;
}

absl::StatusOr<std::unique_ptr<tls_credentials>> tls_credentials::load_x509(const std::string& dir,
                                                                            bool verify_peer) {
  global_init();
  const std::string cert = dir + "/server-cert.pem", key = dir + "/server-key.pem", ca = dir + "/ca-cert.pem",
                    crl = dir + "/ca-crl.pem";
  if (!readable(cert) || !readable(key))
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-certificates=", dir, ": needs server-cert.pem and server-key.pem"));
  if (verify_peer && !readable(ca))
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-verify-peer: ", dir, "/ca-cert.pem, the CA clients' certificates are checked against, "
                     "cannot be read"));
  std::unique_ptr<tls_credentials> c(new tls_credentials);
  c->impl_ = std::make_unique<impl>();
  c->impl_->verify_peer = verify_peer;
  if (gnutls_certificate_allocate_credentials(&c->impl_->x509) != 0)
    return absl::ResourceExhaustedError("out of memory for TLS credentials");
  if (int err = gnutls_certificate_set_x509_key_file(c->impl_->x509, cert.c_str(), key.c_str(),
                                                     GNUTLS_X509_FMT_PEM);
      err < 0)
    return absl::InvalidArgumentError(absl::StrCat("--tls-certificates=", dir, ": ", gnutls_strerror(err)));
  if (readable(ca) && gnutls_certificate_set_x509_trust_file(c->impl_->x509, ca.c_str(), GNUTLS_X509_FMT_PEM) < 0)
    return absl::InvalidArgumentError(absl::StrCat("--tls-certificates=", dir, ": bad ca-cert.pem"));
  if (verify_peer && readable(crl))
    if (int err = gnutls_certificate_set_x509_crl_file(c->impl_->x509, crl.c_str(), GNUTLS_X509_FMT_PEM); err < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-certificates=", dir, ": bad ca-crl.pem: ", gnutls_strerror(err)));
  return c;
}

bool tls_credentials::authenticates_clients() const { return impl_->psk || impl_->verify_peer; }

std::unique_ptr<tls_session> tls_credentials::start(int fd, size_t io_per_call) const {
  auto i = std::make_unique<tls_session::impl>();
  i->io = {fd, io_per_call};
  if (gnutls_init(&i->s, GNUTLS_SERVER | GNUTLS_NONBLOCK) != 0)
    return nullptr;
  int err;
  if (impl_->psk) {
    err = gnutls_priority_set_direct(i->s, "NORMAL:+ECDHE-PSK:+DHE-PSK:+PSK", nullptr);
    if (!err)
      err = gnutls_credentials_set(i->s, GNUTLS_CRD_PSK, impl_->psk);
  } else {
    err = gnutls_set_default_priority(i->s);
    if (!err)
      err = gnutls_credentials_set(i->s, GNUTLS_CRD_CERTIFICATE, impl_->x509);
    if (!err && impl_->verify_peer) {
      // A client without a certificate fails the handshake; one with a
      // certificate the CA did not sign (or revoked) fails its check.
      gnutls_certificate_server_set_request(i->s, GNUTLS_CERT_REQUIRE);
      gnutls_session_set_verify_cert(i->s, nullptr, 0);
    }
  }
  if (err)
    return nullptr;
  gnutls_handshake_set_timeout(i->s, 0);  // the server's --handshake-timeout covers it
  gnutls_transport_set_ptr(i->s, &i->io);  // i, and so &i->io, stays where it is inside the session
  gnutls_transport_set_vec_push_function(i->s, push);
  gnutls_transport_set_pull_function(i->s, pull);
  return std::unique_ptr<tls_session>(new tls_session(std::move(i)));
}

tls_session::tls_session(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
tls_session::~tls_session() = default;

tls_io tls_session::result(ssize_t r, size_t* n) {
  if (r >= 0) {
    if (n)
      *n = static_cast<size_t>(r);
    return tls_io::done;
  }
  if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
    return tls_io::again;
  if (r == GNUTLS_E_PREMATURE_TERMINATION)
    return tls_io::eof;
  why_ = gnutls_strerror(static_cast<int>(r));
  if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
    // Which check the client's certificate failed: "not signed by a known
    // authority", "revoked", ...
    gnutls_datum_t text{};
    if (gnutls_certificate_verification_status_print(gnutls_session_get_verify_cert_status(impl_->s),
                                                     GNUTLS_CRT_X509, &text, 0) == 0) {
      why_ = absl::StrCat("the client's certificate: ", reinterpret_cast<const char*>(text.data));
      gnutls_free(text.data);
    }
  } else if (r == GNUTLS_E_NO_CERTIFICATE_FOUND || r == GNUTLS_E_CERTIFICATE_REQUIRED) {
    // A client only offers a certificate of a CA the server names: one
    // holding a self-signed or another CA's certificate sends none.
    why_ = "the client sent no certificate of ca-cert.pem's CA, and --tls-verify-peer requires one";
  }
  return tls_io::error;
}

tls_io tls_session::handshake() { return result(gnutls_handshake(impl_->s), nullptr); }

tls_io tls_session::recv(void* p, size_t n, size_t* got) {
  const ssize_t r = gnutls_record_recv(impl_->s, p, n);
  if (r == 0)
    return tls_io::eof;
  return result(r, got);
}

tls_io tls_session::send(const void* p, size_t n, size_t* sent) {
  return result(gnutls_record_send(impl_->s, p, n), sent);
}

size_t tls_session::pending() const { return gnutls_record_check_pending(impl_->s); }
bool tls_session::wants_write() const { return gnutls_record_get_direction(impl_->s) == 1; }

}  // namespace iov::nbd
