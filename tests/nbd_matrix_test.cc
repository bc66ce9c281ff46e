// iov-nbd on every path: every driver configuration the CLI offers (brd;
// null_blk memory-backed, with --cache_size, with --blocksize=4096,
// --memory_backed=0, zoned), over a Unix socket, TCP, and TLS with a PSK and
// with X.509, with simple, structured and extended replies; READs and WRITEs
// of each length in kMatrixAnchors, one logical block below it and one above (a
// null_blk export over TLS once refused every READ from 16 KiB up, asking
// its device for part of a block), each checked byte for byte against what
// was written (zeros from a null_blk that stores nothing). One server per
// driver configuration and transport, shared by its reply kinds, each with
// its own region of the disk; a zoned disk is written sequentially from
// each region's first zone, a length that does not fit the rest of a zone
// starting the next, and takes no length above a zone. And the qemu-io
// reproduction of issue 27 against the program, where qemu-io is installed.
//
// The largest lengths (64 MiB, and a block less) move 256 MiB a case: in
// release one transport and reply kind a driver configuration runs them (a
// rotation that covers each transport and kind), under a sanitizer one case
// does; IOV_TEST_EXHAUSTIVE=1 runs them in every case.
//
//   build/release/tests/nbd_matrix_test --gtest_filter='*null_blk_4k*'
//   IOV_TEST_EXHAUSTIVE=1 build/release/tests/nbd_matrix_test
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "support/child_process.hpp"
#include "support/exhaustive.hpp"
#include "support/nbd_client.hpp"
#include "support/nbd_process.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

// Each reply kind's region (two zones of a zoned disk), then the largest
// lengths' (unzoned disks only).
constexpr uint64_t kMatrixRegion = 8 * MiB, kMatrixLargeAt = 3 * kMatrixRegion, kMatrixMaxLength = 64 * MiB;
constexpr uint64_t kMatrixDiskSize = kMatrixLargeAt + kMatrixMaxLength + 8 * MiB;
constexpr uint64_t kMatrixZone = 4 * MiB;
// A sector, a page, a TLS record's plaintext, the inline payload limit, a
// payload the payload memory takes in one piece, the largest request.
const uint64_t kMatrixAnchors[] = {512, 4 * KiB, 16 * KiB, 64 * KiB, 1 * MiB, kMatrixMaxLength};

const driver_config kMatrixDrivers[] = {
    {"brd", "brd", {}},
    {"null_blk", "null_blk", {}},
    {"null_blk_cache", "null_blk", {{"cache_size", "1"}}},
    {"null_blk_4k", "null_blk", {{"blocksize", "4096"}}},
    {"null_blk_no_memory", "null_blk", {{"memory_backed", "0"}}},
    {"null_blk_zoned", "null_blk", {{"zoned", "1"}, {"zone_size", "4"}}},
};

bool is_zoned(const driver_config& d) { return std::string(d.name) == "null_blk_zoned"; }
bool stores(const driver_config& d) { return std::string(d.name) != "null_blk_no_memory"; }

enum class transport { unix_socket, tcp, tls_psk, tls_x509 };
using headers = local_server::headers;
using matrix_case = std::tuple<driver_config, transport, headers>;

// A CA and the server's certificate in dir, as --tls-certificates reads
// them, made by certtool; false when one step fails. ECDSA keys: certtool
// makes one in milliseconds, an RSA key (its default) in about a second.
bool make_x509(const temp_dir& dir) {
  spit(dir.path("ca.info"), "cn = iov test CA\nca\ncert_signing_key\nexpiration_days = 2\n");
  spit(dir.path("server.info"),
       "cn = localhost\ndns_name = localhost\ntls_www_server\nencryption_key\nsigning_key\nexpiration_days = 2\n");
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"--generate-privkey", "--key-type=ecdsa", "--outfile", dir.path("ca-key.pem")},
           {"--generate-self-signed", "--load-privkey", dir.path("ca-key.pem"), "--template", dir.path("ca.info"),
            "--outfile", dir.path("ca-cert.pem")},
           {"--generate-privkey", "--key-type=ecdsa", "--outfile", dir.path("server-key.pem")},
           {"--generate-certificate", "--load-privkey", dir.path("server-key.pem"), "--load-ca-certificate",
            dir.path("ca-cert.pem"), "--load-ca-privkey", dir.path("ca-key.pem"), "--template",
            dir.path("server.info"), "--outfile", dir.path("server-cert.pem")}}) {
    args.insert(args.begin(), "certtool");
    if (run(args).status != 0)
      return false;
  }
  return true;
}

// One server per driver configuration and transport (TLS: a PSK made by
// psktool), shared by every case of that pair.
class tls_servers {
 public:
  local_server* get(const driver_config& d, transport t) {
    const std::string key = std::string(d.name) + "/" + std::to_string(static_cast<int>(t));
    for (auto& [name, s] : servers_)
      if (name == key)
        return s.get();
    if (t == transport::unix_socket || t == transport::tcp) {
      server_transport plain;
      plain.tcp = t == transport::tcp;
      servers_.emplace_back(key, std::make_unique<local_server>(d, kMatrixDiskSize, iov::nbd::server_limits{}, plain));
      return servers_.back().second.get();
    }
    if (t == transport::tls_x509 ? !x509_ready() : !psk_ready())
      return nullptr;
    auto creds = t == transport::tls_x509 ? iov::nbd::tls_credentials::load_x509(dir_.dir())
                                          : iov::nbd::tls_credentials::load_psk(dir_.path("keys.psk"));
    EXPECT_TRUE(creds.ok()) << creds.status();
    if (!creds.ok())
      return nullptr;
    server_transport tls;
    tls.mode = iov::nbd::tls_mode::require;
    tls.credentials = std::move(*creds);
    if (t == transport::tls_x509)
      tls.client.ca_file = dir_.path("ca-cert.pem");
    else
      tls.client.psk_file = dir_.path("keys.psk");
    servers_.emplace_back(key, std::make_unique<local_server>(d, kMatrixDiskSize, iov::nbd::server_limits{}, tls));
    return servers_.back().second.get();
  }

 private:
  bool psk_ready() {
    if (!psk_)
      psk_ = !which("psktool").empty() && run({"psktool", "-u", "alice", "-p", dir_.path("keys.psk")}).status == 0;
    return psk_;
  }
  bool x509_ready() {
    if (!x509_)
      x509_ = !which("certtool").empty() && make_x509(dir_);
    return x509_;
  }
  bool psk_ = false, x509_ = false;
  temp_dir dir_;
  std::vector<std::pair<std::string, std::unique_ptr<local_server>>> servers_;
};

std::string case_name(const testing::TestParamInfo<matrix_case>& i) {
  const headers h = std::get<2>(i.param);
  const transport t = std::get<1>(i.param);
  return std::string(std::get<0>(i.param).name) +
         (t == transport::tls_psk ? "_tls_psk_" : t == transport::tls_x509 ? "_tls_x509_" : t == transport::tcp ? "_tcp_" : "_unix_") +
         (h == headers::simple ? "simple" : h == headers::structured ? "structured" : "extended");
}

// The lengths of one case: each anchor and a logical block either side,
// those the device takes (whole blocks, no more than the largest request);
// the largest ones last, only when `largest`.
std::vector<uint64_t> lengths(uint64_t lbs, bool largest) {
  std::vector<uint64_t> out;
  for (uint64_t a : kMatrixAnchors) {
    if (a == kMatrixMaxLength && !largest)
      continue;
    for (uint64_t len : {a - lbs, a, a + lbs})
      if (len && len % lbs == 0 && len <= kMatrixMaxLength && (out.empty() || len > out.back()))
        out.push_back(len);
  }
  return out;
}

// Whether this case moves the largest lengths: in release one case a driver
// configuration, its transport and reply kind rotating with the
// configuration; under a sanitizer the first case only; all of them when
// exhaustive. Never on a zoned disk (a request does not cross a zone).
bool runs_largest(const driver_config& d, transport t, headers h) {
  if (is_zoned(d))
    return false;
  if (exhaustive())
    return true;
  const size_t i = static_cast<size_t>(std::find_if(std::begin(kMatrixDrivers), std::end(kMatrixDrivers),
                                                     [&](const driver_config& k) {
                                                       return std::string(k.name) == d.name;
                                                     }) -
                                        std::begin(kMatrixDrivers));
  if (kSanitized)
    return i == 0 && t == transport::unix_socket && h == headers::simple;
  return static_cast<size_t>(t) == i % 4 && static_cast<size_t>(h) == i % 3;
}

// The servers are shared by the suite's cases and shut down after its last
// one, so that the directories of their sockets and credentials go with them.
class NbdMatrix : public testing::TestWithParam<matrix_case> {
 public:
  static void TearDownTestSuite() { servers_.reset(); }

 protected:
  static tls_servers& servers() {
    if (!servers_)
      servers_ = std::make_unique<tls_servers>();
    return *servers_;
  }

 private:
  static inline std::unique_ptr<tls_servers> servers_;
};

// Each length WRITTEN at an offset of its own, then READ back whole, and
// each READ's bytes compared with the WRITE's (zeros where nothing is
// stored). The areas written are trimmed after, so that the shared
// servers' disks give their memory back.
TEST_P(NbdMatrix, ReadsBackWhatWasWritten) {
  const auto& [drv, t, h] = GetParam();
  if (t == transport::tls_psk && which("psktool").empty())
    GTEST_SKIP() << "psktool is not installed";
  if (t == transport::tls_x509 && which("certtool").empty())
    GTEST_SKIP() << "certtool is not installed";
  local_server* s = servers().get(drv, t);
  ASSERT_TRUE(s);
  auto c = s->open(h);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->tls(), t == transport::tls_psk || t == transport::tls_x509);
  std::mt19937_64 rng(static_cast<uint64_t>(h) * 131 + std::hash<std::string>{}(drv.name));
  const uint64_t lbs = s->device().limits().logical_block_size;
  uint64_t offset = static_cast<uint64_t>(h) * kMatrixRegion;  // each reply kind its own region of the disk
  for (uint64_t len : lengths(lbs, runs_largest(drv, t, h))) {
    if (is_zoned(drv) && len > kMatrixZone)
      continue;
    if (len >= kMatrixMaxLength - lbs)
      offset = kMatrixLargeAt;  // the largest two, one after the other, over the same area
    else if (is_zoned(drv) && offset / kMatrixZone != (offset + len - 1) / kMatrixZone)
      offset = (offset / kMatrixZone + 1) * kMatrixZone;  // from the next zone's write pointer
    SCOPED_TRACE(testing::Message() << len << " bytes at " << offset);
    bytes d = random_data(len, rng);
    auto w = c->write(offset, d);
    ASSERT_TRUE(w.ok && w.error == 0) << "WRITE: " << w.problem << " " << w.message << " " << c->last_error();
    auto r = c->read(offset, len);
    ASSERT_TRUE(r.ok) << "READ: " << r.problem << " " << c->last_error();
    ASSERT_EQ(r.error, 0u) << "READ: " << r.message;
    ASSERT_TRUE(r.data == (stores(drv) ? d : bytes(len, 0))) << "READ returned other bytes";
    // Zoned: the next write at this one's end, the zone's write pointer.
    offset += is_zoned(drv) ? len : (len + 4 * KiB - 1) / (4 * KiB) * (4 * KiB);
  }
  // Advisory, and a no-op on a zoned disk or one that stores nothing.
  EXPECT_EQ(c->trim(static_cast<uint64_t>(h) * kMatrixRegion, kMatrixRegion).error, 0u);
  if (offset > kMatrixLargeAt) {
    EXPECT_EQ(c->trim(kMatrixLargeAt, kMatrixDiskSize - kMatrixLargeAt).error, 0u);
  }
  EXPECT_TRUE(c->disc());
}

INSTANTIATE_TEST_SUITE_P(Paths, NbdMatrix,
                         testing::Combine(testing::ValuesIn(kMatrixDrivers),
                                          testing::Values(transport::unix_socket, transport::tcp, transport::tls_psk,
                                                          transport::tls_x509),
                                          testing::Values(headers::simple, headers::structured, headers::extended)),
                         case_name);

// Issue 27's reproduction: qemu-io writes 64 KiB to a null_blk export over
// TLS and reads it back, checking the pattern.
TEST(NbdMatrixQemu, QemuIoReadsBackANullBlkExportOverTls) {
  REQUIRE_PROGRAM();
  REQUIRE_TOOL("qemu-io");
  REQUIRE_TOOL("psktool");
  temp_dir dir;
  ASSERT_EQ(run({"psktool", "-u", "alice", "-p", dir.path("keys.psk")}).status, 0);
  auto srv = start(dir, {"--driver=null_blk", "--size=64m", "--tls=require", "--tls-psk=" + dir.path("keys.psk")});
  auto r = run({"qemu-io", "--object", "tls-creds-psk,id=tls0,endpoint=client,dir=" + dir.dir() + ",username=alice",
                "--image-opts", "driver=nbd,path=" + dir.path("sock") + ",tls-creds=tls0", "-c",
                "write -P 0xab 0 64k", "-c", "read -P 0xab 0 64k"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("read 65536/65536 bytes"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Pattern verification failed"), std::string::npos) << r.output;
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

}  // namespace
}  // namespace iov_test::nbd
