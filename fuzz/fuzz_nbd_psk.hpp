// fuzz_nbd_psk.hpp: the pre-shared key the NBD fuzz targets' TLS uses, the
// same for every input: a file in psktool's format, made once and removed
// at exit, and the server's credentials loaded from it.
//
//   auto creds = fuzz::nbd_psk_credentials();       // the server's
//   client.starttls({.psk_file = fuzz::nbd_psk_file()});
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "fuzz_model.hpp"
#include "nbd/tls.hpp"

namespace fuzz {

inline const char* nbd_psk_file() {
  static char path[] = "/tmp/fuzz_nbd_psk-XXXXXX";
  static const bool made = [] {
    const int fd = mkstemp(path);
    FUZZ_CHECK(fd >= 0);
    static const char kKey[] = "fuzz:00112233445566778899aabbccddeeff\n";
    FUZZ_CHECK(write(fd, kKey, sizeof kKey - 1) == static_cast<ssize_t>(sizeof kKey - 1));
    close(fd);
    std::atexit([] { unlink(path); });  // GnuTLS reads the file at each handshake: it stays until then
    return true;
  }();
  (void)made;
  return path;
}

inline std::shared_ptr<const iov::nbd::tls_credentials> nbd_psk_credentials() {
  static std::shared_ptr<const iov::nbd::tls_credentials> creds = [] {
    auto c = iov::nbd::tls_credentials::load_psk(nbd_psk_file());
    FUZZ_CHECK(c.ok());
    return std::shared_ptr<const iov::nbd::tls_credentials>(std::move(*c));
  }();
  return creds;
}

}  // namespace fuzz
