// Tests of iov-nbd started on a socket it is handed (systemd's socket
// activation: LISTEN_PID, LISTEN_FDS, the socket at descriptor 3), with
// systemd's own tool for it, systemd-socket-activate, and real clients
// (nbdinfo), over a Unix socket and TCP; and the refusals: a count other
// than 1, a descriptor that is not a listening socket, --socket with a
// handed-over socket; variables naming another process are ignored.
//
//   build/release/tests/nbd_socket_activation_test
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "support/nbd_client.hpp"
#include "support/nbd_process.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

bool is_socket(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// systemd-socket-activate listening on `address`, which execs the program
// (with `args`) at the first connection, handing it the socket.
std::unique_ptr<server_process> activate(const std::string& address, std::vector<std::string> args) {
  std::vector<std::string> argv = {"-l", address, kProgram};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<server_process>(which("systemd-socket-activate"), argv);
}

// Runs a client until it connects: the activator binds its socket (the
// file appears) before it listens, and a connection in between is refused
// without starting the server.
run_result run_until_connected(const std::vector<std::string>& argv) {
  run_result r;
  for (int i = 0; i < 400; i++) {
    r = run(argv);
    if (r.status == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return r;
}

// Writes and reads back through our client on a connection to the server.
void expect_round_trip(std::unique_ptr<client> c, uint64_t offset) {
  ASSERT_TRUE(c && c->greet() && c->opt_go("").ok) << (c ? c->last_error() : "no connection");
  std::mt19937_64 rng(offset);
  bytes d = random_data(64 * KiB, rng);
  auto w = c->write(offset, d);
  ASSERT_TRUE(w.ok && w.error == 0) << w.problem;
  auto r = c->read(offset, d.size());
  ASSERT_TRUE(r.ok && r.error == 0) << r.problem;
  EXPECT_TRUE(r.data == d);
  c->disc();
}

// The first client (nbdinfo) starts the server on the Unix socket; later
// clients are served by the same process; SIGTERM ends it with status 0 and
// the socket file, systemd's, stays.
TEST(NbdSocketActivation, ServesRealClientsOnAHandedOverUnixSocket) {
  REQUIRE_PROGRAM();
  REQUIRE_TOOL("systemd-socket-activate");
  REQUIRE_TOOL("nbdinfo");
  temp_dir dir;
  const std::string sock = dir.path("sock");
  auto srv = activate(sock, {"--size=4m", "--description=activated"});
  auto info = run_until_connected({"nbdinfo", unix_uri(sock)});
  ASSERT_EQ(info.status, 0) << info.output << srv->output();
  EXPECT_NE(info.output.find("export-size: 4194304"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("description: activated"), std::string::npos) << info.output;
  ASSERT_TRUE(srv->wait_listening()) << srv->output();
  EXPECT_EQ(srv->address(), "unix:" + sock);
  expect_round_trip(client::connect_unix(sock), 0);
  expect_round_trip(client::connect_unix(sock), 1 * MiB);
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
  EXPECT_TRUE(is_socket(sock)) << "the server removed the socket systemd owns";
}

TEST(NbdSocketActivation, ServesRealClientsOnAHandedOverTcpSocket) {
  REQUIRE_PROGRAM();
  REQUIRE_TOOL("systemd-socket-activate");
  REQUIRE_TOOL("nbdinfo");
  const uint16_t port = free_tcp_port();
  ASSERT_NE(port, 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  auto srv = activate(address, {"--size=8m"});
  auto info = run_until_connected({"nbdinfo", "--size", "nbd://" + address});
  ASSERT_EQ(info.status, 0) << info.output << srv->output();
  EXPECT_EQ(info.output, "8388608\n");
  ASSERT_TRUE(srv->wait_listening()) << srv->output();
  EXPECT_EQ(srv->address(), address);
  expect_round_trip(client::connect_tcp(port), 4096);
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// The variables as a manager sets them for the process it execs: LISTEN_PID
// is the shell's pid, which exec keeps.
run_result activated_by_shell(const std::string& fds, const std::string& args, const std::string& redirect) {
  return run({"/bin/sh", "-c",
              "LISTEN_PID=$$ LISTEN_FDS=" + fds + " exec " + kProgram + " --size=4m " + args + " " + redirect});
}

TEST(NbdSocketActivation, RefusesWhatItCannotServe) {
  REQUIRE_PROGRAM();
  temp_dir dir;
  auto r = activated_by_shell("2", "", "");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("LISTEN_FDS=2"), std::string::npos) << r.output;
  r = activated_by_shell("0", "", "");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("LISTEN_FDS=0"), std::string::npos) << r.output;
  r = activated_by_shell("1", "", "3</dev/null");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("descriptor 3 is not a socket"), std::string::npos) << r.output;
  r = activated_by_shell("1", "--socket=" + dir.path("s"), "3</dev/null");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("cannot go with --socket"), std::string::npos) << r.output;
  EXPECT_FALSE(is_socket(dir.path("s")));
}

// LISTEN_PID naming another process: not for this server, which listens on
// its own socket, and the variables do not reach --run's command.
TEST(NbdSocketActivation, IgnoresVariablesForAnotherProcess) {
  REQUIRE_PROGRAM();
  temp_dir dir;
  auto r = run({"/usr/bin/env", "LISTEN_PID=1", "LISTEN_FDS=1", kProgram, "--size=4m",
                "--socket=" + dir.path("s"), "--run",
                "test -S \"$unixsocket\" && test -z \"${LISTEN_PID-}${LISTEN_FDS-}\""});
  EXPECT_EQ(r.status, 0) << r.output;
}

}  // namespace
}  // namespace iov_test::nbd
