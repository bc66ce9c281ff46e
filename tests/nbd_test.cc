// Tests of iov-nbd (src/tools/nbd), one connection at a time: the program
// with real clients (fio's nbd engine with crc32c verify on every
// memory-backed driver configuration, qemu-img convert/compare, nbdinfo
// --map, nbdcopy both ways), its signals, --read-only and TCP; then the
// protocol through the tests' own client (tests/support/nbd_client.hpp),
// which is written from the specification: every handshake option and its
// errors, both reply formats, bounds, BLOCK_STATUS and WRITE_ZEROES flags.
// Expected contents come from a flat model; expected extents from a per-page
// model of what each driver stores. A missing client program skips its test.
// The multi-connection and hostile-client cases are in nbd_concurrent_test.cc.
//
//   ctest --preset asan -R 'Nbd'
//   build/asan/tests/nbd_test --gtest_filter='*NbdPrograms*'
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <thread>

#include "iov_drivers/blkdev.hpp"
#include "nbd/server.hpp"
#include "support/nbd_client.hpp"

namespace {

namespace nbd = iov_test::nbd;
using nbd::bytes;
constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

// Random bytes in which no 512-byte sector is all zero, so that every
// written sector reads back as data in the extent map.
bytes random_data(size_t n, std::mt19937_64& rng) {
  bytes b(n);
  for (auto& c : b)
    c = static_cast<unsigned char>(rng());
  for (size_t s = 0; s < n; s += 512)
    b[s] |= 1;
  return b;
}

// --- The server, in this process ---------------------------------------------------

class local_server {
 public:
  explicit local_server(const std::string& driver = "brd", iov::blkdev_settings settings = {},
                        bool read_only = false) {
    settings.emplace_back("size", std::to_string(4 * MiB));
    if (driver == "null_blk")
      settings.emplace_back("memory_backed", "1");
    auto dev = iov::blkdev_create(driver, settings);
    EXPECT_TRUE(dev.ok()) << dev.status();
    dev_ = std::move(*dev);
    socket_ = dir_.path("sock");
    server_ = std::make_unique<iov::nbd::server>(
        *dev_, iov::nbd::server_options{.socket_path = socket_, .exp = {.read_only = read_only, .name = "iov"}});
    absl::Status st = server_->listen();
    EXPECT_TRUE(st.ok()) << st;
    thread_ = std::thread([this] { server_->run(); });
  }
  ~local_server() {
    server_->stop();
    thread_.join();
  }
  iov::blkdev& dev() { return *dev_; }
  const std::string& socket() const { return socket_; }
  uint64_t size() const { return dev_->get_capacity() << iov::SECTOR_SHIFT; }
  std::unique_ptr<nbd::client> connect() {
    auto c = nbd::client::connect_unix(socket_);
    EXPECT_TRUE(c) << "cannot connect to " << socket_;
    return c;
  }
  // A client in transmission, after GO (and STRUCTURED_REPLY, base:allocation).
  std::unique_ptr<nbd::client> open(bool structured, bool meta = false, nbd::export_info* go = nullptr) {
    auto c = connect();
    if (!c || !c->greet())
      return ADD_FAILURE() << "handshake", nullptr;
    if (structured && !c->opt_structured_reply())
      return ADD_FAILURE() << "STRUCTURED_REPLY: " << c->last_error(), nullptr;
    if (meta) {
      auto m = c->opt_meta_context(nbd::OPT_SET_META_CONTEXT, "", {"base:allocation"});
      if (m.final_type != nbd::REP_ACK || m.contexts.size() != 1)
        return ADD_FAILURE() << "SET_META_CONTEXT", nullptr;
    }
    nbd::export_info info = c->opt_go("");
    if (!info.ok)
      return ADD_FAILURE() << "GO: " << c->last_error(), nullptr;
    if (go)
      *go = info;
    return c;
  }

 private:
  nbd::temp_dir dir_;
  std::string socket_;
  std::unique_ptr<iov::blkdev> dev_;
  std::unique_ptr<iov::nbd::server> server_;
  std::thread thread_;
};

// What base:allocation should say, per 4 KiB unit: every operation here is
// page aligned, which is the granularity of both drivers' maps.
struct alloc_model {
  enum state : uint32_t { data = 0, zero = nbd::STATE_ZERO, hole = nbd::STATE_HOLE | nbd::STATE_ZERO };
  bool brd;
  std::vector<state> unit;
  alloc_model(bool is_brd, uint64_t size) : brd(is_brd), unit(size / (4 * KiB), hole) {}
  void set(uint64_t off, uint64_t len, state s) {
    for (uint64_t u = off / (4 * KiB); u < (off + len) / (4 * KiB); u++)
      unit[u] = s;
  }
  void write(uint64_t off, uint64_t len) { set(off, len, data); }
  // brd frees whole pages unless NO_HOLE, which clears only the pages it has;
  // null_blk has no native zeroing, so the server writes zeros: stored zeros.
  void write_zeroes(uint64_t off, uint64_t len, bool no_hole) {
    for (uint64_t u = off / (4 * KiB); u < (off + len) / (4 * KiB); u++)
      unit[u] = !brd ? zero : !no_hole ? hole : unit[u] == hole ? hole : zero;
  }
  void trim(uint64_t off, uint64_t len) { set(off, len, hole); }
  std::vector<nbd::extent> extents(uint64_t off, uint64_t len) const {
    std::vector<nbd::extent> out;
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
void shape_disk(nbd::client& c, alloc_model& m, std::mt19937_64& rng) {
  auto write = [&](uint64_t off, uint64_t len) {
    ASSERT_EQ(c.write(off, random_data(len, rng)).error, 0u);
    m.write(off, len);
  };
  write(1 * MiB, 8 * KiB);
  write(1 * MiB + 16 * KiB, 4 * KiB);
  write(2 * MiB, 64 * KiB);
  ASSERT_EQ(c.write_zeroes(2 * MiB + 16 * KiB, 16 * KiB, nbd::CMD_FLAG_NO_HOLE).error, 0u);
  m.write_zeroes(2 * MiB + 16 * KiB, 16 * KiB, true);
  ASSERT_EQ(c.write_zeroes(2 * MiB + 48 * KiB, 8 * KiB, 0).error, 0u);
  m.write_zeroes(2 * MiB + 48 * KiB, 8 * KiB, false);
  ASSERT_EQ(c.write_zeroes(3 * MiB, 8 * KiB, nbd::CMD_FLAG_NO_HOLE).error, 0u);  // over a hole
  m.write_zeroes(3 * MiB, 8 * KiB, true);
  write(3 * MiB + 64 * KiB, 32 * KiB);
  ASSERT_EQ(c.trim(3 * MiB + 72 * KiB, 8 * KiB).error, 0u);
  m.trim(3 * MiB + 72 * KiB, 8 * KiB);
  write(4 * MiB - 4 * KiB, 4 * KiB);  // the last page
}

std::vector<nbd::extent> merged(const std::vector<nbd::extent>& in) {
  std::vector<nbd::extent> out;
  for (const auto& e : in) {
    if (!out.empty() && out.back().flags == e.flags)
      out.back().length += e.length;
    else
      out.push_back(e);
  }
  return out;
}

std::string describe(const std::vector<nbd::extent>& ex) {
  std::ostringstream s;
  for (const auto& e : ex)
    s << "(" << e.length << "," << e.flags << ") ";
  return s.str();
}

// --- The program with real clients --------------------------------------------------

#ifdef IOV_NBD_PATH
constexpr const char* kProgram = IOV_NBD_PATH;
#else
constexpr const char* kProgram = nullptr;
#endif

#define REQUIRE_PROGRAM()                                     \
  do {                                                        \
    if (!kProgram)                                            \
      GTEST_SKIP() << "iov-nbd is not built in this tree";    \
  } while (0)
#define REQUIRE_TOOL(name)                                    \
  do {                                                        \
    if (nbd::which(name).empty())                             \
      GTEST_SKIP() << name << " is not installed";            \
  } while (0)

// iov-nbd on a Unix socket in dir (unless args name one), ready.
std::unique_ptr<nbd::server_process> start(const nbd::temp_dir& dir, std::vector<std::string> args,
                                           bool add_socket = true) {
  if (add_socket)
    args.push_back("--socket=" + dir.path("sock"));
  auto p = std::make_unique<nbd::server_process>(kProgram, args);
  EXPECT_TRUE(p->wait_listening()) << "iov-nbd did not start: " << p->output();
  return p;
}

struct fio_config {
  const char* name;
  std::vector<std::string> args;
};
void PrintTo(const fio_config& c, std::ostream* os) { *os << c.name; }
class NbdFio : public testing::TestWithParam<fio_config> {};

TEST_P(NbdFio, RandwriteThenCrc32cVerifyPasses) {
  REQUIRE_PROGRAM();
  REQUIRE_TOOL("fio");
  nbd::temp_dir dir;
  std::vector<std::string> args = GetParam().args;
  args.push_back("--size=16m");
  auto srv = start(dir, args);
  auto r = nbd::run({"fio", "--name=verify", "--ioengine=nbd", "--uri=" + nbd::unix_uri(dir.path("sock")),
                     "--rw=randwrite", "--bs=4k", "--iodepth=16", "--size=16m", "--verify=crc32c",
                     "--do_verify=1", "--verify_fatal=1"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("verify: bad"), std::string::npos) << r.output;
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

INSTANTIATE_TEST_SUITE_P(
    Drivers, NbdFio,
    testing::Values(fio_config{"brd_off", {"--driver=brd", "--detect_zeroes=off"}},
                    fio_config{"brd_on", {"--driver=brd", "--detect_zeroes=on"}},
                    fio_config{"brd_unmap", {"--driver=brd", "--detect_zeroes=unmap"}},
                    fio_config{"null_blk_512", {"--driver=null_blk", "--blocksize=512"}},
                    fio_config{"null_blk_512_cache", {"--driver=null_blk", "--blocksize=512", "--cache_size=1"}},
                    fio_config{"null_blk_4096", {"--driver=null_blk", "--blocksize=4096"}},
                    fio_config{"null_blk_4096_cache", {"--driver=null_blk", "--blocksize=4096", "--cache_size=1"}}),
    [](const testing::TestParamInfo<fio_config>& i) { return std::string(i.param.name); });

// A raw image of 64 KiB pieces: holes (never written), explicit zeros,
// one page of data, or data throughout.
bytes make_image(const std::string& path, uint64_t size) {
  std::mt19937_64 rng(7);
  bytes image(size, 0);
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
  for (uint64_t off = 0; off < size; off += 64 * KiB) {
    uint64_t kind = rng() % 4, at = off, len = 64 * KiB;
    if (kind == 0)
      continue;
    if (kind == 2)
      len = 4 * KiB, at += 4 * KiB * (rng() % 16);
    bytes d = kind == 1 ? bytes(len, 0) : random_data(len, rng);
    std::copy(d.begin(), d.end(), image.begin() + static_cast<ptrdiff_t>(at));
    EXPECT_EQ(pwrite(fd, d.data(), d.size(), static_cast<off_t>(at)), static_cast<ssize_t>(d.size()));
  }
  close(fd);
  return image;
}

bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return bytes(std::istreambuf_iterator<char>(f), {});
}

// The whole export, read by this client: the independent check of what a real client wrote.
bytes read_export(const std::string& socket, uint64_t size) {
  auto c = nbd::client::connect_unix(socket);
  bytes all;
  if (!c || !c->greet() || !c->opt_go("").ok)
    return all;
  for (uint64_t off = 0; off < size; off += MiB) {
    auto r = c->read(off, static_cast<uint32_t>(MiB));
    EXPECT_TRUE(r.ok && r.error == 0) << r.problem;
    all.insert(all.end(), r.data.begin(), r.data.end());
  }
  c->disc();
  return all;
}

class NbdPrograms : public testing::TestWithParam<const char*> {};

TEST_P(NbdPrograms, QemuImgConvertThenCompare) {
  REQUIRE_PROGRAM();
  REQUIRE_TOOL("qemu-img");
  nbd::temp_dir dir;
  bytes image = make_image(dir.path("in.img"), 16 * MiB);
  auto srv = start(dir, {GetParam(), "--size=16m"});
  const std::string uri = nbd::unix_uri(dir.path("sock"));
  auto r = nbd::run({"qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", dir.path("in.img"), uri});
  ASSERT_EQ(r.status, 0) << r.output;
  r = nbd::run({"qemu-img", "compare", "-f", "raw", "-F", "raw", dir.path("in.img"), uri});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(read_export(dir.path("sock"), 16 * MiB) == image);
}

TEST_P(NbdPrograms, NbdcopyBothWays) {
  REQUIRE_PROGRAM();
  REQUIRE_TOOL("nbdcopy");
  nbd::temp_dir dir;
  bytes image = make_image(dir.path("in.img"), 16 * MiB);
  auto srv = start(dir, {GetParam(), "--size=16m"});
  const std::string uri = nbd::unix_uri(dir.path("sock"));
  auto r = nbd::run({"nbdcopy", dir.path("in.img"), uri});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(read_export(dir.path("sock"), 16 * MiB) == image);
  r = nbd::run({"nbdcopy", uri, dir.path("out.img")});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(read_file(dir.path("out.img")) == image) << "nbd -> file differs";
}

INSTANTIATE_TEST_SUITE_P(Drivers, NbdPrograms, testing::Values("--driver=brd", "--driver=null_blk"),
                         [](const testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param).substr(9);
                         });

struct map_config {
  const char* name;
  const char* driver;
  iov::blkdev_settings settings;
};
void PrintTo(const map_config& c, std::ostream* os) { *os << c.name; }
class NbdMap : public testing::TestWithParam<map_config> {};

// nbdinfo --map and this client's BLOCK_STATUS agree with the model.
TEST_P(NbdMap, ExtentsAreTheDriversHolesZerosAndData) {
  const map_config& cfg = GetParam();
  local_server s(cfg.driver, cfg.settings);
  alloc_model model(std::string(cfg.driver) == "brd", s.size());
  std::mt19937_64 rng(1);
  auto c = s.open(true, true);
  ASSERT_TRUE(c);
  shape_disk(*c, model, rng);
  if (HasFatalFailure())
    return;
  auto r = c->block_status(0, static_cast<uint32_t>(s.size()));
  ASSERT_TRUE(r.ok) << r.problem;
  ASSERT_EQ(r.error, 0u) << r.message;
  EXPECT_EQ(describe(merged(r.extents)), describe(model.extents(0, s.size())));
  c->disc();

  if (nbd::which("nbdinfo").empty())
    GTEST_SKIP() << "nbdinfo is not installed";
  auto out = nbd::run({"nbdinfo", "--map", nbd::unix_uri(s.socket())});
  ASSERT_EQ(out.status, 0) << out.output;
  std::vector<nbd::extent> listed;
  std::istringstream lines(out.output);
  uint64_t offset, length, expected_offset = 0;
  uint32_t type;
  std::string description;
  while (lines >> offset >> length >> type && std::getline(lines, description)) {
    EXPECT_EQ(offset, expected_offset) << out.output;
    expected_offset = offset + length;
    listed.push_back({static_cast<uint32_t>(length), type});
  }
  EXPECT_EQ(expected_offset, s.size()) << out.output;
  EXPECT_EQ(describe(merged(listed)), describe(model.extents(0, s.size()))) << out.output;
}

INSTANTIATE_TEST_SUITE_P(
    Drivers, NbdMap,
    testing::Values(map_config{"brd", "brd", {}}, map_config{"null_blk_512", "null_blk", {{"blocksize", "512"}}},
                    map_config{"null_blk_4096", "null_blk", {{"blocksize", "4096"}}},
                    map_config{"null_blk_4096_cache", "null_blk", {{"blocksize", "4096"}, {"cache_size", "1"}}}),
    [](const testing::TestParamInfo<map_config>& i) { return std::string(i.param.name); });

class NbdSignals : public testing::TestWithParam<int> {};

// The server ends with status 0 and removes its socket, with one client in
// transmission and one silent in the handshake.
TEST_P(NbdSignals, StopTheServerCleanlyWithClientsConnected) {
  REQUIRE_PROGRAM();
  nbd::temp_dir dir;
  auto srv = start(dir, {"--driver=brd", "--size=4m"});
  auto c = nbd::client::connect_unix(dir.path("sock"));
  ASSERT_TRUE(c && c->greet() && c->opt_go("").ok) << (c ? c->last_error() : "connect");
  ASSERT_EQ(c->write(0, bytes(4 * KiB, 0x5a)).error, 0u);
  auto silent = nbd::client::connect_unix(dir.path("sock"));
  ASSERT_TRUE(silent);
  int status = srv->signal_and_wait(GetParam());
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status << ": " << srv->output();
  EXPECT_EQ(WEXITSTATUS(status), 0) << srv->output();
  struct stat st;
  EXPECT_NE(stat(dir.path("sock").c_str(), &st), 0) << "the socket file was left behind";
  EXPECT_TRUE(c->wait_closed());
  EXPECT_TRUE(silent->wait_closed());
}

INSTANTIATE_TEST_SUITE_P(Signals, NbdSignals, testing::Values(SIGTERM, SIGINT),
                         [](const testing::TestParamInfo<int>& i) { return std::string(sigabbrev_np(i.param)); });

class NbdReadOnly : public testing::TestWithParam<bool> {};

// --read-only --socket=P, or the short forms -r -U P.
TEST_P(NbdReadOnly, RefusesEveryWriteWithEperm) {
  REQUIRE_PROGRAM();
  nbd::temp_dir dir;
  const bool short_forms = GetParam();
  auto srv = short_forms ? start(dir, {"--driver=brd", "--size=4m", "-r", "-U", dir.path("sock")}, false)
                         : start(dir, {"--driver=brd", "--size=4m", "--read-only"});
  EXPECT_EQ(srv->address(), "unix:" + dir.path("sock"));
  auto c = nbd::client::connect_unix(dir.path("sock"));
  ASSERT_TRUE(c && c->greet() && c->opt_structured_reply());
  nbd::export_info info = c->opt_go("");
  ASSERT_TRUE(info.ok) << c->last_error();
  EXPECT_TRUE(info.flags & nbd::TFLAG_READ_ONLY);
  EXPECT_EQ(c->write(0, bytes(4 * KiB, 1)).error, nbd::NBD_EPERM);
  EXPECT_EQ(c->trim(0, 4 * KiB).error, nbd::NBD_EPERM);
  EXPECT_EQ(c->write_zeroes(0, 4 * KiB).error, nbd::NBD_EPERM);
  auto r = c->read(0, 4 * KiB);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.data, bytes(4 * KiB, 0));
}

INSTANTIATE_TEST_SUITE_P(Forms, NbdReadOnly, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "Short" : "Long"; });

// A port nothing listens on now: the kernel's choice for a probe socket.
uint16_t probe_free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0)
    port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

class NbdTcp : public testing::TestWithParam<bool> {};

TEST_P(NbdTcp, ServesOnLoopback) {
  REQUIRE_PROGRAM();
  std::unique_ptr<nbd::server_process> srv;
  uint16_t port = 0;
  for (int attempt = 0; attempt < 5 && !srv; attempt++) {  // another may take the port between probe and bind
    port = probe_free_port();
    ASSERT_NE(port, 0);
    std::vector<std::string> args{"--driver=brd", "--size=4m"};
    if (GetParam())
      args.insert(args.end(), {"-p", std::to_string(port)});
    else
      args.push_back("--port=" + std::to_string(port));
    srv = std::make_unique<nbd::server_process>(kProgram, args);
    if (!srv->wait_listening())
      srv.reset();
  }
  ASSERT_TRUE(srv) << "no port could be bound";
  EXPECT_EQ(srv->address(), "127.0.0.1:" + std::to_string(port));
  auto c = nbd::client::connect_tcp(port);
  ASSERT_TRUE(c && c->greet() && c->opt_go("").ok);
  std::mt19937_64 rng(3);
  bytes d = random_data(64 * KiB, rng);
  ASSERT_EQ(c->write(128 * KiB, d).error, 0u);
  auto r = c->read(128 * KiB, 64 * KiB);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.data, d);
  c->disc();
  if (!nbd::which("nbdinfo").empty()) {
    auto out = nbd::run({"nbdinfo", "nbd://127.0.0.1:" + std::to_string(port)});
    EXPECT_EQ(out.status, 0) << out.output;
    EXPECT_NE(out.output.find("4194304"), std::string::npos) << out.output;
  }
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0);
}

INSTANTIATE_TEST_SUITE_P(Forms, NbdTcp, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "Short" : "Long"; });

TEST(NbdProgram, BadOptionsAreUsageErrors) {
  REQUIRE_PROGRAM();
  for (auto [arg, text] : std::vector<std::pair<std::string, std::string>>{
           {"--bogus", "unknown option --bogus"}, {"--port=70000", "port"}, {"--size=4q", "--size"}}) {
    auto r = nbd::run({kProgram, arg});
    EXPECT_EQ(r.status, 2) << arg << ": " << r.output;
    EXPECT_NE(r.output.find(text), std::string::npos) << r.output;
  }
}

// --- The handshake -------------------------------------------------------------------

TEST(NbdHandshake, GreetingAdvertisesFixedNewstyleAndNoZeroes) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet()) << c->last_error();
  EXPECT_EQ(c->handshake_flags(), nbd::FLAG_FIXED_NEWSTYLE | nbd::FLAG_NO_ZEROES);
}

TEST(NbdHandshake, UnknownClientFlagsEndTheSession) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet(nbd::FLAG_C_FIXED_NEWSTYLE | 1u << 7));
  EXPECT_TRUE(c->wait_closed());
}

TEST(NbdHandshake, ExportNameServesAnyNameWithOrWithoutTheZeroes) {
  local_server s;
  std::mt19937_64 rng(4);
  for (const std::string& name : {std::string(), std::string("iov"), std::string("other"), std::string(300, 'n')}) {
    for (bool no_zeroes : {false, true}) {
      SCOPED_TRACE("name of " + std::to_string(name.size()) + " bytes, no_zeroes " + std::to_string(no_zeroes));
      auto c = s.connect();
      ASSERT_TRUE(c && c->greet(nbd::FLAG_C_FIXED_NEWSTYLE | (no_zeroes ? uint32_t{nbd::FLAG_C_NO_ZEROES} : 0u)));
      nbd::export_info info = c->opt_export_name(name);
      ASSERT_TRUE(info.ok) << c->last_error();
      EXPECT_EQ(info.size, s.size());
      const uint16_t want = nbd::TFLAG_HAS_FLAGS | nbd::TFLAG_SEND_FLUSH | nbd::TFLAG_SEND_FUA |
                            nbd::TFLAG_SEND_TRIM | nbd::TFLAG_SEND_WRITE_ZEROES | nbd::TFLAG_CAN_MULTI_CONN;
      EXPECT_EQ(info.flags & want, want);
      EXPECT_FALSE(info.flags & nbd::TFLAG_READ_ONLY);
      bytes d = random_data(4 * KiB, rng);  // the stream is in step after the reply
      ASSERT_EQ(c->write(8 * KiB, d).error, 0u);
      EXPECT_EQ(c->read(8 * KiB, 4 * KiB).data, d);
    }
  }
}

TEST(NbdHandshake, InfoAndGoAnswerWhatWasAsked) {
  for (auto [driver, lbs] : {std::pair<const char*, uint32_t>{"brd", 512}, {"null_blk", 4096}}) {
    SCOPED_TRACE(driver);
    local_server s(driver, lbs == 512 ? iov::blkdev_settings{} : iov::blkdev_settings{{"blocksize", "4096"}});
    auto c = s.connect();
    ASSERT_TRUE(c && c->greet());
    nbd::export_info info = c->opt_info("a name", {nbd::INFO_NAME, nbd::INFO_DESCRIPTION, nbd::INFO_BLOCK_SIZE});
    ASSERT_TRUE(info.ok) << c->last_error();
    EXPECT_EQ(info.size, s.size());
    EXPECT_TRUE(info.flags & nbd::TFLAG_HAS_FLAGS);
    EXPECT_TRUE(info.name.has_value());
    ASSERT_TRUE(info.description.has_value());
    EXPECT_FALSE(info.description->empty());
    ASSERT_TRUE(info.min_block && info.preferred_block && info.max_block);
    EXPECT_EQ(*info.min_block, lbs);
    EXPECT_GE(*info.preferred_block, *info.min_block);
    EXPECT_EQ(*info.preferred_block & (*info.preferred_block - 1), 0u) << "a power of two";
    EXPECT_GE(*info.max_block, *info.preferred_block);
    // INFO stays in option haggling; GO without requests still tells the size.
    nbd::export_info go = c->opt_go("");
    ASSERT_TRUE(go.ok) << c->last_error();
    EXPECT_EQ(go.size, s.size());
    auto r = c->read(0, lbs);
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  }
}

TEST(NbdHandshake, ListNamesTheExport) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet() && c->send_option(nbd::OPT_LIST, {}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r && r->type == nbd::REP_SERVER) << c->last_error();
  ASSERT_GE(r->data.size(), 4u);
  uint32_t len = uint32_t{r->data[0]} << 24 | r->data[1] << 16 | r->data[2] << 8 | r->data[3];
  ASSERT_LE(len, r->data.size() - 4);
  EXPECT_EQ(std::string(r->data.begin() + 4, r->data.begin() + 4 + len), "iov");
  r = c->read_option_reply();
  ASSERT_TRUE(r && r->type == nbd::REP_ACK);
  ASSERT_TRUE(c->send_option(nbd::OPT_LIST, {1, 2, 3}));
  r = c->read_option_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->type, nbd::REP_ERR_INVALID);
  EXPECT_TRUE(c->opt_go("").ok);
}

TEST(NbdHandshake, AbortIsAcknowledgedThenClosed) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet() && c->send_option(nbd::OPT_ABORT, {}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r) << c->last_error();
  EXPECT_EQ(r->type, nbd::REP_ACK);
  EXPECT_TRUE(c->wait_closed());
}

TEST(NbdHandshake, StructuredReplyTakesNoData) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet() && c->send_option(nbd::OPT_STRUCTURED_REPLY, {0}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->type, nbd::REP_ERR_INVALID);
  ASSERT_TRUE(c->opt_structured_reply());
  ASSERT_TRUE(c->opt_go("").ok);
  auto rd = c->read(0, 4 * KiB);  // read_structured checks the chunks
  EXPECT_TRUE(rd.ok && rd.error == 0) << rd.problem;
}

TEST(NbdHandshake, MetaContextsAndTheirErrors) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  using M = nbd::client::meta_result;
  M m = c->opt_meta_context(nbd::OPT_SET_META_CONTEXT, "", {"base:allocation"});
  EXPECT_EQ(m.final_type, nbd::REP_ERR_INVALID) << "SET before STRUCTURED_REPLY";
  EXPECT_TRUE(m.contexts.empty());
  ASSERT_TRUE(c->opt_structured_reply());
  auto names = [](const M& m) {
    std::vector<std::string> n;
    for (auto& [id, name] : m.contexts)
      n.push_back(name);
    return n;
  };
  const std::vector<std::string> alloc{"base:allocation"};
  m = c->opt_meta_context(nbd::OPT_LIST_META_CONTEXT, "", {});
  EXPECT_EQ(m.final_type, nbd::REP_ACK);
  EXPECT_EQ(names(m), alloc) << "LIST of everything";
  m = c->opt_meta_context(nbd::OPT_LIST_META_CONTEXT, "", {"base:"});
  EXPECT_EQ(names(m), alloc);
  m = c->opt_meta_context(nbd::OPT_LIST_META_CONTEXT, "", {"x-none:thing"});
  EXPECT_EQ(m.final_type, nbd::REP_ACK);
  EXPECT_TRUE(m.contexts.empty());
  m = c->opt_meta_context(nbd::OPT_SET_META_CONTEXT, "", {"x-none:thing"});
  EXPECT_EQ(m.final_type, nbd::REP_ACK);
  EXPECT_TRUE(m.contexts.empty());
  // Malformed: a name longer than the data, a query longer than the data,
  // more queries than given, trailing bytes.
  bytes good = nbd::client::meta_payload("", {"base:allocation"});
  bytes long_query = good;
  long_query[11] = 200;
  bytes extra_count = good;
  extra_count[7] = 2;
  bytes trailing = good;
  trailing.push_back(0);
  for (const bytes& bad : {bytes{0, 0, 0, 5}, long_query, extra_count, trailing, bytes{0, 0}}) {
    ASSERT_TRUE(c->send_option(nbd::OPT_SET_META_CONTEXT, bad));
    auto r = c->read_option_reply();
    ASSERT_TRUE(r) << c->last_error();
    EXPECT_EQ(r->type, nbd::REP_ERR_INVALID) << "payload of " << bad.size() << " bytes";
  }
  m = c->opt_meta_context(nbd::OPT_SET_META_CONTEXT, "", {"base:allocation"});
  EXPECT_EQ(m.final_type, nbd::REP_ACK);
  ASSERT_EQ(names(m), alloc);
  ASSERT_TRUE(c->opt_go("").ok);
  auto r = c->block_status(0, 64 * KiB);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem << r.message;
  EXPECT_EQ(r.context_id, m.contexts[0].first);
}

TEST(NbdHandshake, MalformedGoIsInvalidAndTheSessionGoesOn) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  bytes trailing = nbd::client::go_payload("", {});
  trailing.push_back(7);
  for (const bytes& bad : {bytes{}, bytes{0, 0, 0}, bytes{0, 0, 0, 10, 'a', 'b'}, bytes{0, 0, 0, 0, 0, 2, 0, 1},
                           trailing}) {
    ASSERT_TRUE(c->send_option(nbd::OPT_GO, bad));
    auto r = c->read_option_reply();
    ASSERT_TRUE(r) << c->last_error();
    EXPECT_EQ(r->type, nbd::REP_ERR_INVALID) << "payload of " << bad.size() << " bytes";
  }
  EXPECT_TRUE(c->opt_go("").ok);
}

TEST(NbdHandshake, UnknownOptionsAreUnsupported) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  for (uint32_t option : {0u, 4u, 11u, 99u, 0x7fffffffu}) {
    ASSERT_TRUE(c->send_option(option, {1, 2, 3}));
    auto r = c->read_option_reply();
    ASSERT_TRUE(r) << c->last_error();
    EXPECT_EQ(r->option, option);
    EXPECT_EQ(r->type, nbd::REP_ERR_UNSUP) << "option " << option;
  }
  ASSERT_TRUE(c->send_option(nbd::OPT_STARTTLS, {}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->type == nbd::REP_ERR_POLICY || r->type == nbd::REP_ERR_UNSUP) << r->type;
  EXPECT_TRUE(c->opt_go("").ok);
}

TEST(NbdHandshake, BadOptionMagicEndsTheSession) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet() && c->send_option(nbd::OPT_GO, nbd::client::go_payload("", {}), 0x1122334455667788));
  EXPECT_TRUE(c->wait_closed());
}

// A length no option needs, with no data behind it: waiting for 4 GiB would hang.
TEST(NbdHandshake, OversizedOptionLengthEndsTheSession) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  const unsigned char head[16] = {'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T', 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xf0};
  ASSERT_TRUE(c->send_bytes(head, sizeof head));
  EXPECT_TRUE(c->wait_closed());
}

// "NBD_FLAG_SEND_DF ... MUST leave this flag clear if structured replies
// have not been negotiated."
TEST(NbdHandshake, DontFragmentIsAdvertisedOnlyWithStructuredReplies) {
  local_server s;
  auto c = s.connect();
  ASSERT_TRUE(c && c->greet());
  nbd::export_info go = c->opt_go("");
  ASSERT_TRUE(go.ok);
  EXPECT_FALSE(go.flags & nbd::TFLAG_SEND_DF) << "flags " << go.flags;
  c = s.connect();
  ASSERT_TRUE(c && c->greet());
  nbd::export_info named = c->opt_export_name("");
  ASSERT_TRUE(named.ok);
  EXPECT_FALSE(named.flags & nbd::TFLAG_SEND_DF) << "flags " << named.flags;
}

// --- Transmission: simple (false) and structured (true) replies ---------------------

class NbdTransmission : public testing::TestWithParam<bool> {};

TEST_P(NbdTransmission, WritesAndReadsMatchAFlatModel) {
  local_server s;
  auto c = s.open(GetParam());
  ASSERT_TRUE(c);
  std::mt19937_64 rng(5);
  bytes model(s.size(), 0);
  const uint64_t sectors = s.size() / 512;
  for (int i = 0; i < 64; i++) {
    uint64_t off = rng() % sectors * 512, len = std::min<uint64_t>(512 * (1 + rng() % 160), s.size() - off);
    bytes d = random_data(len, rng);
    ASSERT_EQ(c->write(off, d, rng() % 3 ? 0 : nbd::CMD_FLAG_FUA).error, 0u);
    std::copy(d.begin(), d.end(), model.begin() + static_cast<ptrdiff_t>(off));
    if (i % 16 == 0) {
      ASSERT_EQ(c->flush().error, 0u);
    }
    off = rng() % sectors * 512, len = std::min<uint64_t>(512 * (1 + rng() % 160), s.size() - off);
    auto r = c->read(off, static_cast<uint32_t>(len));
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
    ASSERT_TRUE(std::equal(r.data.begin(), r.data.end(), model.begin() + static_cast<ptrdiff_t>(off)))
        << "read at " << off;
  }
  auto all = c->read(0, static_cast<uint32_t>(s.size()));
  ASSERT_TRUE(all.ok) << all.problem;
  EXPECT_TRUE(all.data == model);
  EXPECT_EQ(c->cache(0, 64 * KiB).error, 0u);
  ASSERT_TRUE(c->disc());
  EXPECT_TRUE(c->wait_closed()) << "NBD_CMD_DISC has no reply; the server closes";
}

TEST_P(NbdTransmission, OutOfBoundsAndUnalignedRequestsFailAndChangeNothing) {
  local_server s;
  auto c = s.open(GetParam());
  ASSERT_TRUE(c);
  const uint64_t size = s.size(), far = UINT64_MAX - 511;
  EXPECT_EQ(c->read(size - 512, 1024).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->read(size, 512).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->read(far, 512).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->write(size - 512, bytes(1024, 1)).error, nbd::NBD_ENOSPC);
  EXPECT_EQ(c->write(size, bytes(512, 1)).error, nbd::NBD_ENOSPC);
  EXPECT_EQ(c->write(far, bytes(512, 1)).error, nbd::NBD_ENOSPC);
  EXPECT_EQ(c->write_zeroes(size - 512, 1024).error, nbd::NBD_ENOSPC);
  EXPECT_NE(c->trim(size, 4 * KiB).error, 0u);
  EXPECT_EQ(c->read(100, 512).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->write(512, bytes(100, 1)).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->write(100, bytes(512, 1)).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->write_zeroes(100, 512).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->block_status(0, 4 * KiB).error, nbd::NBD_EINVAL) << "no metadata context";
  auto r = c->read(size - 64 * KiB, 64 * KiB);  // still in step, and nothing was written
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.data, bytes(64 * KiB, 0));
  r = c->read(0, 4 * KiB);
  EXPECT_EQ(r.data, bytes(4 * KiB, 0));
}

TEST_P(NbdTransmission, UnknownCommandsAndFlagsAreInvalid) {
  local_server s;
  auto c = s.open(GetParam());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send_request(42, 0, 1000, 0, 512));
  auto r = c->read_reply(1000, 42);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.error, nbd::NBD_EINVAL);
  bytes d(4 * KiB, 0x77);  // an unknown flag on a WRITE: the payload is still consumed
  ASSERT_TRUE(c->send_request(nbd::CMD_WRITE, 1 << 10, 1001, 0, 4 * KiB, d.data(), d.size()));
  r = c->read_reply(1001, nbd::CMD_WRITE);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->read(0, 4 * KiB, 1 << 12).error, nbd::NBD_EINVAL);
  r = c->read(0, 4 * KiB);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.data, bytes(4 * KiB, 0));
}

// The protocol leaves a zero-length READ's result open, but not the shape of
// the reply: no OFFSET_DATA chunk shorter than 9 bytes.
TEST_P(NbdTransmission, ZeroLengthReadGetsAWellFormedReply) {
  local_server s;
  auto c = s.open(GetParam());
  ASSERT_TRUE(c);
  auto r = c->read(0, 0);
  EXPECT_TRUE(r.ok) << r.problem;
  EXPECT_TRUE(c->read(0, 512).ok);
}

TEST_P(NbdTransmission, BadRequestMagicEndsTheSession) {
  local_server s;
  auto c = s.open(GetParam());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send_request(nbd::CMD_READ, 0, 1, 0, 512, nullptr, 0, 0x12345678));
  EXPECT_TRUE(c->wait_closed());
}

// Beyond the advertised maximum payload, with no payload following: waiting
// for it would hang, so the server must give up on the connection.
TEST_P(NbdTransmission, WriteBeyondTheMaximumPayloadEndsTheSession) {
  local_server s;
  auto c = s.open(GetParam());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send_request(nbd::CMD_WRITE, 0, 1, 0, 0xfffffe00));
  EXPECT_TRUE(c->wait_closed());
}

INSTANTIATE_TEST_SUITE_P(Replies, NbdTransmission, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "Structured" : "Simple"; });

TEST(NbdStructured, ErrorsCarryAMessageAndDontFragmentIsOneChunk) {
  local_server s;
  auto c = s.open(true);
  ASSERT_TRUE(c);
  auto r = c->read(s.size(), 512);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.error, nbd::NBD_EINVAL);
  EXPECT_FALSE(r.message.empty());
  EXPECT_EQ(r.chunk_types, std::vector<uint16_t>({nbd::REPLY_TYPE_ERROR}));
  std::mt19937_64 rng(6);
  bytes d = random_data(64 * KiB, rng);
  ASSERT_EQ(c->write(0, d).error, 0u);
  r = c->read(0, 64 * KiB, nbd::CMD_FLAG_DF);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.data, d);
  EXPECT_EQ(std::count_if(r.chunk_types.begin(), r.chunk_types.end(),
                          [](uint16_t t) { return t == nbd::REPLY_TYPE_OFFSET_DATA || t == nbd::REPLY_TYPE_OFFSET_HOLE; }),
            1);
}

TEST(NbdBlockStatus, RangesReqOneAndErrors) {
  local_server s;
  alloc_model model(true, s.size());
  std::mt19937_64 rng(8);
  auto c = s.open(true, true);
  ASSERT_TRUE(c);
  shape_disk(*c, model, rng);
  if (HasFatalFailure())
    return;
  auto r = c->block_status(0, static_cast<uint32_t>(s.size()), nbd::CMD_FLAG_REQ_ONE);
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem << r.message;
  ASSERT_EQ(r.extents.size(), 1u);
  EXPECT_EQ(r.extents[0], model.extents(0, s.size())[0]);
  for (int i = 0; i < 40; i++) {
    uint64_t pages = s.size() / (4 * KiB), first = rng() % pages, n = 1 + rng() % (pages - first);
    r = c->block_status(first * 4 * KiB, static_cast<uint32_t>(n * 4 * KiB));
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem << r.message;
    EXPECT_EQ(describe(merged(r.extents)), describe(model.extents(first * 4 * KiB, n * 4 * KiB)));
  }
  r = c->block_status(1 * MiB + 100, 1000);  // unaligned, inside data
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_EQ(r.extents, std::vector<nbd::extent>({{1000, 0}}));
  EXPECT_EQ(c->block_status(0, 0).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->block_status(s.size() - 4 * KiB, 8 * KiB).error, nbd::NBD_EINVAL);
  EXPECT_EQ(c->block_status(s.size(), 512).error, nbd::NBD_EINVAL);
}

// NO_HOLE keeps brd's pages (zero, not a hole); FAST_ZERO succeeds where
// zeroing is native (brd advertises it) and fails with ENOTSUP, changing
// nothing, where the server would have to write zeros (null_blk).
TEST(NbdWriteZeroes, NoHoleAndFastZero) {
  std::mt19937_64 rng(9);
  for (const char* driver : {"brd", "null_blk"}) {
    SCOPED_TRACE(driver);
    const bool brd = std::string(driver) == "brd";
    local_server s(driver);
    nbd::export_info go;
    auto c = s.open(true, true, &go);
    ASSERT_TRUE(c);
    EXPECT_EQ(bool(go.flags & nbd::TFLAG_SEND_FAST_ZERO), brd);
    bytes model = random_data(256 * KiB, rng);
    ASSERT_EQ(c->write(0, model).error, 0u);
    ASSERT_EQ(c->write_zeroes(0, 64 * KiB, nbd::CMD_FLAG_NO_HOLE).error, 0u);
    std::fill_n(model.begin(), 64 * KiB, 0);
    using extents = std::vector<nbd::extent>;
    EXPECT_EQ(c->block_status(0, 64 * KiB).extents, extents({{64 * KiB, nbd::STATE_ZERO}}));
    ASSERT_EQ(c->write_zeroes(64 * KiB, 64 * KiB).error, 0u);
    std::fill_n(model.begin() + 64 * KiB, 64 * KiB, 0);
    const uint32_t punched = brd ? nbd::STATE_HOLE | nbd::STATE_ZERO : nbd::STATE_ZERO;
    EXPECT_EQ(c->block_status(64 * KiB, 64 * KiB).extents, extents({{64 * KiB, punched}}));
    ASSERT_EQ(c->write_zeroes(128 * KiB + 512, 1024).error, 0u);  // inside a page
    std::fill_n(model.begin() + 128 * KiB + 512, 1024, 0);
    uint32_t fast = c->write_zeroes(192 * KiB, 64 * KiB, nbd::CMD_FLAG_FAST_ZERO).error;
    if (brd) {
      EXPECT_EQ(fast, 0u);
      std::fill_n(model.begin() + 192 * KiB, 64 * KiB, 0);
    } else {
      EXPECT_EQ(fast, nbd::NBD_ENOTSUP);
    }
    auto r = c->read(0, 256 * KiB);
    ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
    EXPECT_TRUE(r.data == model);
  }
}

}  // namespace
