// protocol.hpp: the Network Block Device protocol's wire constants and
// messages (NBD's doc/proto.md, names as in its nbd.h): each message the
// server reads is decoded here and each one it writes encoded here, in
// big-endian byte order. Only the newstyle fixed handshake is spoken; the
// extended headers (32-byte requests and replies, 64-bit lengths) are those
// of the protocol's EXTENDED_HEADERS extension.
//
//   nbd::request rq;
//   if (!nbd::decode_request(bytes, &rq)) close();      // bad magic
//   unsigned char head[nbd::kStructuredReplySize];
//   nbd::encode_structured_reply(head, {.flags = nbd::NBD_REPLY_FLAG_DONE, .type = nbd::NBD_REPLY_TYPE_NONE,
//                                       .cookie = rq.cookie, .length = 0});
#pragma once

#include <endian.h>

#include <cerrno>
#include <cstddef>
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
                          NBD_OPT_LIST_META_CONTEXT = 9, NBD_OPT_SET_META_CONTEXT = 10,
                          NBD_OPT_EXTENDED_HEADERS = 11;

// Option replies.
inline constexpr uint32_t NBD_REP_ACK = 1, NBD_REP_SERVER = 2, NBD_REP_INFO = 3, NBD_REP_META_CONTEXT = 4;
inline constexpr uint32_t NBD_REP_FLAG_ERROR = 1u << 31;
inline constexpr uint32_t NBD_REP_ERR_UNSUP = NBD_REP_FLAG_ERROR | 1, NBD_REP_ERR_POLICY = NBD_REP_FLAG_ERROR | 2,
                          NBD_REP_ERR_INVALID = NBD_REP_FLAG_ERROR | 3, NBD_REP_ERR_TLS_REQD = NBD_REP_FLAG_ERROR | 5,
                          NBD_REP_ERR_UNKNOWN = NBD_REP_FLAG_ERROR | 6, NBD_REP_ERR_TOO_BIG = NBD_REP_FLAG_ERROR | 9,
                          NBD_REP_ERR_EXT_HEADER_REQD = NBD_REP_FLAG_ERROR | 10;
inline constexpr uint16_t NBD_INFO_EXPORT = 0, NBD_INFO_NAME = 1, NBD_INFO_DESCRIPTION = 2,
                          NBD_INFO_BLOCK_SIZE = 3;

// Transmission flags.
inline constexpr uint16_t NBD_FLAG_HAS_FLAGS = 1u << 0, NBD_FLAG_READ_ONLY = 1u << 1, NBD_FLAG_SEND_FLUSH = 1u << 2,
                          NBD_FLAG_SEND_FUA = 1u << 3, NBD_FLAG_SEND_TRIM = 1u << 5,
                          NBD_FLAG_SEND_WRITE_ZEROES = 1u << 6, NBD_FLAG_SEND_DF = 1u << 7,
                          NBD_FLAG_CAN_MULTI_CONN = 1u << 8, NBD_FLAG_SEND_FAST_ZERO = 1u << 11;

// Requests.
inline constexpr uint32_t NBD_REQUEST_MAGIC = 0x25609513, NBD_EXTENDED_REQUEST_MAGIC = 0x21e41c71;
inline constexpr uint16_t NBD_CMD_READ = 0, NBD_CMD_WRITE = 1, NBD_CMD_DISC = 2, NBD_CMD_FLUSH = 3,
                          NBD_CMD_TRIM = 4, NBD_CMD_CACHE = 5, NBD_CMD_WRITE_ZEROES = 6, NBD_CMD_BLOCK_STATUS = 7;
inline constexpr uint16_t NBD_CMD_FLAG_FUA = 1u << 0, NBD_CMD_FLAG_NO_HOLE = 1u << 1, NBD_CMD_FLAG_DF = 1u << 2,
                          NBD_CMD_FLAG_REQ_ONE = 1u << 3, NBD_CMD_FLAG_FAST_ZERO = 1u << 4,
                          NBD_CMD_FLAG_PAYLOAD_LEN = 1u << 5;  // extended headers: `length` is the payload's

// Replies.
inline constexpr uint32_t NBD_SIMPLE_REPLY_MAGIC = 0x67446698, NBD_STRUCTURED_REPLY_MAGIC = 0x668e33ef,
                          NBD_EXTENDED_REPLY_MAGIC = 0x6e8a278c;
inline constexpr uint16_t NBD_REPLY_FLAG_DONE = 1u << 0;
inline constexpr uint16_t NBD_REPLY_TYPE_NONE = 0, NBD_REPLY_TYPE_OFFSET_DATA = 1, NBD_REPLY_TYPE_OFFSET_HOLE = 2,
                          NBD_REPLY_TYPE_BLOCK_STATUS = 5, NBD_REPLY_TYPE_BLOCK_STATUS_EXT = 6,
                          NBD_REPLY_TYPE_ERROR = (1u << 15) | 1;
inline constexpr uint32_t NBD_STATE_HOLE = 1u << 0, NBD_STATE_ZERO = 1u << 1;

// Errors on the wire (the protocol's own numbering, which is Linux's).
inline constexpr uint32_t NBD_EPERM = 1, NBD_EIO = 5, NBD_ENOMEM = 12, NBD_EINVAL = 22, NBD_ENOSPC = 28,
                          NBD_EOVERFLOW = 75, NBD_ENOTSUP = 95, NBD_ESHUTDOWN = 108;
// The protocol's error for a driver's -errno (others are NBD_EIO).
inline uint32_t nbd_errno(int err) {
  switch (-err) {
    case EPERM: return NBD_EPERM;
    case ENOMEM: return NBD_ENOMEM;
    case EINVAL: return NBD_EINVAL;
    case ENOSPC: return NBD_ENOSPC;
    case EOVERFLOW: return NBD_EOVERFLOW;
    case EOPNOTSUPP: return NBD_ENOTSUP;
    default: return NBD_EIO;
  }
}

// What this server accepts of option payloads; the id of base:allocation.
inline constexpr uint32_t kMaxOptionLength = 64 * 1024;
inline constexpr uint32_t kMetaContextAllocation = 1;

// Big-endian encoding into and out of byte buffers.
inline void put16(unsigned char* p, uint16_t v) { v = htobe16(v); std::memcpy(p, &v, 2); }
inline void put32(unsigned char* p, uint32_t v) { v = htobe32(v); std::memcpy(p, &v, 4); }
inline void put64(unsigned char* p, uint64_t v) { v = htobe64(v); std::memcpy(p, &v, 8); }
inline uint16_t get16(const unsigned char* p) { uint16_t v; std::memcpy(&v, p, 2); return be16toh(v); }
inline uint32_t get32(const unsigned char* p) { uint32_t v; std::memcpy(&v, p, 4); return be32toh(v); }
inline uint64_t get64(const unsigned char* p) { uint64_t v; std::memcpy(&v, p, 8); return be64toh(v); }

// --- Handshake ----------------------------------------------------------------

// The server's first 18 bytes: NBDMAGIC, IHAVEOPT, the handshake flags.
inline constexpr size_t kGreetingSize = 18;
inline void encode_greeting(unsigned char (&b)[kGreetingSize], uint16_t flags) {
  put64(b, NBDMAGIC);
  put64(b + 8, IHAVEOPT);
  put16(b + 16, flags);
}

// An option's header from the client: IHAVEOPT, the option, its data's length.
struct option_header {
  uint32_t option;
  uint32_t length;
};
inline constexpr size_t kOptionHeaderSize = 16;
// False on a bad magic (the connection is then lost).
inline bool decode_option_header(const unsigned char* b, option_header* h) {
  if (get64(b) != IHAVEOPT)
    return false;
  h->option = get32(b + 8);
  h->length = get32(b + 12);
  return true;
}

// A reply to an option; `length` bytes of data follow.
struct option_reply {
  uint32_t option;
  uint32_t type;
  uint32_t length;
};
inline constexpr size_t kOptionReplySize = 20;
inline void encode_option_reply(unsigned char* b, const option_reply& r) {
  put64(b, NBD_REP_MAGIC);
  put32(b + 8, r.option);
  put32(b + 12, r.type);
  put32(b + 16, r.length);
}

// NBD_OPT_EXPORT_NAME's reply: the size, the transmission flags, and 124
// zero bytes unless the client sent NBD_FLAG_C_NO_ZEROES.
inline constexpr size_t kExportNameReplySize = 10, kExportNameZeroes = 124;
inline void encode_export_name_reply(unsigned char (&b)[kExportNameReplySize], uint64_t size, uint16_t flags) {
  put64(b, size);
  put16(b + 8, flags);
}

// --- Transmission -------------------------------------------------------------

struct request {
  uint16_t flags;
  uint16_t type;
  uint64_t cookie;
  uint64_t offset;
  uint64_t length;  // 32 bits on the wire unless extended headers were negotiated
};
inline constexpr size_t kRequestSize = 28, kExtendedRequestSize = 32;

// Decodes a request header; false on a bad magic (the connection is then lost).
inline bool decode_request(const unsigned char* b, request* rq) {
  if (get32(b) != NBD_REQUEST_MAGIC)
    return false;
  rq->flags = get16(b + 4);
  rq->type = get16(b + 6);
  rq->cookie = get64(b + 8);
  rq->offset = get64(b + 16);
  rq->length = get32(b + 24);
  return true;
}

// The same, in the extended form (64-bit length).
inline bool decode_extended_request(const unsigned char* b, request* rq) {
  if (get32(b) != NBD_EXTENDED_REQUEST_MAGIC)
    return false;
  rq->flags = get16(b + 4);
  rq->type = get16(b + 6);
  rq->cookie = get64(b + 8);
  rq->offset = get64(b + 16);
  rq->length = get64(b + 24);
  return true;
}

// A simple reply: the error (0 for success) and the cookie; a successful
// READ's data follows.
inline constexpr size_t kSimpleReplySize = 16;
inline void encode_simple_reply(unsigned char* b, uint32_t error, uint64_t cookie) {
  put32(b, NBD_SIMPLE_REPLY_MAGIC);
  put32(b + 4, error);
  put64(b + 8, cookie);
}

// A structured reply chunk's header; `length` bytes of payload follow.
struct structured_reply {
  uint16_t flags;
  uint16_t type;
  uint64_t cookie;
  uint32_t length;
};
inline constexpr size_t kStructuredReplySize = 20;
inline void encode_structured_reply(unsigned char* b, const structured_reply& r) {
  put32(b, NBD_STRUCTURED_REPLY_MAGIC);
  put16(b + 4, r.flags);
  put16(b + 6, r.type);
  put64(b + 8, r.cookie);
  put32(b + 16, r.length);
}

// An extended reply chunk's header: the structured one's fields, the
// request's offset, and a 64-bit length.
inline constexpr size_t kExtendedReplySize = 32;
inline void encode_extended_reply(unsigned char* b, const structured_reply& r, uint64_t request_offset) {
  put32(b, NBD_EXTENDED_REPLY_MAGIC);
  put16(b + 4, r.flags);
  put16(b + 6, r.type);
  put64(b + 8, r.cookie);
  put64(b + 16, request_offset);
  put64(b + 24, r.length);
}

// The payload's start of an OFFSET_DATA chunk (the data follows), an
// OFFSET_HOLE chunk and an ERROR chunk (the message follows); BLOCK_STATUS's
// context id and one descriptor, and BLOCK_STATUS_EXT's (context id,
// descriptor count; 64-bit length and status).
inline constexpr size_t kOffsetDataSize = 8, kOffsetHoleSize = 12, kErrorSize = 6, kBlockStatusSize = 4,
                        kExtentSize = 8, kBlockStatusExtSize = 8, kExtentExtSize = 16;
inline constexpr size_t kMaxErrorMessage = 4096;  // the protocol's limit on a message
inline void encode_offset_data(unsigned char* b, uint64_t offset) { put64(b, offset); }
inline void encode_offset_hole(unsigned char* b, uint64_t offset, uint32_t size) {
  put64(b, offset);
  put32(b + 8, size);
}
inline void encode_error(unsigned char* b, uint32_t error, uint16_t message_length) {
  put32(b, error);
  put16(b + 4, message_length);
}
inline void encode_extent(unsigned char* b, uint32_t length, uint32_t flags) {
  put32(b, length);
  put32(b + 4, flags);
}
inline void encode_extent_ext(unsigned char* b, uint64_t length, uint64_t flags) {
  put64(b, length);
  put64(b + 8, flags);
}

}  // namespace iov::nbd
