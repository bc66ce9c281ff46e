// Tests of how the iov-nbd program is served and scripted: --run 'CMD'
// (captive, as nbdkit's: $uri, $nbd, $unixsocket, $port, $exportname set,
// CMD's status the server's), --pidfile, --bind on a non-loopback address
// (with its warning) and on IPv6, --export-name and --description as
// NBD_OPT_LIST, INFO and GO report them; with real clients (nbdinfo,
// qemu-img, nbdcopy, fio) where they are installed, and the tests' client.
//
//   build/release/tests/nbd_serving_test --gtest_filter='NbdCaptive.*'
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/nbd_client.hpp"
#include "support/nbd_process.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// An address of this host's on an interface that is up and not loopback
// ("" when there is none).
std::string non_loopback_address(int family) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    return "";
  std::string found;
  for (ifaddrs* i = list; i && found.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != family || (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
      continue;
    char text[INET6_ADDRSTRLEN];
    const void* a = family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr)
                                      : &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr;
    if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(static_cast<const in6_addr*>(a)))
      continue;  // needs a scope id
    if (inet_ntop(family, a, text, sizeof text))
      found = text;
  }
  freeifaddrs(list);
  return found;
}

// --- --run -------------------------------------------------------------------------

// CMD sees the variables, reaches the export through $uri with real
// clients, and its status is the server's; the socket is gone after.
TEST(NbdCaptive, RunsTheCommandWithTheExportsUriAndExitsWithItsStatus) {
  REQUIRE_PROGRAM();
  temp_dir dir;
  const std::string sock = dir.path("sock"), out = dir.path("out");
  auto r = run({kProgram, "--size=4m", "--socket=" + sock, "--export-name=disk one", "--run",
                "printf '%s\\n' \"$uri\" \"$nbd\" \"$unixsocket\" \"[$port]\" \"$exportname\" > " + out +
                    "; test -S \"$unixsocket\" || exit 3; exit 7"});
  EXPECT_EQ(r.status, 7) << r.output;
  EXPECT_EQ(slurp(out), "nbd+unix:///disk%20one?socket=" + sock + "\nnbd+unix:///disk%20one?socket=" + sock +
                            "\n" + sock + "\n[]\ndisk one\n");
  EXPECT_FALSE(exists(sock)) << "the socket outlived the server";
  r = run({kProgram, "--size=4m", "--socket=" + sock, "--run=kill -9 $$"});
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.output;
  r = run({kProgram, "--size=4m", "--port=0", "--run", "printf '%s %s' \"$uri\" \"$port\" > " + out});
  EXPECT_EQ(r.status, 0) << r.output;
  const std::string text = slurp(out);
  const std::string port = text.substr(text.rfind(' ') + 1);
  EXPECT_EQ(text, "nbd://127.0.0.1:" + port + "/ " + port);
}

TEST(NbdCaptive, RealClientsThroughUri) {
  REQUIRE_PROGRAM();
  REQUIRE_TOOL("nbdinfo");
  REQUIRE_TOOL("qemu-img");
  REQUIRE_TOOL("nbdcopy");
  REQUIRE_TOOL("fio");
  temp_dir dir;
  std::mt19937_64 rng(31);
  bytes image = random_data(8 * MiB, rng);
  std::ofstream(dir.path("in.img"), std::ios::binary)
      .write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
  const std::string script =
      "set -e; nbdinfo \"$uri\" > " + dir.path("info") + "; qemu-img info \"$uri\" > " + dir.path("qinfo") +
      "; nbdcopy " + dir.path("in.img") + " \"$uri\"; nbdcopy \"$uri\" " + dir.path("out.img") +
      "; fio --name=v --ioengine=nbd --uri=\"$uri\" --rw=randwrite --bs=4k --iodepth=16 --size=8m"
      " --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 > " + dir.path("fio");
  auto r = run({kProgram, "--size=8m", "--socket=" + dir.path("sock"), "--description=scratch", "--run", script});
  ASSERT_EQ(r.status, 0) << r.output << slurp(dir.path("fio"));
  EXPECT_NE(slurp(dir.path("info")).find("description: scratch"), std::string::npos) << slurp(dir.path("info"));
  EXPECT_NE(slurp(dir.path("qinfo")).find("8 MiB"), std::string::npos) << slurp(dir.path("qinfo"));
  EXPECT_TRUE(slurp(dir.path("out.img")) == std::string(image.begin(), image.end()));
}

// A signal to the server ends CMD too; the server still exits with CMD's status.
TEST(NbdCaptive, ASignalToTheServerEndsTheCommand) {
  REQUIRE_PROGRAM();
  temp_dir dir;
  server_process srv(kProgram, {"--size=4m", "--socket=" + dir.path("sock"), "--run", "exec sleep 60"});
  ASSERT_TRUE(srv.wait_listening()) << srv.output();
  const int st = srv.signal_and_wait(SIGTERM);
  ASSERT_TRUE(WIFEXITED(st)) << st;
  EXPECT_EQ(WEXITSTATUS(st), 128 + SIGTERM);
}

// --- --pidfile ---------------------------------------------------------------------

TEST(NbdPidfile, HoldsThePidWhileListeningAndGoesAtExit) {
  REQUIRE_PROGRAM();
  temp_dir dir;
  const std::string pidfile = dir.path("pid");
  auto srv = start(dir, {"--size=4m", "--pidfile=" + pidfile});
  EXPECT_EQ(slurp(pidfile), std::to_string(srv->pid()) + "\n");
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0);
  EXPECT_FALSE(exists(pidfile));
  auto r = run({kProgram, "--size=4m", "--socket=" + dir.path("s2"), "--pidfile=" + dir.path("no/such/dir/pid")});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("--pidfile"), std::string::npos) << r.output;
}

// --- --bind ------------------------------------------------------------------------

// On an address other hosts can reach: served there, with a warning; on
// loopback (IPv4 or IPv6): no warning.
TEST(NbdBind, NonLoopbackServesAndWarns) {
  REQUIRE_PROGRAM();
  const std::string addr = non_loopback_address(AF_INET);
  if (addr.empty())
    GTEST_SKIP() << "no non-loopback IPv4 address";
  server_process srv(kProgram, {"--size=4m", "--bind=" + addr, "--port=0"});
  ASSERT_TRUE(srv.wait_listening()) << srv.output();
  ASSERT_EQ(srv.address().rfind(addr + ":", 0), 0u) << srv.address();
  const std::string uri = "nbd://" + srv.address() + "/";
  if (!which("nbdinfo").empty()) {
    auto r = run({"nbdinfo", uri});
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("4194304"), std::string::npos) << r.output;
  }
  if (!which("qemu-img").empty()) {
    temp_dir dir;
    std::mt19937_64 rng(32);
    bytes image = random_data(4 * MiB, rng);
    std::ofstream(dir.path("in.img"), std::ios::binary)
        .write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
    auto r = run({"qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", dir.path("in.img"), uri});
    ASSERT_EQ(r.status, 0) << r.output;
    r = run({"qemu-img", "compare", "-f", "raw", "-F", "raw", dir.path("in.img"), uri});
    EXPECT_EQ(r.status, 0) << r.output;
  }
  EXPECT_EQ(srv.signal_and_wait(SIGTERM), 0);
  EXPECT_NE(srv.output().find("warning: the export is reachable from the network"), std::string::npos)
      << srv.output();

  for (const char* loopback : {"127.0.0.1", "::1"}) {
    server_process quiet(kProgram, {"--size=4m", std::string("--bind=") + loopback, "--port=0"});
    if (!quiet.wait_listening() && std::string(loopback) == "::1")
      continue;  // no IPv6 here
    EXPECT_EQ(quiet.signal_and_wait(SIGTERM), 0);
    EXPECT_EQ(quiet.output().find("warning"), std::string::npos) << quiet.output();
  }
}

TEST(NbdBind, IPv6AddressesAreBracketed) {
  REQUIRE_PROGRAM();
  server_process srv(kProgram, {"--size=4m", "--bind=::1", "--port=0"});
  if (!srv.wait_listening())
    GTEST_SKIP() << "no IPv6 loopback: " << srv.output();
  ASSERT_EQ(srv.address().rfind("[::1]:", 0), 0u) << srv.address();
  if (!which("nbdinfo").empty()) {
    auto r = run({"nbdinfo", "nbd://" + srv.address() + "/"});
    EXPECT_EQ(r.status, 0) << r.output;
  }
  EXPECT_EQ(srv.signal_and_wait(SIGTERM), 0);
}

// --- --export-name, --description ---------------------------------------------------

TEST(NbdExportName, ListInfoAndGoReportNameAndDescription) {
  REQUIRE_PROGRAM();
  temp_dir dir;
  auto srv = start(dir, {"--size=4m", "--export-name=vol0", "--description=scratch volume"});
  auto c = client::connect_unix(dir.path("sock"));
  ASSERT_TRUE(c && c->greet() && c->send_option(OPT_LIST, {}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r && r->type == REP_SERVER) << c->last_error();
  ASSERT_GE(r->data.size(), 4u);
  EXPECT_EQ(std::string(r->data.begin() + 4, r->data.end()), "vol0scratch volume") << "name, then details";
  EXPECT_EQ(r->data[3], 4u);
  ASSERT_TRUE((r = c->read_option_reply()) && r->type == REP_ACK);
  export_info info = c->opt_info("", {INFO_NAME, INFO_DESCRIPTION});
  ASSERT_TRUE(info.ok);
  EXPECT_EQ(info.name, "vol0") << "the canonical name, whatever the client asked";
  EXPECT_EQ(info.description, "scratch volume");
  export_info go = c->opt_go("anything", {INFO_DESCRIPTION});
  ASSERT_TRUE(go.ok);
  EXPECT_EQ(go.description, "scratch volume");
  c->disc();
  if (!which("nbdinfo").empty()) {
    auto out = run({"nbdinfo", "--list", unix_uri(dir.path("sock"))});
    EXPECT_EQ(out.status, 0) << out.output;
    EXPECT_NE(out.output.find("export=\"vol0\""), std::string::npos) << out.output;
    EXPECT_NE(out.output.find("description: scratch volume"), std::string::npos) << out.output;
  }
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0);
}

TEST(NbdServingOptions, BadValuesAreUsageErrors) {
  REQUIRE_PROGRAM();
  for (auto [args, text] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--bind="}, "--bind"},
           {{"--bind=127.0.0.1", "--socket=/tmp/x"}, "--bind"},
           {{"--pidfile="}, "--pidfile"},
           {{"--run="}, "--run"},
           {{"--run"}, "--run"},
           {{"--export-name=" + std::string(4097, 'n')}, "--export-name"},
           {{"--description=" + std::string(4097, 'd')}, "--description"}}) {
    args.insert(args.begin(), kProgram);
    auto r = run(args);
    EXPECT_EQ(r.status, 2) << args[1] << ": " << r.output;
    EXPECT_NE(r.output.find(text), std::string::npos) << r.output;
  }
  auto r = run({kProgram, "--bind=not-an-address", "--port=0"});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("not a numeric IPv4 or IPv6 address"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace iov_test::nbd
