// nbd_client.cc: the tests' NBD client and process helpers (see nbd_client.hpp).
#include "support/nbd_client.hpp"

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

extern char** environ;

namespace iov_test::nbd {

namespace {

using clock_type = std::chrono::steady_clock;

void put16(bytes* b, uint16_t v) { b->push_back(v >> 8), b->push_back(v & 0xff); }
void put32(bytes* b, uint32_t v) { put16(b, v >> 16), put16(b, v & 0xffff); }
void put64(bytes* b, uint64_t v) { put32(b, v >> 32), put32(b, v & 0xffffffff); }
uint16_t get16(const unsigned char* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t get32(const unsigned char* p) { return uint32_t{get16(p)} << 16 | get16(p + 2); }
uint64_t get64(const unsigned char* p) { return uint64_t{get32(p)} << 32 | get32(p + 4); }

reply failed(const std::string& why) {
  reply r;
  r.problem = why;
  return r;
}

int ms_left(clock_type::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

}  // namespace

// --- The client ----------------------------------------------------------------

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
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return nullptr;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return nullptr;
  }
  return std::make_unique<client>(fd);
}

std::unique_ptr<client> client::connect_tcp(uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return nullptr;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return nullptr;
  }
  return std::make_unique<client>(fd);
}

bool client::wait_for(short events) {
  pollfd p{fd_, events, 0};
  int n;
  do {
    n = poll(&p, 1, timeout_ms_);
  } while (n < 0 && errno == EINTR);
  if (n == 0)
    last_error_ = "timed out waiting for the server";
  return n > 0;
}

bool client::send_bytes(const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
  while (n) {
    pollfd pf{fd_, POLLOUT, 0};
    int r = poll(&pf, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      last_error_ = r == 0 ? "timed out sending" : std::strerror(errno);
      return false;
    }
    ssize_t w = ::send(fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (w <= 0) {
      last_error_ = std::string("send: ") + std::strerror(errno);
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool client::recv_exact(void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
  while (n) {
    pollfd pf{fd_, POLLIN, 0};
    int r = poll(&pf, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      last_error_ = r == 0 ? "timed out waiting for the server" : std::strerror(errno);
      return false;
    }
    ssize_t got = ::recv(fd_, p, n, MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (got <= 0) {
      last_error_ = got == 0 ? "the server closed the connection" : std::string("recv: ") + std::strerror(errno);
      return false;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool client::wait_closed() {
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms_);
  char scratch[4096];
  for (;;) {
    pollfd pf{fd_, POLLIN, 0};
    int r = poll(&pf, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
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
  put32(&b, static_cast<uint32_t>(name.size()));
  b.insert(b.end(), name.begin(), name.end());
  put16(&b, static_cast<uint16_t>(info.size()));
  for (uint16_t i : info)
    put16(&b, i);
  return b;
}

bytes client::meta_payload(const std::string& export_name, const std::vector<std::string>& queries) {
  bytes b;
  put32(&b, static_cast<uint32_t>(export_name.size()));
  b.insert(b.end(), export_name.begin(), export_name.end());
  put32(&b, static_cast<uint32_t>(queries.size()));
  for (const std::string& q : queries) {
    put32(&b, static_cast<uint32_t>(q.size()));
    b.insert(b.end(), q.begin(), q.end());
  }
  return b;
}

export_info client::read_info_replies(uint32_t option) {
  export_info info;
  for (;;) {
    auto r = read_option_reply();
    if (!r)
      return info;
    info.replies.push_back(*r);
    if (r->option != option) {
      last_error_ = "a reply for another option";
      return info;
    }
    if (r->type == REP_ACK) {
      info.ok = true;
      return info;
    }
    if (r->type & REP_FLAG_ERROR) {
      info.error = r->type;
      return info;
    }
    if (r->type != REP_INFO || r->data.size() < 2) {
      last_error_ = "an unexpected reply to GO/INFO";
      return info;
    }
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
  if (!send_option(OPT_GO, go_payload(name, info)))
    return {};
  return read_info_replies(OPT_GO);
}

export_info client::opt_info(const std::string& name, const std::vector<uint16_t>& info) {
  if (!send_option(OPT_INFO, go_payload(name, info)))
    return {};
  return read_info_replies(OPT_INFO);
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

bool client::send_request(uint16_t type, uint16_t flags, uint64_t cookie, uint64_t offset, uint32_t length,
                          const void* payload, size_t payload_len, uint32_t magic) {
  bytes b;
  put32(&b, magic);
  put16(&b, flags);
  put16(&b, type);
  put64(&b, cookie);
  put64(&b, offset);
  put32(&b, length);
  const auto* p = static_cast<const unsigned char*>(payload);
  b.insert(b.end(), p, p + payload_len);
  return send_bytes(b.data(), b.size());
}

reply client::read_reply(uint64_t cookie, uint16_t type, uint64_t offset, uint32_t length) {
  if (structured_)
    return read_structured(cookie, type, offset, length);
  reply r;
  unsigned char head[16];
  if (!recv_exact(head, sizeof head))
    return r.problem = last_error_, r;
  if (get32(head) != kSimpleReplyMagic)
    return r.problem = "not a simple reply", r;
  if (get64(head + 8) != cookie)
    return r.problem = "the reply's cookie is not the request's", r;
  r.error = get32(head + 4);
  if (type == CMD_READ && r.error == 0) {
    r.data.resize(length);
    if (length && !recv_exact(r.data.data(), length))
      return r.problem = last_error_, r;
  }
  r.ok = true;
  return r;
}

// Reads chunks up to the one marked DONE, checking each against the rules of
// its type; a READ's data is reassembled from OFFSET_DATA and OFFSET_HOLE.
reply client::read_structured(uint64_t cookie, uint16_t type, uint64_t offset, uint32_t length) {
  reply r;
  std::vector<bool> covered(type == CMD_READ ? length : 0);
  if (type == CMD_READ)
    r.data.assign(length, 0);
  bool saw_status = false, saw_error = false;
  auto in_request = [&](uint64_t o, uint64_t n) { return o >= offset && n <= length && o - offset <= length - n; };
  auto cover = [&](uint64_t o, uint64_t n) {
    for (uint64_t k = o - offset; k < o - offset + n; k++) {
      if (covered[k])
        return false;
      covered[k] = true;
    }
    return true;
  };
  for (;;) {
    unsigned char head[20];
    if (!recv_exact(head, 4))
      return r.problem = last_error_, r;
    if (get32(head) == kSimpleReplyMagic && type != CMD_READ && r.chunk_types.empty()) {
      if (!recv_exact(head + 4, 12))
        return r.problem = last_error_, r;
      if (get64(head + 8) != cookie)
        return r.problem = "the reply's cookie is not the request's", r;
      r.error = get32(head + 4);
      r.ok = true;
      return r;
    }
    if (get32(head) != kStructuredReplyMagic)
      return r.problem = "not a structured reply chunk", r;
    if (!recv_exact(head + 4, 16))
      return r.problem = last_error_, r;
    const uint16_t flags = get16(head + 4), ctype = get16(head + 6);
    const uint32_t len = get32(head + 16);
    if (get64(head + 8) != cookie)
      return r.problem = "the chunk's cookie is not the request's", r;
    if (len > (64u << 20))
      return r.problem = "a chunk longer than any request", r;
    bytes payload(len);
    if (len && !recv_exact(payload.data(), len))
      return r.problem = last_error_, r;
    const unsigned char* p = payload.data();
    r.chunk_types.push_back(ctype);
    switch (ctype) {
      case REPLY_TYPE_NONE:
        if (len != 0 || !(flags & REPLY_FLAG_DONE))
          return r.problem = "NBD_REPLY_TYPE_NONE with a payload or without DONE", r;
        break;
      case REPLY_TYPE_OFFSET_DATA: {
        if (type != CMD_READ || len < 9)
          return r.problem = "OFFSET_DATA: not a READ, or a length below 9 (" + std::to_string(len) + ")", r;
        uint64_t o = get64(p), n = len - 8;
        if (!in_request(o, n) || !cover(o, n))
          return r.problem = "OFFSET_DATA outside the request or overlapping", r;
        std::memcpy(r.data.data() + (o - offset), p + 8, n);
        break;
      }
      case REPLY_TYPE_OFFSET_HOLE: {
        if (type != CMD_READ || len != 12 || get32(p + 8) == 0)
          return r.problem = "malformed OFFSET_HOLE", r;
        uint64_t o = get64(p), n = get32(p + 8);
        if (!in_request(o, n) || !cover(o, n))
          return r.problem = "OFFSET_HOLE outside the request or overlapping", r;
        break;  // r.data is already zero there
      }
      case REPLY_TYPE_BLOCK_STATUS: {
        if (type != CMD_BLOCK_STATUS || len < 12 || (len - 4) % 8 || saw_status)
          return r.problem = "malformed BLOCK_STATUS chunk", r;
        saw_status = true;
        r.context_id = get32(p);
        uint64_t sum = 0;
        for (uint32_t k = 4; k < len; k += 8) {
          extent e{get32(p + k), get32(p + k + 4)};
          if (e.length == 0)
            return r.problem = "a zero-length block status descriptor", r;
          sum += e.length;
          r.extents.push_back(e);
        }
        if (sum > length)
          return r.problem = "block status descriptors beyond the request", r;
        break;
      }
      case REPLY_TYPE_ERROR:
      case REPLY_TYPE_ERROR_OFFSET: {
        const uint32_t extra = ctype == REPLY_TYPE_ERROR ? 6 : 14;
        if (len < extra || get32(p) == 0 || get16(p + 4) > len - extra)
          return r.problem = "malformed error chunk", r;
        r.error = get32(p);
        r.message.assign(reinterpret_cast<const char*>(p + 6), get16(p + 4));
        saw_error = true;
        break;
      }
      default:
        return r.problem = "unknown chunk type " + std::to_string(ctype), r;
    }
    if (flags & REPLY_FLAG_DONE)
      break;
  }
  if (!saw_error && type == CMD_READ)
    for (bool c : covered)
      if (!c)
        return r.problem = "a successful READ reply that does not cover the request", r;
  if (!saw_error && type == CMD_BLOCK_STATUS && !saw_status)
    return r.problem = "a successful BLOCK_STATUS reply without descriptors", r;
  r.ok = true;
  return r;
}

reply client::read(uint64_t offset, uint32_t length, uint16_t flags) {
  uint64_t c = next_cookie_++;
  if (!send_request(CMD_READ, flags, c, offset, length))
    return failed(last_error_);
  return read_reply(c, CMD_READ, offset, length);
}

reply client::write(uint64_t offset, const bytes& data, uint16_t flags) {
  uint64_t c = next_cookie_++;
  if (!send_request(CMD_WRITE, flags, c, offset, static_cast<uint32_t>(data.size()), data.data(), data.size()))
    return failed(last_error_);
  return read_reply(c, CMD_WRITE);
}

reply client::flush() {
  uint64_t c = next_cookie_++;
  if (!send_request(CMD_FLUSH, 0, c, 0, 0))
    return failed(last_error_);
  return read_reply(c, CMD_FLUSH);
}

reply client::trim(uint64_t offset, uint32_t length, uint16_t flags) {
  uint64_t c = next_cookie_++;
  if (!send_request(CMD_TRIM, flags, c, offset, length))
    return failed(last_error_);
  return read_reply(c, CMD_TRIM);
}

reply client::write_zeroes(uint64_t offset, uint32_t length, uint16_t flags) {
  uint64_t c = next_cookie_++;
  if (!send_request(CMD_WRITE_ZEROES, flags, c, offset, length))
    return failed(last_error_);
  return read_reply(c, CMD_WRITE_ZEROES);
}

reply client::block_status(uint64_t offset, uint32_t length, uint16_t flags) {
  uint64_t c = next_cookie_++;
  if (!send_request(CMD_BLOCK_STATUS, flags, c, offset, length))
    return failed(last_error_);
  return read_reply(c, CMD_BLOCK_STATUS, offset, length);
}

reply client::cache(uint64_t offset, uint32_t length) {
  uint64_t c = next_cookie_++;
  if (!send_request(CMD_CACHE, 0, c, offset, length))
    return failed(last_error_);
  return read_reply(c, CMD_CACHE);
}

bool client::disc() { return send_request(CMD_DISC, 0, next_cookie_++, 0, 0); }

// --- Processes -------------------------------------------------------------------

temp_dir::temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base && std::strlen(base) < 60 ? base : "/tmp") + "/iov-nbd-XXXXXX";
  if (mkdtemp(tmpl.data()))
    dir_ = tmpl;
}

temp_dir::~temp_dir() {
  std::error_code ec;
  if (!dir_.empty())
    std::filesystem::remove_all(dir_, ec);
}

namespace {

// Spawns argv with stdin from /dev/null and stdout+stderr into a pipe;
// returns the pid and the pipe's read end in *out.
pid_t spawn(const std::vector<std::string>& argv, bool search_path, int* out) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0)
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_adddup2(&fa, p[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int err = search_path ? posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ)
                        : posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  if (err != 0) {
    close(p[0]);
    return -1;
  }
  *out = p[0];
  return pid;
}

// Reads what fd has until EOF or the deadline; false on the deadline.
bool read_until_eof(int fd, std::string* out, clock_type::time_point deadline) {
  char buf[4096];
  for (;;) {
    pollfd pf{fd, POLLIN, 0};
    int r = poll(&pf, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return true;
    out->append(buf, static_cast<size_t>(n));
  }
}

// waitpid with a deadline; the wait status, or -1 on the deadline.
int wait_deadline(pid_t pid, clock_type::time_point deadline) {
  for (;;) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return status;
    if (r < 0 && errno != EINTR)
      return -1;
    if (clock_type::now() >= deadline)
      return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

server_process::server_process(const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = spawn(argv, false, &out_);
}

server_process::~server_process() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_ >= 0)
    close(out_);
}

void server_process::drain(int timeout_ms) {
  if (out_ < 0)
    return;
  char buf[4096];
  pollfd pf{out_, POLLIN, 0};
  while (poll(&pf, 1, timeout_ms) > 0) {
    ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0)
      break;
    output_.append(buf, static_cast<size_t>(n));
    timeout_ms = 0;
  }
}

bool server_process::wait_listening(int timeout_ms) {
  if (pid_ <= 0)
    return false;
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  static constexpr char kReady[] = "listening on ";
  char buf[1024];
  for (;;) {
    size_t at = output_.find(kReady);
    if (at != std::string::npos) {
      size_t eol = output_.find('\n', at);
      if (eol != std::string::npos) {
        address_ = output_.substr(at + sizeof kReady - 1, eol - at - (sizeof kReady - 1));
        return true;
      }
    }
    pollfd pf{out_, POLLIN, 0};
    int r = poll(&pf, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0)
      return false;  // it exited
    output_.append(buf, static_cast<size_t>(n));
  }
}

int server_process::signal_and_wait(int sig, int timeout_ms) {
  if (pid_ <= 0)
    return -1;
  kill(pid_, sig);
  int status = wait_deadline(pid_, clock_type::now() + std::chrono::milliseconds(timeout_ms));
  if (status == -1) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
  drain(100);
  return status;
}

std::string server_process::output() {
  drain(0);
  return output_;
}

run_result run(const std::vector<std::string>& argv, int timeout_ms) {
  run_result res;
  int out = -1;
  pid_t pid = spawn(argv, true, &out);
  if (pid < 0) {
    res.output = "cannot start " + argv[0];
    return res;
  }
  const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  bool eof = read_until_eof(out, &res.output, deadline);
  close(out);
  int status = eof ? wait_deadline(pid, deadline) : -1;
  if (status == -1) {
    res.timed_out = true;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return res;
  }
  res.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return res;
}

std::string which(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return "";
}

}  // namespace iov_test::nbd
