// iov-nbd's send_vecs: one non-blocking sendmsg of the first `max` bytes of
// a vector (the transport taking part of what a connection gathered), over
// a socketpair, each send checked against the concatenation of the pieces.
//
//   build/release/tests/nbd_socket_io_test
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <vector>

#include "nbd/socket_io.hpp"

namespace {

class SendVecs : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds_), 0); }
  void TearDown() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  std::vector<unsigned char> receive(size_t n) {
    std::vector<unsigned char> got(n);
    size_t at = 0;
    while (at < n) {
      const ssize_t r = ::recv(fds_[1], got.data() + at, n - at, 0);
      if (r <= 0)
        break;
      at += static_cast<size_t>(r);
    }
    got.resize(at);
    return got;
  }
  int fds_[2];
};

// Pieces of random lengths (some empty), sent with every kind of limit: none,
// inside a piece, on a boundary, at zero-length pieces. What arrives is the
// first min(max, total) bytes of the pieces laid end to end, and the piece
// where max fell is shortened to end there.
TEST_F(SendVecs, SendsThePrefixUpToMax) {
  std::mt19937 rng(5);
  for (int round = 0; round < 300; round++) {
    const unsigned n = 1 + rng() % 8;
    std::vector<std::vector<unsigned char>> pieces(n);
    std::vector<unsigned char> all;
    std::vector<::iovec> vec(n);
    for (unsigned k = 0; k < n; k++) {
      pieces[k].resize(rng() % 4 == 0 ? 0 : 1 + rng() % 700);
      for (unsigned char& c : pieces[k]) c = static_cast<unsigned char>(rng());
      all.insert(all.end(), pieces[k].begin(), pieces[k].end());
      vec[k] = {pieces[k].data(), pieces[k].size()};
    }
    if (all.empty())
      continue;
    const size_t max = round % 5 == 0 ? SIZE_MAX : 1 + rng() % all.size();
    const size_t expect = std::min(max, all.size());
    const ssize_t sent = iov::nbd::send_vecs(fds_[0], vec.data(), n, max);
    ASSERT_EQ(sent, static_cast<ssize_t>(expect)) << "round " << round;
    const std::vector<unsigned char> got = receive(expect);
    ASSERT_EQ(got, std::vector<unsigned char>(all.begin(), all.begin() + static_cast<ptrdiff_t>(expect)))
        << "round " << round;
  }
}

TEST_F(SendVecs, NothingToSendIsTheCallersMistake) {
  unsigned char b[4] = {};
  ::iovec empty[2] = {{b, 0}, {b, 0}};
  EXPECT_EQ(iov::nbd::send_vecs(fds_[0], empty, 2), -EINVAL);
  ::iovec some = {b, sizeof b};
  EXPECT_EQ(iov::nbd::send_vecs(fds_[0], &some, 1, 0), -EINVAL);
  EXPECT_EQ(iov::nbd::send_vecs(fds_[0], &some, 0), -EINVAL);
}

// A full socket is a wait (-EAGAIN), a closed peer an error, never a signal.
TEST_F(SendVecs, FullSocketWaitsAndAClosedPeerFails) {
  std::vector<unsigned char> chunk(64 * 1024, 0x5a);
  ::iovec v = {chunk.data(), chunk.size()};
  ssize_t r;
  size_t total = 0;
  while ((r = iov::nbd::send_vecs(fds_[0], &v, 1)) > 0) {
    total += static_cast<size_t>(r);
    v = {chunk.data(), chunk.size()};
    ASSERT_LT(total, size_t{1} << 30) << "the socket never filled";
  }
  EXPECT_EQ(r, -EAGAIN);
  ::close(fds_[1]);
  fds_[1] = ::dup(fds_[0]);  // something for TearDown to close
  v = {chunk.data(), chunk.size()};
  EXPECT_EQ(iov::nbd::send_vecs(fds_[0], &v, 1), -EPIPE);
}

}  // namespace
