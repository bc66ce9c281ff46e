// written_blocks.hpp: what iov-fio's verify must remember of a job's region
// (workload.cc): the blocks written since their zone's last reset.
#pragma once

#include <cstdint>
#include <map>

namespace iov::fio {

// The blocks of a region that hold verifiable data: sparse, so that its
// memory follows what was written, never the size of the device (a bitmap of
// a 100 TiB device was 3.3 GB).
class written_blocks {
 public:
  void set(uint64_t block) { words_[block / 64] |= uint64_t{1} << (block % 64); }
  void erase(uint64_t first, uint64_t end) {  // [first, end)
    for (uint64_t b = first; b < end; b++) {
      auto it = words_.find(b / 64);
      if (it == words_.end()) {
        b = (b / 64 + 1) * 64 - 1;
        continue;
      }
      it->second &= ~(uint64_t{1} << (b % 64));
      if (!it->second)
        words_.erase(it);
    }
  }
  template <class F>
  bool for_each(F&& f) const {  // in order, until f returns false
    for (const auto& [word, bits] : words_)
      for (unsigned k = 0; k < 64; k++)
        if ((bits >> k & 1) && !f(word * 64 + k))
          return false;
    return true;
  }
  uint64_t count() const {
    uint64_t n = 0;
    for (const auto& [word, bits] : words_)
      n += static_cast<uint64_t>(__builtin_popcountll(bits));
    return n;
  }

 private:
  std::map<uint64_t, uint64_t> words_;
};

}  // namespace iov::fio
