// exhaustive.hpp: whether the slowest tests run their exhaustive form.
//
// A few tests sample a space (cut positions, iterations of a race) where
// covering all of it adds nothing a sample does not to an ordinary run, and
// would cost minutes under a sanitizer. IOV_TEST_EXHAUSTIVE=1 in the
// environment runs the whole space, as before a release or after touching
// the path under test:
//
//   IOV_TEST_EXHAUSTIVE=1 ctest --preset asan -R nbd_write
#pragma once

#include <cstdlib>
#include <cstring>

namespace iov_test {

// True when IOV_TEST_EXHAUSTIVE is set to anything but empty or "0".
inline bool exhaustive() {
  const char* v = std::getenv("IOV_TEST_EXHAUSTIVE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace iov_test
