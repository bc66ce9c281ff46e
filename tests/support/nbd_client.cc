// nbd_client.cc: the tests' NBD client (see nbd_client.hpp). Every field is
// written and read byte by byte in network order, so that nothing depends on
// the server's structs or this machine's layout.
//
//   auto c = iov_test::nbd::client::connect_unix(path);
#include "support/nbd_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "support/read_cover.hpp"

namespace iov_test::nbd {

namespace {

using clock_type = std::chrono::steady_clock;

void put16(bytes* b, uint16_t v) { b->push_back(v >> 8), b->push_back(v & 0xff); }
void put32(bytes* b, uint32_t v) { put16(b, v >> 16), put16(b, v & 0xffff); }
void put64(bytes* b, uint64_t v) { put32(b, v >> 32), put32(b, v & 0xffffffff); }
// A string as the protocol sends names and queries: a 32-bit length, then the bytes.
void put_string32(bytes* b, const std::string& s) {
  put32(b, static_cast<uint32_t>(s.size()));
  b->insert(b->end(), s.begin(), s.end());
}
uint16_t get16(const unsigned char* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t get32(const unsigned char* p) { return uint32_t{get16(p)} << 16 | get16(p + 2); }
uint64_t get64(const unsigned char* p) { return uint64_t{get32(p)} << 32 | get32(p + 4); }

reply failed(const std::string& why) {
  reply r;
  r.problem = why;
  return r;
}

// poll() on one fd until the deadline, retried on EINTR: what poll returned.
int poll_until(int fd, short events, clock_type::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
    pollfd pf{fd, events, 0};
    int r = poll(&pf, 1, left < 0 ? 0 : static_cast<int>(left));
    if (r >= 0 || errno != EINTR)
      return r;
  }
}

// Moves n bytes with io(done, left), one non-blocking send or recv that
// returns what it moved, waiting for `events` in between; one deadline
// bounds the whole transfer, so a peer that stops half way fails in time.
template <class Io>
bool transfer(int fd, short events, int timeout_ms, size_t n, Io io, const char* what, std::string* error) {
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  for (size_t done = 0; done < n;) {
    int r = poll_until(fd, events, deadline);
    if (r <= 0) {
      *error = r == 0 ? "timed out waiting for the server" : std::strerror(errno);
      return false;
    }
    ssize_t moved = io(done, n - done);
    if (moved < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (moved <= 0) {
      *error = moved == 0 ? "the server closed the connection" : std::string(what) + ": " + std::strerror(errno);
      return false;
    }
    done += static_cast<size_t>(moved);
  }
  return true;
}

std::unique_ptr<client> connect_to(int domain, const sockaddr* sa, socklen_t len) {
  int fd = socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return nullptr;
  if (connect(fd, sa, len) != 0) {
    close(fd);
    return nullptr;
  }
  return std::make_unique<client>(fd);
}

}  // namespace

// --- The connection --------------------------------------------------------------

client::client(int fd) : fd_(fd) {}
client::~client() {
  if (fd_ >= 0)
    close(fd_);
}

std::unique_ptr<client> client::connect_unix(const std::string& path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path)
    return nullptr;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  return connect_to(AF_UNIX, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
}

std::unique_ptr<client> client::connect_tcp(uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return connect_to(AF_INET, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
}

bool client::send_bytes(const void* buf, size_t n) {
  if (tls_)
    return tls_send(buf, n);
  const char* p = static_cast<const char*>(buf);
  auto io = [&](size_t done, size_t left) { return ::send(fd_, p + done, left, MSG_NOSIGNAL | MSG_DONTWAIT); };
  return transfer(fd_, POLLOUT, timeout_ms_, n, io, "send", &last_error_);
}

bool client::recv_exact(void* buf, size_t n) {
  if (tls_)
    return tls_recv(buf, n);
  char* p = static_cast<char*>(buf);
  auto io = [&](size_t done, size_t left) { return ::recv(fd_, p + done, left, MSG_DONTWAIT); };
  return transfer(fd_, POLLIN, timeout_ms_, n, io, "recv", &last_error_);
}

bool client::wait_closed() {
  if (tls_)
    return tls_wait_closed();
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
  char scratch[4096];
  for (;;) {
    if (poll_until(fd_, POLLIN, deadline) <= 0) {
      last_error_ = "the server kept the connection open";
      return false;
    }
    ssize_t got = ::recv(fd_, scratch, sizeof scratch, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && (errno == ECONNRESET || errno == EPIPE)))
      return true;
  }
}

void client::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

// --- Handshake -----------------------------------------------------------------

bool client::greet(uint32_t client_flags) {
  unsigned char hello[18];
  if (!recv_exact(hello, sizeof hello))
    return false;
  if (get64(hello) != kNbdMagic || get64(hello + 8) != kIHaveOpt) {
    last_error_ = "bad greeting magic";
    return false;
  }
  handshake_flags_ = get16(hello + 16);
  no_zeroes_ = client_flags & FLAG_C_NO_ZEROES;
  bytes b;
  put32(&b, client_flags);
  return send_bytes(b.data(), b.size());
}

bool client::send_option(uint32_t option, const bytes& data, uint64_t magic) {
  bytes b;
  put64(&b, magic);
  put32(&b, option);
  put32(&b, static_cast<uint32_t>(data.size()));
  b.insert(b.end(), data.begin(), data.end());
  return send_bytes(b.data(), b.size());
}

std::optional<option_reply> client::read_option_reply() {
  unsigned char head[20];
  if (!recv_exact(head, sizeof head))
    return std::nullopt;
  if (get64(head) != kOptReplyMagic) {
    last_error_ = "bad option reply magic";
    return std::nullopt;
  }
  option_reply r;
  r.option = get32(head + 8);
  r.type = get32(head + 12);
  uint32_t len = get32(head + 16);
  if (len > (1u << 20)) {
    last_error_ = "option reply too long";
    return std::nullopt;
  }
  r.data.resize(len);
  if (len && !recv_exact(r.data.data(), len))
    return std::nullopt;
  return r;
}

bytes client::go_payload(const std::string& name, const std::vector<uint16_t>& info) {
  bytes b;
  put_string32(&b, name);
  put16(&b, static_cast<uint16_t>(info.size()));
  for (uint16_t i : info)
    put16(&b, i);
  return b;
}

bytes client::meta_payload(const std::string& export_name, const std::vector<std::string>& queries) {
  bytes b;
  put_string32(&b, export_name);
  put32(&b, static_cast<uint32_t>(queries.size()));
  for (const std::string& q : queries)
    put_string32(&b, q);
  return b;
}

// GO and INFO share their request and their replies: NBD_REP_INFO items up
// to an ACK or an error.
export_info client::info_option(uint32_t option, const std::string& name, const std::vector<uint16_t>& requests) {
  export_info info;
  if (!send_option(option, go_payload(name, requests)))
    return info;
  for (;;) {
    auto r = read_option_reply();
    if (!r)
      return info;
    info.replies.push_back(*r);
    if (r->option != option)
      return last_error_ = "a reply for another option", info;
    if (r->type == REP_ACK)
      return info.ok = true, info;
    if (r->type & REP_FLAG_ERROR)
      return info.error = r->type, info;
    if (r->type != REP_INFO || r->data.size() < 2)
      return last_error_ = "an unexpected reply to GO/INFO", info;
    const unsigned char* d = r->data.data();
    const size_t n = r->data.size();
    switch (get16(d)) {
      case INFO_EXPORT:
        if (n != 12)
          return last_error_ = "NBD_INFO_EXPORT of the wrong size", info;
        info.size = get64(d + 2);
        info.flags = get16(d + 10);
        break;
      case INFO_NAME:
        info.name = std::string(reinterpret_cast<const char*>(d + 2), n - 2);
        break;
      case INFO_DESCRIPTION:
        info.description = std::string(reinterpret_cast<const char*>(d + 2), n - 2);
        break;
      case INFO_BLOCK_SIZE:
        if (n != 14)
          return last_error_ = "NBD_INFO_BLOCK_SIZE of the wrong size", info;
        info.min_block = get32(d + 2);
        info.preferred_block = get32(d + 6);
        info.max_block = get32(d + 10);
        break;
      default:
        break;  // clients ignore what they do not know
    }
  }
}

export_info client::opt_go(const std::string& name, const std::vector<uint16_t>& info) {
  return info_option(OPT_GO, name, info);
}

export_info client::opt_info(const std::string& name, const std::vector<uint16_t>& info) {
  return info_option(OPT_INFO, name, info);
}

export_info client::opt_export_name(const std::string& name) {
  export_info info;
  if (!send_option(OPT_EXPORT_NAME, bytes(name.begin(), name.end())))
    return info;
  unsigned char r[10 + 124];
  size_t len = no_zeroes_ ? 10 : sizeof r;
  if (!recv_exact(r, len))
    return info;
  for (size_t k = 10; k < len; k++)
    if (r[k])
      return last_error_ = "the 124 reserved bytes are not zero", info;
  info.size = get64(r);
  info.flags = get16(r + 8);
  info.ok = true;
  return info;
}

bool client::opt_structured_reply() {
  if (!send_option(OPT_STRUCTURED_REPLY, {}))
    return false;
  auto r = read_option_reply();
  if (!r || r->option != OPT_STRUCTURED_REPLY || r->type != REP_ACK)
    return false;
  structured_ = true;
  return true;
}

uint32_t client::opt_extended_headers() {
  if (!send_option(OPT_EXTENDED_HEADERS, {}))
    return 0;
  auto r = read_option_reply();
  if (!r || r->option != OPT_EXTENDED_HEADERS)
    return 0;
  if (r->type == REP_ACK)
    structured_ = extended_ = true;
  return r->type;
}

client::meta_result client::opt_meta_context(uint32_t option, const std::string& export_name,
                                             const std::vector<std::string>& queries) {
  meta_result m;
  if (!send_option(option, meta_payload(export_name, queries)))
    return m;
  for (;;) {
    auto r = read_option_reply();
    if (!r || r->option != option)
      return m;
    if (r->type != REP_META_CONTEXT) {
      m.final_type = r->type;
      return m;
    }
    if (r->data.size() < 4)
      return m;
    m.contexts.emplace_back(get32(r->data.data()),
                            std::string(reinterpret_cast<const char*>(r->data.data() + 4), r->data.size() - 4));
  }
}

// --- Transmission ----------------------------------------------------------------

bool client::send_request(uint16_t type, uint16_t flags, uint64_t cookie, uint64_t offset, uint64_t length,
                          const void* payload, size_t payload_len, uint32_t magic) {
  const bytes b = request_bytes(type, flags, cookie, offset, length, payload, payload_len, magic);
  return send_bytes(b.data(), b.size());
}

bytes client::request_bytes(uint16_t type, uint16_t flags, uint64_t cookie, uint64_t offset, uint64_t length,
                            const void* payload, size_t payload_len, uint32_t magic) const {
  bytes b;
  put32(&b, magic ? magic : extended_ ? kExtendedRequestMagic : kRequestMagic);
  put16(&b, flags);
  put16(&b, type);
  put64(&b, cookie);
  put64(&b, offset);
  if (extended_)
    put64(&b, length);
  else
    put32(&b, static_cast<uint32_t>(length));
  const auto* p = static_cast<const unsigned char*>(payload);
  b.insert(b.end(), p, p + payload_len);
  return b;
}

reply client::read_reply(uint64_t cookie, uint16_t type, uint64_t offset, uint64_t length) {
  if (structured_)
    return read_structured(cookie, type, offset, length);
  unsigned char magic[4];
  if (!recv_exact(magic, sizeof magic))
    return failed(last_error_);
  if (get32(magic) != kSimpleReplyMagic)
    return failed("not a simple reply");
  return read_simple(cookie, type, length);
}

// The rest of a simple reply, after its magic: the error, then a successful
// READ's data.
reply client::read_simple(uint64_t cookie, uint16_t type, uint64_t length) {
  unsigned char head[12];
  if (!recv_exact(head, sizeof head))
    return failed(last_error_);
  if (get64(head + 4) != cookie)
    return failed("the reply's cookie is not the request's");
  reply r;
  r.error = get32(head);
  if (type == CMD_READ && r.error == 0) {
    r.data.resize(length);
    if (length && !recv_exact(r.data.data(), length))
      return failed(last_error_);
  }
  r.ok = true;
  return r;
}

namespace {

// The rules a structured reply's chunks must keep, checked one chunk at a
// time: each type's payload shape, OFFSET_DATA and OFFSET_HOLE inside the
// READ without overlap, one BLOCK_STATUS chunk within the request. A READ's
// data is reassembled into the reply as it comes.
class chunk_checker {
 public:
  chunk_checker(reply* r, uint16_t type, uint64_t offset, uint64_t length, bool extended)
      : r_(*r), type_(type), offset_(offset), length_(length), extended_(extended), covered_(offset, length) {
    if (type == CMD_READ && length <= kMaxRead)
      r_.data.assign(length, 0);
  }

  // "" when the chunk keeps the rules, else what is wrong with it.
  std::string take(uint16_t flags, uint16_t ctype, const bytes& payload) {
    const unsigned char* p = payload.data();
    const uint32_t len = static_cast<uint32_t>(payload.size());
    r_.chunk_types.push_back(ctype);
    switch (ctype) {
      case REPLY_TYPE_NONE:
        if (len != 0 || !(flags & REPLY_FLAG_DONE))
          return "NBD_REPLY_TYPE_NONE with a payload or without DONE";
        return "";
      case REPLY_TYPE_OFFSET_DATA: {
        if (type_ != CMD_READ || len < 9)
          return "OFFSET_DATA: not a READ, or a length below 9 (" + std::to_string(len) + ")";
        uint64_t o = get64(p), n = len - 8;
        if (!cover(o, n))
          return "OFFSET_DATA outside the request or overlapping";
        std::memcpy(r_.data.data() + (o - offset_), p + 8, n);
        r_.pieces.push_back({o, n, false});
        return "";
      }
      case REPLY_TYPE_OFFSET_HOLE:
        if (type_ != CMD_READ || len != 12 || get32(p + 8) == 0)
          return "malformed OFFSET_HOLE";
        if (!cover(get64(p), get32(p + 8)))
          return "OFFSET_HOLE outside the request or overlapping";
        r_.pieces.push_back({get64(p), get32(p + 8), true});
        return "";  // r_.data is already zero there
      case REPLY_TYPE_BLOCK_STATUS:
        if (extended_)
          return "BLOCK_STATUS (compact) with extended headers";
        return take_block_status(p, len);
      case REPLY_TYPE_BLOCK_STATUS_EXT:
        if (!extended_)
          return "BLOCK_STATUS_EXT without extended headers";
        return take_block_status_ext(p, len);
      case REPLY_TYPE_ERROR:
      case REPLY_TYPE_ERROR_OFFSET: {
        const uint32_t extra = ctype == REPLY_TYPE_ERROR ? 6 : 14;
        if (len < extra || get32(p) == 0 || get16(p + 4) > len - extra)
          return "malformed error chunk";
        r_.error = get32(p);
        r_.message.assign(reinterpret_cast<const char*>(p + 6), get16(p + 4));
        saw_error_ = true;
        return "";
      }
      default:
        return "unknown chunk type " + std::to_string(ctype);
    }
  }

  // After the DONE chunk: a success must have answered the whole request.
  std::string finish() const {
    if (saw_error_)
      return "";
    if (type_ == CMD_READ && length_ > kMaxRead)
      return "a successful READ longer than any payload";
    if (type_ == CMD_READ && !covered_.whole())
      return "a successful READ reply that does not cover the request";
    if (type_ == CMD_BLOCK_STATUS && !saw_status_)
      return "a successful BLOCK_STATUS reply without descriptors";
    return "";
  }

 private:
  std::string take_block_status(const unsigned char* p, uint32_t len) {
    if (type_ != CMD_BLOCK_STATUS || len < 12 || (len - 4) % 8 || saw_status_)
      return "malformed BLOCK_STATUS chunk";
    saw_status_ = true;
    r_.context_id = get32(p);
    uint64_t sum = 0;
    for (uint32_t k = 4; k < len; k += 8) {
      extent e{get32(p + k), get32(p + k + 4)};
      if (e.length == 0)
        return "a zero-length block status descriptor";
      sum += e.length;
      r_.extents.push_back(e);
    }
    return sum > length_ ? "block status descriptors beyond the request" : "";
  }

  // Context id, descriptor count, then 64-bit lengths and statuses (the
  // high 32 bits of base:allocation's zero).
  std::string take_block_status_ext(const unsigned char* p, uint32_t len) {
    if (type_ != CMD_BLOCK_STATUS || len < 24 || (len - 8) % 16 || saw_status_)
      return "malformed BLOCK_STATUS_EXT chunk";
    if (get32(p + 4) != (len - 8) / 16)
      return "BLOCK_STATUS_EXT: the descriptor count is not the chunk's";
    saw_status_ = true;
    r_.context_id = get32(p);
    uint64_t sum = 0;
    for (uint32_t k = 8; k < len; k += 16) {
      const uint64_t status = get64(p + k + 8);
      if (status >> 32)
        return "BLOCK_STATUS_EXT: a base:allocation status beyond 32 bits";
      extent e{get64(p + k), static_cast<uint32_t>(status)};
      if (e.length == 0)
        return "a zero-length block status descriptor";
      sum += e.length;
      r_.extents.push_back(e);
    }
    return sum > length_ ? "block status descriptors beyond the request" : "";
  }

  // Marks [o, o + n) as answered: false when it lies outside the request or
  // was answered already, or the READ is longer than any server sends.
  bool cover(uint64_t o, uint64_t n) { return length_ <= kMaxRead && covered_.cover(o, n); }

  static constexpr uint64_t kMaxRead = 64u << 20;  // longer READs can only be refused

  reply& r_;
  const uint16_t type_;
  const uint64_t offset_;
  const uint64_t length_;
  const bool extended_;
  read_cover covered_;
  bool saw_status_ = false, saw_error_ = false;
};

}  // namespace

// Reads chunks up to the one marked DONE; a request other than READ may still
// be answered by one simple reply (never with extended headers, whose chunks
// also carry the request's offset).
reply client::read_structured(uint64_t cookie, uint16_t type, uint64_t offset, uint64_t length) {
  reply r;
  chunk_checker checker(&r, type, offset, length, extended_);
  for (;;) {
    unsigned char head[32];
    if (!recv_exact(head, 4))
      return r.problem = last_error_, r;
    if (get32(head) == kSimpleReplyMagic && type != CMD_READ && r.chunk_types.empty() && !extended_)
      return read_simple(cookie, type, length);
    if (get32(head) != (extended_ ? kExtendedReplyMagic : kStructuredReplyMagic))
      return r.problem = extended_ ? "not an extended reply chunk" : "not a structured reply chunk", r;
    const size_t size = extended_ ? 32 : 20;
    if (!recv_exact(head + 4, size - 4))
      return r.problem = last_error_, r;
    const uint16_t flags = get16(head + 4), ctype = get16(head + 6);
    const uint64_t len = extended_ ? get64(head + 24) : get32(head + 16);
    if (get64(head + 8) != cookie)
      return r.problem = "the chunk's cookie is not the request's", r;
    if (extended_ && get64(head + 16) != offset)
      return r.problem = "the extended chunk's offset is not the request's", r;
    if (len > (64u << 20) + 8)  // the largest READ and its OFFSET_DATA chunk's offset
      return r.problem = "a chunk longer than any request", r;
    bytes payload(len);
    if (len && !recv_exact(payload.data(), len))
      return r.problem = last_error_, r;
    if (r.problem = checker.take(flags, ctype, payload); !r.problem.empty())
      return r;
    if (flags & REPLY_FLAG_DONE)
      break;
  }
  r.problem = checker.finish();
  r.ok = r.problem.empty();
  return r;
}

// Every command but DISC: one request, then its reply. The offset and length
// tell read_reply what a READ or BLOCK_STATUS answer must cover.
reply client::request(uint16_t type, uint16_t flags, uint64_t offset, uint64_t length, const bytes& payload) {
  const uint64_t cookie = next_cookie_++;
  if (!send_request(type, flags, cookie, offset, length, payload.data(), payload.size()))
    return failed(last_error_);
  return read_reply(cookie, type, offset, length);
}

reply client::read(uint64_t offset, uint64_t length, uint16_t flags) {
  return request(CMD_READ, flags, offset, length);
}
reply client::write(uint64_t offset, const bytes& data, uint16_t flags) {
  return request(CMD_WRITE, extended_ ? flags | CMD_FLAG_PAYLOAD_LEN : flags, offset, data.size(), data);
}
reply client::flush() { return request(CMD_FLUSH, 0, 0, 0); }
reply client::trim(uint64_t offset, uint64_t length, uint16_t flags) {
  return request(CMD_TRIM, flags, offset, length);
}
reply client::write_zeroes(uint64_t offset, uint64_t length, uint16_t flags) {
  return request(CMD_WRITE_ZEROES, flags, offset, length);
}
reply client::block_status(uint64_t offset, uint64_t length, uint16_t flags) {
  return request(CMD_BLOCK_STATUS, flags, offset, length);
}
reply client::cache(uint64_t offset, uint64_t length) { return request(CMD_CACHE, 0, offset, length); }
bool client::disc() { return send_request(CMD_DISC, 0, next_cookie_++, 0, 0); }

}  // namespace iov_test::nbd
