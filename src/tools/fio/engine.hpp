// engine.hpp: what --ioengine=memcpy copies to and from in place of the
// device (job.hpp's ioengine): an anonymous mapping of the device's size on
// transparent huge pages (2 MiB aligned, as the page allocator's chunks
// are), written whole so that reads copy real memory, as they do from a
// prefilled device.
//
//   memcpy_target t;
//   if (absl::Status s = t.map(o.size); !s.ok()) ...
//   std::memcpy(buf, t.data() + offset, bs);
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace iov::fio {

class memcpy_target {
 public:
  memcpy_target() = default;
  memcpy_target(const memcpy_target&) = delete;
  memcpy_target& operator=(const memcpy_target&) = delete;
  ~memcpy_target();

  // Maps and writes `size` bytes; ResourceExhausted if they cannot be had.
  absl::Status map(uint64_t size);
  char* data() const { return data_; }

 private:
  void* raw_ = nullptr;
  uint64_t len_ = 0;
  char* data_ = nullptr;
};

}  // namespace iov::fio
