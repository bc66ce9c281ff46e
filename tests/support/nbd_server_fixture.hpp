// nbd_server_fixture.hpp: iov-nbd's server (src/tools/nbd) run in the test's
// own process, on a memory-backed brd or null_blk behind a Unix socket, so
// that the sanitizers see the server's threads, or the program started; and
// what the NBD tests check it against: data with no zero sector, a
// well-behaved client's round, and a per-page model of what base:allocation
// should report. Header-only because the server and the
// drivers are linked into the test programs, not into the support library.
// The NBD tests sit inside namespace iov_test::nbd: these names need no
// prefix there, and the protocol's constants still read nbd::REP_ACK.
//
//   local_server s("null_blk", {{"blocksize", "4096"}});
//   auto c = s.open(/*structured=*/true);  // greeted, after GO
//   ASSERT_TRUE(c);
//   EXPECT_EQ(c->write(0, bytes(4096, 1)).error, 0u);
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "iov_drivers/blkdev.hpp"
#include "nbd/server.hpp"
#include "support/nbd_client.hpp"
#include "support/nbd_process.hpp"

namespace iov_test::nbd {

inline constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

// Writes text to path (a key, a certificate, an image for a client), and
// reads a file whole.
inline void spit(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls pred every 10 ms until it holds (true) or timeout_ms pass (false):
// a bounded wait for what another thread does, never a timing assertion.
template <class Pred>
bool eventually(Pred pred, int timeout_ms = 20000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Random bytes in which no 512-byte sector is all zero, so that every
// written sector reads back as data in the extent map; eight bytes a draw
// (a 64 MiB payload is 8 M draws, not 64 M, which a sanitizer build feels).
inline bytes random_data(size_t n, std::mt19937_64& rng) {
  bytes b(n);
  for (size_t at = 0; at < n; at += 8) {
    const uint64_t r = rng();
    std::memcpy(b.data() + at, &r, std::min<size_t>(8, n - at));
  }
  for (size_t s = 0; s < n; s += 512)
    b[s] |= 1;
  return b;
}

// The iov-nbd program of this tree, for the tests of the program (the build
// gives each test IOV_NBD_PATH), or nullptr.
#ifdef IOV_NBD_PATH
inline constexpr const char* kProgram = IOV_NBD_PATH;
#else
inline constexpr const char* kProgram = nullptr;
#endif

#define REQUIRE_PROGRAM()                                    \
  do {                                                       \
    if (!::iov_test::nbd::kProgram)                          \
      GTEST_SKIP() << "iov-nbd is not built in this tree";   \
  } while (0)
#define REQUIRE_TOOL(name)                                   \
  do {                                                       \
    if (::iov_test::nbd::which(name).empty())                \
      GTEST_SKIP() << name << " is not installed";           \
  } while (0)

// The program on a Unix socket in dir (unless args name one), under
// `limits`, ready.
inline std::unique_ptr<server_process> start(const temp_dir& dir, std::vector<std::string> args,
                                             const std::vector<resource_limit>& limits = {},
                                             bool add_socket = true) {
  if (add_socket)
    args.push_back("--socket=" + dir.path("sock"));
  auto p = std::make_unique<server_process>(kProgram, args, limits);
  EXPECT_TRUE(p->wait_listening()) << "iov-nbd did not start: " << p->output();
  return p;
}

// A well-behaved client's round: writes 64 KiB at `offset` and reads it back.
inline void expect_served(client& c, uint64_t offset, std::mt19937_64& rng) {
  bytes d = random_data(64 * KiB, rng);
  auto w = c.write(offset, d);
  ASSERT_TRUE(w.ok && w.error == 0) << "the good client's WRITE: " << w.problem;
  auto r = c.read(offset, 64 * KiB);
  ASSERT_TRUE(r.ok && r.error == 0) << "the good client's READ: " << r.problem;
  EXPECT_TRUE(r.data == d);
}

// A device configuration of a parameterized test; `name` ends the test's name.
struct driver_config {
  const char* name;
  const char* driver;
  iov::blkdev_settings settings;
};
inline void PrintTo(const driver_config& c, std::ostream* os) { *os << c.name; }
inline std::string driver_config_name(const testing::TestParamInfo<driver_config>& i) { return i.param.name; }

// A local_server's transport: a Unix socket, or TCP on 127.0.0.1 (a free
// port); TLS's mode and credentials, and what its clients from open()
// present after STARTTLS (nothing: plain clients).
struct server_transport {
  bool tcp = false;
  iov::nbd::tls_mode mode = iov::nbd::tls_mode::off;
  std::shared_ptr<const iov::nbd::tls_credentials> credentials;
  tls_settings client;
};

// The server on a Unix socket, run() on its own thread, exporting "iov".
class local_server {
 public:
  // null_blk is made memory-backed unless the settings say otherwise, since
  // nearly every test reads back what it wrote.
  explicit local_server(const std::string& driver = "brd", iov::blkdev_settings settings = {},
                        uint64_t size = 4 * MiB, const iov::nbd::server_limits& limits = {},
                        const server_transport& tls = {})
      : tls_(tls) {
    settings.emplace_back("size", std::to_string(size));
    const bool named = std::any_of(settings.begin(), settings.end(),
                                   [](const auto& kv) { return kv.first == "memory_backed"; });
    if (driver == "null_blk" && !named)
      settings.emplace_back("memory_backed", "1");
    auto dev = iov::blkdev_create(driver, settings);
    EXPECT_TRUE(dev.ok()) << dev.status();
    dev_ = std::move(*dev);
    socket_ = dir_.path("sock");
    server_ = std::make_unique<iov::nbd::server>(
        *dev_, iov::nbd::server_options{.socket_path = tls.tcp ? "" : socket_,
                                        .port = 0,
                                        .exp = {.name = "iov"},
                                        .limits = limits,
                                        .tls = tls.mode,
                                        .credentials = tls.credentials});
    absl::Status st = server_->listen();
    EXPECT_TRUE(st.ok()) << st;
    if (tls.tcp) {
      const std::string a = server_->address();  // 127.0.0.1:PORT
      port_ = static_cast<uint16_t>(std::stoul(a.substr(a.rfind(':') + 1)));
    }
    thread_ = std::thread([this] { server_->run(); });
  }
  explicit local_server(const driver_config& c, uint64_t size = 4 * MiB, const iov::nbd::server_limits& limits = {},
                        const server_transport& tls = {})
      : local_server(c.driver, c.settings, size, limits, tls) {}
  ~local_server() { stop(); }
  local_server(const local_server&) = delete;
  local_server& operator=(const local_server&) = delete;

  // stop() and the end of run(), bounded: a server that cannot shut its
  // connections down ends the test program rather than stalling the suite.
  void stop() {
    if (!thread_.joinable())
      return;
    server_->stop();
    auto done = std::async(std::launch::async, [this] { thread_.join(); });
    if (done.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      std::fprintf(stderr, "the NBD server did not stop within 30 s\n");
      std::_Exit(1);
    }
  }

  const std::string& socket() const { return socket_; }
  uint64_t size() const { return dev_->get_capacity() << iov::SECTOR_SHIFT; }
  iov::nbd::server_stats stats() const { return server_->stats(); }
  iov::blkdev& device() { return *dev_; }

  std::unique_ptr<client> connect() {
    auto c = tls_.tcp ? client::connect_tcp(port_) : client::connect_unix(socket_);
    EXPECT_TRUE(c) << "cannot connect to " << (tls_.tcp ? server_->address() : socket_);
    return c;
  }

  // The replies a client negotiates: simple, STRUCTURED_REPLY or EXTENDED_HEADERS.
  enum class headers { simple, structured, extended };

  // A client in transmission, after GO (and the headers asked for,
  // base:allocation when asked); GO's answer goes to *go. GO asks for the
  // information items `info`: without NBD_INFO_BLOCK_SIZE among them the
  // client negotiated no block size, and may use any offset and length.
  std::unique_ptr<client> open(bool structured, bool meta = false, export_info* go = nullptr,
                               const std::vector<uint16_t>& info = {}) {
    return open(structured ? headers::structured : headers::simple, meta, go, info);
  }
  std::unique_ptr<client> open(headers h, bool meta = false, export_info* go = nullptr,
                               const std::vector<uint16_t>& info = {}) {
    auto c = connect();
    if (!c || !c->greet())
      return ADD_FAILURE() << "handshake: " << (c ? c->last_error() : "no connection"), nullptr;
    if (tls_.client.enabled() && !c->starttls(tls_.client))
      return ADD_FAILURE() << "STARTTLS: " << c->last_error(), nullptr;
    if (h == headers::structured && !c->opt_structured_reply())
      return ADD_FAILURE() << "STRUCTURED_REPLY: " << c->last_error(), nullptr;
    if (h == headers::extended && c->opt_extended_headers() != REP_ACK)
      return ADD_FAILURE() << "EXTENDED_HEADERS: " << c->last_error(), nullptr;
    if (meta) {
      auto m = c->opt_meta_context(OPT_SET_META_CONTEXT, "", {"base:allocation"});
      if (m.final_type != REP_ACK || m.contexts.size() != 1)
        return ADD_FAILURE() << "SET_META_CONTEXT", nullptr;
    }
    export_info told = c->opt_go("", info);
    if (!told.ok)
      return ADD_FAILURE() << "GO: " << c->last_error(), nullptr;
    if (go)
      *go = told;
    return c;
  }

 private:
  server_transport tls_;
  uint16_t port_ = 0;
  temp_dir dir_;
  std::string socket_;
  std::unique_ptr<iov::blkdev> dev_;
  std::unique_ptr<iov::nbd::server> server_;
  std::thread thread_;
};

// What base:allocation should say, per 4 KiB unit: every operation here is
// page aligned, which is the granularity of both drivers' maps.
struct alloc_model {
  enum state : uint32_t { data = 0, zero = STATE_ZERO, hole = STATE_HOLE | STATE_ZERO };
  bool brd;
  std::vector<state> unit;
  alloc_model(bool is_brd, uint64_t size) : brd(is_brd), unit(size / (4 * KiB), hole) {}
  void set(uint64_t off, uint64_t len, state s) {
    for (uint64_t u = off / (4 * KiB); u < (off + len) / (4 * KiB); u++)
      unit[u] = s;
  }
  void write(uint64_t off, uint64_t len) { set(off, len, data); }
  // Without NO_HOLE both drivers leave a hole (brd frees whole pages,
  // null_blk unstores the blocks); with it brd clears only the pages it has,
  // while null_blk stores zeros everywhere.
  void write_zeroes(uint64_t off, uint64_t len, bool no_hole) {
    for (uint64_t u = off / (4 * KiB); u < (off + len) / (4 * KiB); u++)
      unit[u] = !no_hole ? hole : !brd ? zero : unit[u] == hole ? hole : zero;
  }
  void trim(uint64_t off, uint64_t len) { set(off, len, hole); }
  std::vector<extent> extents(uint64_t off, uint64_t len) const {
    std::vector<extent> out;
    for (uint64_t u = off / (4 * KiB); u < (off + len) / (4 * KiB); u++) {
      if (!out.empty() && out.back().flags == unit[u])
        out.back().length += 4 * KiB;
      else
        out.push_back({static_cast<uint32_t>(4 * KiB), unit[u]});
    }
    return out;
  }
};

// A fixed set of operations over a 4 MiB disk, applied through a client and to the model.
inline void shape_disk(client& c, alloc_model& m, std::mt19937_64& rng) {
  auto write = [&](uint64_t off, uint64_t len) {
    ASSERT_EQ(c.write(off, random_data(len, rng)).error, 0u);
    m.write(off, len);
  };
  write(1 * MiB, 8 * KiB);
  write(1 * MiB + 16 * KiB, 4 * KiB);
  write(2 * MiB, 64 * KiB);
  ASSERT_EQ(c.write_zeroes(2 * MiB + 16 * KiB, 16 * KiB, CMD_FLAG_NO_HOLE).error, 0u);
  m.write_zeroes(2 * MiB + 16 * KiB, 16 * KiB, true);
  ASSERT_EQ(c.write_zeroes(2 * MiB + 48 * KiB, 8 * KiB, 0).error, 0u);
  m.write_zeroes(2 * MiB + 48 * KiB, 8 * KiB, false);
  ASSERT_EQ(c.write_zeroes(3 * MiB, 8 * KiB, CMD_FLAG_NO_HOLE).error, 0u);  // over a hole
  m.write_zeroes(3 * MiB, 8 * KiB, true);
  write(3 * MiB + 64 * KiB, 32 * KiB);
  ASSERT_EQ(c.trim(3 * MiB + 72 * KiB, 8 * KiB).error, 0u);
  m.trim(3 * MiB + 72 * KiB, 8 * KiB);
  write(4 * MiB - 4 * KiB, 4 * KiB);  // the last page
}

// A client with base:allocation on s's disk after shape_disk(), which m
// follows; null after a failure, which has been reported.
inline std::unique_ptr<client> open_shaped(local_server& s, alloc_model& m, std::mt19937_64& rng) {
  auto c = s.open(/*structured=*/true, /*meta=*/true);
  if (!c)
    return nullptr;
  shape_disk(*c, m, rng);
  return testing::Test::HasFatalFailure() ? nullptr : std::move(c);
}

// Neighbours of the same state joined: a server may split a run as it likes.
inline std::vector<extent> merged(const std::vector<extent>& in) {
  std::vector<extent> out;
  for (const auto& e : in) {
    if (!out.empty() && out.back().flags == e.flags)
      out.back().length += e.length;
    else
      out.push_back(e);
  }
  return out;
}

// "(length,flags) ..." for a failure message.
inline std::string describe(const std::vector<extent>& ex) {
  std::ostringstream s;
  for (const auto& e : ex)
    s << "(" << e.length << "," << e.flags << ") ";
  return s.str();
}

}  // namespace iov_test::nbd
