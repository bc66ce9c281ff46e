// verify.cc: the blocks of --verify=crc32c (verify.hpp).
#include "fio/verify.hpp"

#include <cstring>

#include "iov/iov.hpp"

namespace iov::fio {
namespace {

struct verify_header {
  uint64_t magic;
  uint64_t offset;
  uint64_t seq;
  uint32_t crc;  // standard CRC-32C of the block after the header
  uint32_t len;
};
constexpr uint64_t kVerifyMagic = 0x69766f2d66696f31ull;  // "iov-fio1"

}  // namespace

void fill_block(char* buf, uint64_t bs, uint64_t offset, uint64_t seq) {
  xorshift r{(offset + 1) * 0x9E3779B97F4A7C15ull ^ seq};
  for (uint64_t k = sizeof(verify_header); k + 8 <= bs; k += 8) {
    uint64_t v = r.next();
    std::memcpy(buf + k, &v, 8);
  }
  verify_header h{kVerifyMagic, offset, seq, 0, static_cast<uint32_t>(bs)};
  h.crc = ~crc32c(~0u, buf + sizeof h, bs - sizeof h);
  std::memcpy(buf, &h, sizeof h);
}

const char* check_block(const char* buf, uint64_t bs, uint64_t offset, uint32_t* header_crc, uint32_t* data_crc) {
  verify_header h;
  std::memcpy(&h, buf, sizeof h);
  *header_crc = h.crc;
  *data_crc = ~crc32c(~0u, buf + sizeof h, bs - sizeof h);
  return h.magic != kVerifyMagic ? "bad magic"
         : h.offset != offset    ? "block written for another offset"
         : h.len != bs           ? "bad length"
         : h.crc != *data_crc    ? "crc32c mismatch"
                                 : nullptr;
}

void corrupt(blkdev& dev, uint64_t offset) {
  char sector[SECTOR_SIZE];
  uint64_t base = offset & ~uint64_t{SECTOR_SIZE - 1};
  iov_iter it;
  iov_iter_ubuf(&it, ITER_DEST, sector, sizeof sector);
  blk_request rq;
  rq.op = REQ_OP_READ;
  rq.sector = base >> SECTOR_SHIFT;
  rq.iter = &it;
  if (dev.submit(rq))
    return;
  sector[offset - base] ^= 0x5a;
  iov_iter_ubuf(&it, ITER_SOURCE, sector, sizeof sector);
  rq.op = REQ_OP_WRITE;
  rq.iter = &it;
  dev.submit(rq);
}

}  // namespace iov::fio
