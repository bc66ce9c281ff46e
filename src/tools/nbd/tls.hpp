// tls.hpp: iov-nbd's TLS, with GnuTLS: the server's credentials (a PSK file
// in psktool's format, or an X.509 directory as nbdkit and qemu read it:
// ca-cert.pem, server-cert.pem, server-key.pem; with verify_peer, the
// client's certificate asked for and checked against ca-cert.pem and
// ca-crl.pem, as nbdkit's --tls-verify-peer) and one connection's
// session over its non-blocking socket. Every call returns at once: `again`
// says the socket would block, and wants_write() then says in which
// direction the session waits (the event loop's EPOLLOUT).
//
//   auto creds = iov::nbd::tls_credentials::load_psk("keys.psk");   // absl::StatusOr
//   auto s = (*creds)->start(fd);          // after NBD_OPT_STARTTLS's ACK went out
//   while (s->handshake() == tls_io::again) wait(s->wants_write());
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace iov::nbd {

enum class tls_mode : unsigned char { off, on, require };

enum class tls_io : unsigned char { done, again, eof, error };

class tls_session;

class tls_credentials {
 public:
  static absl::StatusOr<std::unique_ptr<tls_credentials>> load_psk(const std::string& file);
  static absl::StatusOr<std::unique_ptr<tls_credentials>> load_x509(const std::string& dir,
                                                                      bool verify_peer = false);
  ~tls_credentials();
  tls_credentials(const tls_credentials&) = delete;
  tls_credentials& operator=(const tls_credentials&) = delete;

  // A server session on fd (which stays the caller's), or null without
  // memory. io_per_call (server_limits' test knob; 0: none) bounds each of
  // its socket calls.
  std::unique_ptr<tls_session> start(int fd, size_t io_per_call = 0) const;
  // Only clients holding a secret complete the handshake: a PSK, or an
  // X.509 certificate the CA signed (verify_peer).
  bool authenticates_clients() const;

 private:
  tls_credentials() = default;
  struct impl;
  std::unique_ptr<impl> impl_;
};

class tls_session {
 public:
  ~tls_session();
  tls_session(const tls_session&) = delete;
  tls_session& operator=(const tls_session&) = delete;

  // Advances the handshake: done when it is complete; error with why() set.
  tls_io handshake();
  // At most n bytes of plaintext; *got how many (done only).
  tls_io recv(void* p, size_t n, size_t* got);
  // Plaintext out: *sent of n (done only). After `again`, the next call
  // must pass the same bytes (GnuTLS has encrypted them already).
  tls_io send(const void* p, size_t n, size_t* sent);
  // Plaintext GnuTLS decrypted that recv() has not returned yet.
  size_t pending() const;
  // The last `again` waited to write (else to read).
  bool wants_write() const;
  const char* why() const { return why_.c_str(); }
  // The largest plaintext one send() takes at once.
  static constexpr size_t kMaxRecord = 16384;

 private:
  friend class tls_credentials;
  struct impl;
  explicit tls_session(std::unique_ptr<impl> i);
  tls_io result(ssize_t r, size_t* n);
  std::unique_ptr<impl> impl_;
  std::string why_;
};

}  // namespace iov::nbd
