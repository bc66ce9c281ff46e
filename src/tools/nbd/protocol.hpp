// protocol.hpp: the Network Block Device protocol's wire constants and
// messages (NBD's doc/proto.md, names as in its nbd.h), and big-endian
// encoding. Only the newstyle fixed handshake is spoken.
//
//   nbd::request rq;
//   if (!nbd::decode_request(bytes, &rq)) close();   // bad magic
#pragma once

#include <endian.h>

#include <cstdint>
#include <cstring>

namespace iov::nbd {

// Handshake.
inline constexpr uint64_t NBDMAGIC = 0x4e42444d41474943ull;     // "NBDMAGIC"
inline constexpr uint64_t IHAVEOPT = 0x49484156454F5054ull;     // "IHAVEOPT"
inline constexpr uint64_t NBD_REP_MAGIC = 0x0003e889045565a9ull;
inline constexpr uint16_t NBD_FLAG_FIXED_NEWSTYLE = 1u << 0, NBD_FLAG_NO_ZEROES = 1u << 1;
inline constexpr uint32_t NBD_FLAG_C_FIXED_NEWSTYLE = 1u << 0, NBD_FLAG_C_NO_ZEROES = 1u << 1;

// Options.
inline constexpr uint32_t NBD_OPT_EXPORT_NAME = 1, NBD_OPT_ABORT = 2, NBD_OPT_LIST = 3, NBD_OPT_STARTTLS = 5,
                          NBD_OPT_INFO = 6, NBD_OPT_GO = 7, NBD_OPT_STRUCTURED_REPLY = 8,
                          NBD_OPT_LIST_META_CONTEXT = 9, NBD_OPT_SET_META_CONTEXT = 10;

// Option replies.
inline constexpr uint32_t NBD_REP_ACK = 1, NBD_REP_SERVER = 2, NBD_REP_INFO = 3, NBD_REP_META_CONTEXT = 4;
inline constexpr uint32_t NBD_REP_FLAG_ERROR = 1u << 31;
inline constexpr uint32_t NBD_REP_ERR_UNSUP = NBD_REP_FLAG_ERROR | 1, NBD_REP_ERR_POLICY = NBD_REP_FLAG_ERROR | 2,
                          NBD_REP_ERR_INVALID = NBD_REP_FLAG_ERROR | 3, NBD_REP_ERR_UNKNOWN = NBD_REP_FLAG_ERROR | 6,
                          NBD_REP_ERR_TOO_BIG = NBD_REP_FLAG_ERROR | 9;
inline constexpr uint16_t NBD_INFO_EXPORT = 0, NBD_INFO_NAME = 1, NBD_INFO_DESCRIPTION = 2,
                          NBD_INFO_BLOCK_SIZE = 3;

// Transmission flags.
inline constexpr uint16_t NBD_FLAG_HAS_FLAGS = 1u << 0, NBD_FLAG_READ_ONLY = 1u << 1, NBD_FLAG_SEND_FLUSH = 1u << 2,
                          NBD_FLAG_SEND_FUA = 1u << 3, NBD_FLAG_SEND_TRIM = 1u << 5,
                          NBD_FLAG_SEND_WRITE_ZEROES = 1u << 6, NBD_FLAG_SEND_DF = 1u << 7,
                          NBD_FLAG_CAN_MULTI_CONN = 1u << 8, NBD_FLAG_SEND_FAST_ZERO = 1u << 11;

// Requests.
inline constexpr uint32_t NBD_REQUEST_MAGIC = 0x25609513;
inline constexpr uint16_t NBD_CMD_READ = 0, NBD_CMD_WRITE = 1, NBD_CMD_DISC = 2, NBD_CMD_FLUSH = 3,
                          NBD_CMD_TRIM = 4, NBD_CMD_CACHE = 5, NBD_CMD_WRITE_ZEROES = 6, NBD_CMD_BLOCK_STATUS = 7;
inline constexpr uint16_t NBD_CMD_FLAG_FUA = 1u << 0, NBD_CMD_FLAG_NO_HOLE = 1u << 1, NBD_CMD_FLAG_DF = 1u << 2,
                          NBD_CMD_FLAG_REQ_ONE = 1u << 3, NBD_CMD_FLAG_FAST_ZERO = 1u << 4;

// Replies.
inline constexpr uint32_t NBD_SIMPLE_REPLY_MAGIC = 0x67446698, NBD_STRUCTURED_REPLY_MAGIC = 0x668e33ef;
inline constexpr uint16_t NBD_REPLY_FLAG_DONE = 1u << 0;
inline constexpr uint16_t NBD_REPLY_TYPE_NONE = 0, NBD_REPLY_TYPE_OFFSET_DATA = 1, NBD_REPLY_TYPE_OFFSET_HOLE = 2,
                          NBD_REPLY_TYPE_BLOCK_STATUS = 5, NBD_REPLY_TYPE_ERROR = (1u << 15) | 1;
inline constexpr uint32_t NBD_STATE_HOLE = 1u << 0, NBD_STATE_ZERO = 1u << 1;

// Errors on the wire (the protocol's own numbering, which is Linux's).
inline constexpr uint32_t NBD_EPERM = 1, NBD_EIO = 5, NBD_ENOMEM = 12, NBD_EINVAL = 22, NBD_ENOSPC = 28,
                          NBD_EOVERFLOW = 75, NBD_ENOTSUP = 95, NBD_ESHUTDOWN = 108;

// Limits of this server: option payloads and request payloads it accepts.
inline constexpr uint32_t kMaxOptionLength = 64 * 1024;
inline constexpr uint32_t kMaxPayload = 32u << 20;
inline constexpr uint32_t kMetaContextAllocation = 1;  // the id of base:allocation

// Big-endian encoding into and out of byte buffers.
inline void put16(unsigned char* p, uint16_t v) { v = htobe16(v); std::memcpy(p, &v, 2); }
inline void put32(unsigned char* p, uint32_t v) { v = htobe32(v); std::memcpy(p, &v, 4); }
inline void put64(unsigned char* p, uint64_t v) { v = htobe64(v); std::memcpy(p, &v, 8); }
inline uint16_t get16(const unsigned char* p) { uint16_t v; std::memcpy(&v, p, 2); return be16toh(v); }
inline uint32_t get32(const unsigned char* p) { uint32_t v; std::memcpy(&v, p, 4); return be32toh(v); }
inline uint64_t get64(const unsigned char* p) { uint64_t v; std::memcpy(&v, p, 8); return be64toh(v); }

struct request {
  uint16_t flags;
  uint16_t type;
  uint64_t cookie;
  uint64_t offset;
  uint32_t length;
};
inline constexpr size_t kRequestSize = 28;

// Decodes a request header; false on a bad magic (the connection is then lost).
inline bool decode_request(const unsigned char (&b)[kRequestSize], request* rq) {
  if (get32(b) != NBD_REQUEST_MAGIC)
    return false;
  rq->flags = get16(b + 4);
  rq->type = get16(b + 6);
  rq->cookie = get64(b + 8);
  rq->offset = get64(b + 16);
  rq->length = get32(b + 24);
  return true;
}

}  // namespace iov::nbd
