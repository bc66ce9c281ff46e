// verify.hpp: iov-fio's --verify=crc32c blocks, as fio lays them out: a
// header (magic, the block's offset, a sequence number, the length and the
// standard CRC-32C of the rest) at the start of each block, the rest a
// pattern drawn from the offset and the sequence number. A block read back
// is checked against its own header; --debug-corrupt flips one byte on the
// device behind the headers' back, so that a test can see a check fail.
#pragma once

#include <cstdint>

#include "iov_drivers/blkdev.hpp"

namespace iov::fio {

// The run's pseudo-random generator: offsets, buffer contents and the
// verify pattern.
struct xorshift {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

// Writes a verifiable block of bs bytes for `offset` into buf; seq tells
// this write from earlier ones of the same block.
void fill_block(char* buf, uint64_t bs, uint64_t offset, uint64_t seq);

// Checks a block of bs bytes read back from `offset`: nullptr if it holds
// what fill_block() wrote for that offset, else what is wrong, in words,
// and the header's and the data's CRC in *header_crc and *data_crc.
const char* check_block(const char* buf, uint64_t bs, uint64_t offset, uint32_t* header_crc, uint32_t* data_crc);

// Flips one byte on the device at `offset`, through a sector read and
// written back (--debug-corrupt).
void corrupt(blkdev& dev, uint64_t offset);

}  // namespace iov::fio
