// Tests of the iov-nbd program (src/tools/nbd) with real clients: fio's nbd
// engine with crc32c verify on every memory-backed driver configuration,
// qemu-img convert/compare, nbdinfo --map, nbdcopy both ways; its signals,
// --read-only, TCP and bad options. Expected contents come from a flat model
// read back by the tests' own client; expected extents from a per-page model
// of what each driver stores. A missing client program skips its test. The
// protocol case by case is in nbd_protocol_test.cc; many connections at once
// and hostile clients in nbd_concurrent_test.cc.
//
//   ctest --preset asan -R '^nbd_test$'
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

#include "support/nbd_client.hpp"
#include "support/nbd_process.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

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
                     "--do_verify=1", "--verify_fatal=1",
                     "--verify_state_save=0"});  // no state file left in the working directory
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

// iov-nbd on each driver, 16 MiB, and an image of that size to copy in.
class NbdPrograms : public testing::TestWithParam<const char*> {
 protected:
  // Writes the image, starts the program; the export's URI.
  std::string serve_image() {
    image_ = make_image(dir_.path("in.img"), 16 * MiB);
    srv_ = start(dir_, {GetParam(), "--size=16m"});
    return nbd::unix_uri(dir_.path("sock"));
  }
  nbd::temp_dir dir_;
  bytes image_;
  std::unique_ptr<nbd::server_process> srv_;
};

TEST_P(NbdPrograms, QemuImgConvertThenCompare) {
  REQUIRE_PROGRAM();
  REQUIRE_TOOL("qemu-img");
  const std::string uri = serve_image();
  auto r = nbd::run({"qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", dir_.path("in.img"), uri});
  ASSERT_EQ(r.status, 0) << r.output;
  r = nbd::run({"qemu-img", "compare", "-f", "raw", "-F", "raw", dir_.path("in.img"), uri});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(read_export(dir_.path("sock"), 16 * MiB) == image_);
}

TEST_P(NbdPrograms, NbdcopyBothWays) {
  REQUIRE_PROGRAM();
  REQUIRE_TOOL("nbdcopy");
  const std::string uri = serve_image();
  auto r = nbd::run({"nbdcopy", dir_.path("in.img"), uri});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(read_export(dir_.path("sock"), 16 * MiB) == image_);
  r = nbd::run({"nbdcopy", uri, dir_.path("out.img")});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(read_file(dir_.path("out.img")) == image_) << "nbd -> file differs";
}

INSTANTIATE_TEST_SUITE_P(Drivers, NbdPrograms, testing::Values("--driver=brd", "--driver=null_blk"),
                         [](const testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param).substr(9);
                         });

class NbdMap : public testing::TestWithParam<nbd::driver_config> {};

// nbdinfo --map and this client's BLOCK_STATUS agree with the model.
TEST_P(NbdMap, ExtentsAreTheDriversHolesZerosAndData) {
  local_server s(GetParam());
  alloc_model model(std::string(GetParam().driver) == "brd", s.size());
  std::mt19937_64 rng(1);
  auto c = open_shaped(s, model, rng);
  ASSERT_TRUE(c);
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
    testing::Values(nbd::driver_config{"brd", "brd", {}},
                    nbd::driver_config{"null_blk_512", "null_blk", {{"blocksize", "512"}}},
                    nbd::driver_config{"null_blk_4096", "null_blk", {{"blocksize", "4096"}}},
                    nbd::driver_config{"null_blk_4096_cache", "null_blk",
                                       {{"blocksize", "4096"}, {"cache_size", "1"}}}),
    nbd::driver_config_name);

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

INSTANTIATE_TEST_SUITE_P(Signals, NbdSignals, testing::Values(SIGTERM, SIGINT, SIGHUP, SIGQUIT),
                         [](const testing::TestParamInfo<int>& i) { return std::string(sigabbrev_np(i.param)); });

// SIGUSR1 and SIGUSR2 would end the process, leaving its socket behind:
// they are ignored, and the server goes on serving.
TEST(NbdSignals, UserSignalsAreIgnored) {
  REQUIRE_PROGRAM();
  nbd::temp_dir dir;
  auto srv = start(dir, {"--driver=brd", "--size=4m"});
  for (int sig : {SIGUSR1, SIGUSR2})
    ASSERT_EQ(kill(srv->pid(), sig), 0);
  auto c = nbd::client::connect_unix(dir.path("sock"));
  ASSERT_TRUE(c && c->greet() && c->opt_go("").ok) << (c ? c->last_error() : "connect") << srv->output();
  ASSERT_EQ(c->write(0, bytes(4 * KiB, 0x5b)).error, 0u);
  EXPECT_EQ(c->read(0, 4 * KiB).data, bytes(4 * KiB, 0x5b));
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0);
  struct stat st;
  EXPECT_NE(stat(dir.path("sock").c_str(), &st), 0) << "the socket file was left behind";
}

class NbdReadOnly : public testing::TestWithParam<bool> {};

// --read-only --socket=P, or the short forms -r -U P.
TEST_P(NbdReadOnly, RefusesEveryWriteWithEperm) {
  REQUIRE_PROGRAM();
  nbd::temp_dir dir;
  const bool short_forms = GetParam();
  auto srv = short_forms ? start(dir, {"--driver=brd", "--size=4m", "-r", "-U", dir.path("sock")}, {}, false)
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

class NbdTcp : public testing::TestWithParam<bool> {};

TEST_P(NbdTcp, ServesOnLoopback) {
  REQUIRE_PROGRAM();
  std::unique_ptr<nbd::server_process> srv;
  uint16_t port = 0;
  for (int attempt = 0; attempt < 5 && !srv; attempt++) {  // another may take the port between probe and bind
    port = free_tcp_port();
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
           {"--bogus", "unknown option --bogus"}, {"--port=70000", "port"}, {"--size=4q", "--size"},
           {"--max-connections=0", "--max-connections"}, {"--payload-memory=4k", "--payload-memory"},
           {"--payload-memory=lots", "--payload-memory"}, {"--threads=0", "--threads"},
           {"--handshake-timeout=soon", "--handshake-timeout"}, {"--request-timeout=-1", "--request-timeout"}}) {
    auto r = nbd::run({kProgram, arg});
    EXPECT_EQ(r.status, 2) << arg << ": " << r.output;
    EXPECT_NE(r.output.find(text), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace iov_test::nbd
