// engine.cc: the memcpy engine's mapping (engine.hpp).
#include "fio/engine.hpp"

#include <sys/mman.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace iov::fio {

absl::Status memcpy_target::map(uint64_t size) {
  constexpr uint64_t kHuge = 2u << 20;
  len_ = size + kHuge;
  raw_ = mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw_ == MAP_FAILED) {
    raw_ = nullptr;
    return absl::ResourceExhaustedError(absl::StrCat("cannot map ", size, " bytes for --ioengine=memcpy"));
  }
  data_ = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw_) + kHuge - 1) & ~uintptr_t{kHuge - 1});
  madvise(data_, size, MADV_HUGEPAGE);
  std::memset(data_, 0x5a, size);
  return absl::OkStatus();
}

memcpy_target::~memcpy_target() {
  if (raw_)
    munmap(raw_, len_);
}

}  // namespace iov::fio
