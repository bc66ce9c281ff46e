// block_writer.hpp: a connection's writes of the device, of any bytes: the
// whole logical blocks in one request, a partial block at either end by a
// read-modify-write of that block (a client that negotiated no block size
// may write any byte range: minimum block size 1). Every write holds the
// locks of the blocks it covers (block_locks.hpp), so that no other write
// lands between an edge block's read and its write.
//
//   block_writer w(dev, locks);
//   int err = w.write(offset, length, src, REQ_FUA, &why);     // src null: zeros
//   int err = w.commit(pages, offset, length, 0, &why);         // pages the device keeps
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "iov_drivers/blkdev.hpp"
#include "nbd/block_locks.hpp"
#include "nbd/page_payload.hpp"

namespace iov::nbd {

class block_writer {
 public:
  block_writer(blkdev& dev, block_locks& locks) : dev_(dev), locks_(locks) {}
  block_writer(const block_writer&) = delete;
  block_writer& operator=(const block_writer&) = delete;

  // Bytes [offset, offset + length) of the device from src, or zeros when
  // src is null (then REQ_NOUNMAP in rq_flags keeps the storage). 0 or the
  // device's -errno, with *why.
  int write(uint64_t offset, uint64_t length, const unsigned char* src, unsigned rq_flags, const char** why);
  // The pages received for the whole blocks [offset, offset + length)
  // handed to the device (page_payload::commit).
  int commit(page_payload& pages, uint64_t offset, uint64_t length, unsigned rq_flags, const char** why);

 private:
  int write_range(uint64_t offset, uint64_t length, const unsigned char* src, unsigned rq_flags, const char** why);
  int write_partial(uint64_t block, size_t at, size_t n, const unsigned char* src, unsigned rq_flags, const char** why);

  blkdev& dev_;
  block_locks& locks_;
  std::vector<unsigned char> edge_;  // one logical block, for a read-modify-write of a partial one
};

}  // namespace iov::nbd
