// nbd_client.hpp: a small NBD client for the tests, written from the
// protocol's specification (NetworkBlockDevice doc/proto.md) and sharing no
// code with the server, so that the two can disagree. It speaks the fixed
// newstyle handshake byte by byte, sends any option or request (well formed
// or not), and checks the shape of every reply it reads, in the compact
// headers or the extended ones (NBD_OPT_EXTENDED_HEADERS: 32-byte requests
// and replies, 64-bit lengths). Every wait is
// bounded (poll with a deadline), so a server that hangs fails a test
// instead of stalling it.
//
//   auto c = iov_test::nbd::client::connect_unix(path);
//   ASSERT_TRUE(c && c->greet() && c->opt_structured_reply() && c->opt_go("").ok);
//   auto r = c->read(0, 4096);           // r.error == 0, r.data has 4096 bytes
//   c->disc();
//
// The program and real clients are run by nbd_process.hpp; the server in
// this process by nbd_server_fixture.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace iov_test::nbd {

// Protocol values, as the specification numbers them.
inline constexpr uint64_t kNbdMagic = 0x4e42444d41474943ull;       // "NBDMAGIC"
inline constexpr uint64_t kIHaveOpt = 0x49484156454f5054ull;       // "IHAVEOPT"
inline constexpr uint64_t kOptReplyMagic = 0x0003e889045565a9ull;
inline constexpr uint32_t kRequestMagic = 0x25609513;
inline constexpr uint32_t kSimpleReplyMagic = 0x67446698;
inline constexpr uint32_t kStructuredReplyMagic = 0x668e33ef;
inline constexpr uint32_t kExtendedRequestMagic = 0x21e41c71;
inline constexpr uint32_t kExtendedReplyMagic = 0x6e8a278c;

enum : uint16_t { FLAG_FIXED_NEWSTYLE = 1, FLAG_NO_ZEROES = 2 };          // handshake flags
enum : uint32_t { FLAG_C_FIXED_NEWSTYLE = 1, FLAG_C_NO_ZEROES = 2 };      // client flags
enum : uint32_t {
  OPT_EXPORT_NAME = 1, OPT_ABORT = 2, OPT_LIST = 3, OPT_STARTTLS = 5, OPT_INFO = 6, OPT_GO = 7,
  OPT_STRUCTURED_REPLY = 8, OPT_LIST_META_CONTEXT = 9, OPT_SET_META_CONTEXT = 10, OPT_EXTENDED_HEADERS = 11,
};
enum : uint32_t { REP_ACK = 1, REP_SERVER = 2, REP_INFO = 3, REP_META_CONTEXT = 4 };
inline constexpr uint32_t REP_FLAG_ERROR = 1u << 31;
enum : uint32_t {
  REP_ERR_UNSUP = REP_FLAG_ERROR | 1, REP_ERR_POLICY = REP_FLAG_ERROR | 2, REP_ERR_INVALID = REP_FLAG_ERROR | 3,
  REP_ERR_TLS_REQD = REP_FLAG_ERROR | 5, REP_ERR_UNKNOWN = REP_FLAG_ERROR | 6,
  REP_ERR_EXT_HEADER_REQD = REP_FLAG_ERROR | 10,
};
enum : uint16_t { INFO_EXPORT = 0, INFO_NAME = 1, INFO_DESCRIPTION = 2, INFO_BLOCK_SIZE = 3 };
enum : uint16_t {  // transmission flags
  TFLAG_HAS_FLAGS = 1 << 0, TFLAG_READ_ONLY = 1 << 1, TFLAG_SEND_FLUSH = 1 << 2, TFLAG_SEND_FUA = 1 << 3,
  TFLAG_SEND_TRIM = 1 << 5, TFLAG_SEND_WRITE_ZEROES = 1 << 6, TFLAG_SEND_DF = 1 << 7,
  TFLAG_CAN_MULTI_CONN = 1 << 8, TFLAG_SEND_FAST_ZERO = 1 << 11,
};
enum : uint16_t {
  CMD_READ = 0, CMD_WRITE = 1, CMD_DISC = 2, CMD_FLUSH = 3, CMD_TRIM = 4, CMD_CACHE = 5,
  CMD_WRITE_ZEROES = 6, CMD_BLOCK_STATUS = 7,
};
enum : uint16_t {
  CMD_FLAG_FUA = 1 << 0, CMD_FLAG_NO_HOLE = 1 << 1, CMD_FLAG_DF = 1 << 2, CMD_FLAG_REQ_ONE = 1 << 3,
  CMD_FLAG_FAST_ZERO = 1 << 4, CMD_FLAG_PAYLOAD_LEN = 1 << 5,
};
enum : uint16_t { REPLY_FLAG_DONE = 1 };
enum : uint16_t {
  REPLY_TYPE_NONE = 0, REPLY_TYPE_OFFSET_DATA = 1, REPLY_TYPE_OFFSET_HOLE = 2, REPLY_TYPE_BLOCK_STATUS = 5,
  REPLY_TYPE_BLOCK_STATUS_EXT = 6,
  REPLY_TYPE_ERROR = (1 << 15) | 1, REPLY_TYPE_ERROR_OFFSET = (1 << 15) | 2,
};
enum : uint32_t { STATE_HOLE = 1, STATE_ZERO = 2 };
enum : uint32_t { NBD_EPERM = 1, NBD_EIO = 5, NBD_ENOMEM = 12, NBD_EINVAL = 22, NBD_ENOSPC = 28,
                  NBD_EOVERFLOW = 75, NBD_ENOTSUP = 95, NBD_ESHUTDOWN = 108 };

using bytes = std::vector<unsigned char>;

struct option_reply {
  uint32_t option = 0;
  uint32_t type = 0;
  bytes data;
};

// What NBD_OPT_GO / INFO / EXPORT_NAME told.
struct export_info {
  bool ok = false;            // the option ended in ACK (or EXPORT_NAME's reply)
  uint32_t error = 0;         // the error reply type, when one came instead
  uint64_t size = 0;
  uint16_t flags = 0;
  std::optional<std::string> name, description;
  std::optional<uint32_t> min_block, preferred_block, max_block;
  std::vector<option_reply> replies;  // every reply, in order
};

struct extent {
  uint64_t length;  // 32 bits on the wire unless extended headers are in use
  uint32_t flags;
  bool operator==(const extent&) const = default;
};

// One request's reply, simple or structured, checked against the protocol.
struct reply {
  bool ok = false;      // a complete, well-formed reply arrived
  std::string problem;  // why not (timeout, closed, a malformed chunk, ...)
  uint32_t error = 0;   // 0, or the protocol's error number
  std::string message;  // a structured error's text
  bytes data;           // a READ's bytes
  std::vector<extent> extents;  // a BLOCK_STATUS's descriptors
  uint32_t context_id = 0;
  std::vector<uint16_t> chunk_types;  // structured: each chunk's type, in order
  // READ: each OFFSET_DATA and OFFSET_HOLE chunk, in order: {offset, length, hole}.
  struct piece {
    uint64_t offset, length;
    bool hole;
    bool operator==(const piece&) const = default;
  };
  std::vector<piece> pieces;
};

// A TLS session over a client's socket (nbd_client_tls.cc).
struct tls_link;
struct tls_link_deleter {
  void operator()(tls_link* t) const;
};

// What starttls() presents: a PSK file in psktool's format (its first
// identity), or X.509: the CA that must have signed the server's
// certificate, and the client's own certificate and key when given.
struct tls_settings {
  std::string psk_file;
  std::string ca_file, cert_file, key_file;
  bool enabled() const { return !psk_file.empty() || !ca_file.empty(); }
};

class client {
 public:
  static constexpr int kDefaultTimeoutMs = 20000;

  explicit client(int fd);  // takes the socket
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  static std::unique_ptr<client> connect_unix(const std::string& path);
  static std::unique_ptr<client> connect_tcp(uint16_t port);  // 127.0.0.1

  int fd() const { return fd_; }
  void set_timeout_ms(int ms) { timeout_ms_ = ms; }
  const std::string& last_error() const { return last_error_; }

  // NBD_OPT_STARTTLS and its ACK, then the TLS handshake: every byte after
  // it goes through the session. False, with last_error(), on any failure.
  bool starttls(const tls_settings& settings);
  bool tls() const { return tls_ != nullptr; }

  // Raw bytes, each bounded by the timeout. recv_exact fails on EOF too.
  bool send_bytes(const void* p, size_t n);
  bool recv_exact(void* p, size_t n);
  // True when the peer closes (EOF or reset) within the timeout, discarding
  // anything it sends first.
  bool wait_closed();
  void shutdown_write();

  // Handshake. greet() reads the server's greeting and sends client_flags.
  bool greet(uint32_t client_flags = FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
  uint16_t handshake_flags() const { return handshake_flags_; }
  bool send_option(uint32_t option, const bytes& data, uint64_t magic = kIHaveOpt);
  std::optional<option_reply> read_option_reply();

  // NBD_OPT_EXPORT_NAME; expects the 124 zero bytes unless NO_ZEROES was sent.
  export_info opt_export_name(const std::string& name);
  export_info opt_go(const std::string& name, const std::vector<uint16_t>& info = {});
  export_info opt_info(const std::string& name, const std::vector<uint16_t>& info = {});
  bool opt_structured_reply();  // true on ACK
  // NBD_OPT_EXTENDED_HEADERS: the reply's type; on ACK every request and
  // reply after GO uses the extended headers.
  uint32_t opt_extended_headers();
  // LIST and SET_META_CONTEXT: the contexts named (id, name), and the final reply's type.
  struct meta_result {
    uint32_t final_type = 0;
    std::vector<std::pair<uint32_t, std::string>> contexts;
  };
  meta_result opt_meta_context(uint32_t option, const std::string& export_name,
                               const std::vector<std::string>& queries);
  static bytes go_payload(const std::string& name, const std::vector<uint16_t>& info);
  static bytes meta_payload(const std::string& export_name, const std::vector<std::string>& queries);

  // Transmission. The reply format follows opt_structured_reply()'s result.
  bool structured() const { return structured_; }
  void set_structured(bool s) { structured_ = s; }
  bool extended() const { return extended_; }
  // Sends a request in the negotiated form (magic 0: the form's own; a compact
  // header carries the low 32 bits of length). With extended headers a WRITE
  // gets NBD_CMD_FLAG_PAYLOAD_LEN from write(), not from send_request().
  bool send_request(uint16_t type, uint16_t flags, uint64_t cookie, uint64_t offset, uint64_t length,
                    const void* payload = nullptr, size_t payload_len = 0, uint32_t magic = 0);
  // The bytes send_request() sends, for a caller that sends them its own way.
  bytes request_bytes(uint16_t type, uint16_t flags, uint64_t cookie, uint64_t offset, uint64_t length,
                      const void* payload = nullptr, size_t payload_len = 0, uint32_t magic = 0) const;
  // Reads the reply to `cookie`; the request's offset and length say how to
  // read a simple reply's data and check structured or extended chunks.
  reply read_reply(uint64_t cookie, uint16_t type, uint64_t offset = 0, uint64_t length = 0);

  reply read(uint64_t offset, uint64_t length, uint16_t flags = 0);
  reply write(uint64_t offset, const bytes& data, uint16_t flags = 0);
  reply flush();
  reply trim(uint64_t offset, uint64_t length, uint16_t flags = 0);
  reply write_zeroes(uint64_t offset, uint64_t length, uint16_t flags = 0);
  reply block_status(uint64_t offset, uint64_t length, uint16_t flags = 0);
  reply cache(uint64_t offset, uint64_t length);
  bool disc();  // sends NBD_CMD_DISC; there is no reply

 private:
  export_info info_option(uint32_t option, const std::string& name, const std::vector<uint16_t>& requests);
  reply request(uint16_t type, uint16_t flags, uint64_t offset, uint64_t length, const bytes& payload = {});
  reply read_simple(uint64_t cookie, uint16_t type, uint64_t length);
  reply read_structured(uint64_t cookie, uint16_t type, uint64_t offset, uint64_t length);
  bool tls_send(const void* p, size_t n);
  bool tls_recv(void* p, size_t n);
  bool tls_wait_closed();

  int fd_;
  int timeout_ms_ = kDefaultTimeoutMs;
  uint16_t handshake_flags_ = 0;
  bool no_zeroes_ = false;
  bool structured_ = false;
  bool extended_ = false;
  uint64_t next_cookie_ = 1;
  std::string last_error_;
  std::unique_ptr<tls_link, tls_link_deleter> tls_;
};

}  // namespace iov_test::nbd
