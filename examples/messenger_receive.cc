// messenger_receive: the receive path of a messenger (a network protocol's
// message layer, as the kernel's Ceph messenger), written with the C++ layer
// (docs/cxx.md walks through it). A message arrives as a header {length,
// CRC-32C} and a payload in a buffer the socket filled; the receiver
//   1. allocates pages for the payload (iov::unique_pages frees them),
//   2. describes them with a bio_vec array, 100 bytes into the first page,
//   3. copies the payload into them and computes its CRC in the same pass
//      (iter::crc32c_and_copy_to, the kernel's crc32c_and_copy_to_iter),
//      and refuses the message if the CRC differs from the header's,
//   4. hands the data on as its pieces, a range of byte spans
//      (iter::pieces, one span per contiguous run, no page crossed).
//
//   cmake -S examples -B /tmp/ex -DCMAKE_PREFIX_PATH=<iov install prefix>
//   cmake --build /tmp/ex && /tmp/ex/messenger_receive   # prints "example: ok ..."
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <vector>

#include <iov/iov.hpp>

namespace {

struct header {
  uint32_t length;
  uint32_t crc;  // the standard CRC-32C of the payload: ~crc32c(~0u, ...)
};

// The sender's side: a header and a payload in one buffer, as a socket
// read would leave them.
std::vector<uint8_t> make_frame(size_t length) {
  std::vector<uint8_t> frame(sizeof(header) + length);
  for (size_t k = 0; k < length; k++) frame[sizeof(header) + k] = static_cast<uint8_t>(k * 7 + k / 251);
  header h{static_cast<uint32_t>(length), ~iov::crc32c(~0u, frame.data() + sizeof(header), length)};
  std::memcpy(frame.data(), &h, sizeof h);
  return frame;
}

// The receive path: true if the message was taken, its data in `pages`.
bool receive(std::span<const uint8_t> frame, iov::unique_pages& pages, std::vector<iov::bio_vec>& bvecs) {
  header h;
  if (frame.size() < sizeof h)
    return false;
  std::memcpy(&h, frame.data(), sizeof h);
  std::span<const uint8_t> payload = frame.subspan(sizeof h);
  if (payload.size() != h.length)
    return false;

  // 1, 2: pages for the payload, 100 bytes into the first; one bio_vec per page.
  constexpr size_t offset = 100;
  const size_t frames = (offset + h.length + iov::PAGE_SIZE - 1) / iov::PAGE_SIZE;
  unsigned order = 0;
  while ((size_t{1} << order) < frames) order++;
  pages = iov::unique_pages::alloc(iov::GFP_KERNEL, order);
  if (!pages)
    return false;
  bvecs.clear();
  for (size_t done = 0, k = 0; done < h.length; k++) {
    const size_t off = k == 0 ? offset : 0;
    const size_t len = std::min(iov::PAGE_SIZE - off, h.length - done);
    bvecs.push_back({pages.get() + k, static_cast<unsigned>(len), static_cast<unsigned>(off)});
    done += len;
  }

  // 3: one pass over the payload: copied into the pages, and its CRC.
  iov::iter dst = iov::iter::bvec(iov::iter_dir::dest, bvecs);
  uint32_t crc = ~0u;
  if (dst.crc32c_and_copy_to(payload, crc) != h.length || ~crc != h.crc)
    return false;
  return true;
}

}  // namespace

int main() {
  const size_t length = 3 * iov::PAGE_SIZE + 1000;
  std::vector<uint8_t> frame = make_frame(length);
  iov::unique_pages pages;
  std::vector<iov::bio_vec> bvecs;
  if (!receive(frame, pages, bvecs)) {
    std::fprintf(stderr, "example: FAILED: a good message was refused\n");
    return 1;
  }

  // 4: the data, as its pieces: compared with what was sent.
  std::span<const uint8_t> sent = std::span<const uint8_t>(frame).subspan(sizeof(header));
  size_t at = 0, pieces = 0;
  for (std::span<std::byte> piece : iov::iter::bvec(iov::iter_dir::source, bvecs).pieces()) {
    if (piece.size() > iov::PAGE_SIZE || std::memcmp(piece.data(), sent.data() + at, piece.size()) != 0) {
      std::fprintf(stderr, "example: FAILED: piece %zu differs\n", pieces);
      return 1;
    }
    at += piece.size();
    pieces++;
  }
  if (at != length || pieces != bvecs.size()) {
    std::fprintf(stderr, "example: FAILED: %zu bytes in %zu pieces\n", at, pieces);
    return 1;
  }

  // A message damaged in transit is refused.
  frame[sizeof(header) + 5000] ^= 1;
  if (receive(frame, pages, bvecs)) {
    std::fprintf(stderr, "example: FAILED: a damaged message was taken\n");
    return 1;
  }
  std::printf("example: ok (%zu bytes received in %zu pieces, CRC checked in the copy)\n", at, pieces);
  return 0;
}
