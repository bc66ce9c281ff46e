// read_cover.hpp: which bytes of a READ a structured reply's OFFSET_DATA and
// OFFSET_HOLE chunks have answered. The protocol's rules (doc/proto.md): each
// chunk lies inside the READ, no two overlap, and a successful reply covers
// the READ whole. The pieces are kept as ranges, not a bit a byte: a 64 MiB
// READ was 64 Mi bits to set one by one, seconds under a sanitizer.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>

namespace iov_test::nbd {

class read_cover {
 public:
  read_cover(uint64_t offset, uint64_t length) : offset_(offset), length_(length) {}

  // Records the piece [o, o + n); false, recording nothing, when it lies
  // outside the READ or overlaps a piece recorded before.
  bool cover(uint64_t o, uint64_t n) {
    if (o < offset_ || n > length_ || o - offset_ > length_ - n)
      return false;
    if (n == 0)
      return true;
    const uint64_t start = o - offset_;
    auto next = pieces_.lower_bound(start);
    if (next != pieces_.end() && next->first < start + n)
      return false;
    if (next != pieces_.begin() && std::prev(next)->second > start)
      return false;
    pieces_.emplace_hint(next, start, start + n);
    covered_ += n;
    return true;
  }

  // Whether the pieces cover the READ: they lie inside it and never
  // overlap, so they do when their lengths add up to it.
  bool whole() const { return covered_ == length_; }

 private:
  uint64_t offset_, length_;
  std::map<uint64_t, uint64_t> pieces_;  // [start, end), from the READ's offset
  uint64_t covered_ = 0;
};

}  // namespace iov_test::nbd
