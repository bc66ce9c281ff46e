// Tests of iov-nbd's --tls-verify-peer (nbdkit's name): with X.509 the
// server asks for the client's certificate and checks it against
// ca-cert.pem (and ca-crl.pem when there is one). A client with a
// certificate the CA signed is served; one with no certificate, a
// self-signed one, one from another CA or a revoked one is refused during
// the TLS handshake, and the server's log says why. The certificates are
// made by certtool (gnutls-bin) when the test runs; the client is the
// tests' own (support/nbd_client.hpp) over GnuTLS.
//
//   build/release/tests/nbd_tls_verify_test
#include <signal.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "support/nbd_client.hpp"
#include "support/nbd_process.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

// A CA, the server's certificate and key (as --tls-certificates reads
// them), and clients: "alice" signed by the CA, "mallory" self-signed,
// "eve" signed by another CA, "bob" signed by the CA and revoked.
class NbdTlsVerifyPeer : public testing::Test {
 protected:
  void SetUp() override {
    if (!kProgram)
      GTEST_SKIP() << "iov-nbd is not built in this tree";
    if (which("certtool").empty())
      GTEST_SKIP() << "certtool is not installed";
    spit(dir_.path("ca.info"), "cn = iov test CA\nca\ncert_signing_key\ncrl_signing_key\nexpiration_days = 2\n");
    spit(dir_.path("server.info"),
         "organization = iov\ncn = localhost\ndns_name = localhost\ntls_www_server\n"
         "encryption_key\nsigning_key\nexpiration_days = 2\n");
    spit(dir_.path("client.info"), "cn = client\ntls_www_client\nencryption_key\nsigning_key\nexpiration_days = 2\n");
    spit(dir_.path("crl.info"), "crl_next_update = 2\ncrl_number = 1\n");
    key("ca-key.pem");
    tool({"--generate-self-signed", "--load-privkey", dir_.path("ca-key.pem"), "--template", dir_.path("ca.info"),
          "--outfile", dir_.path("ca-cert.pem")});
    key("server-key.pem");
    sign("server", "server.info", "ca");
    key("other-ca-key.pem");
    tool({"--generate-self-signed", "--load-privkey", dir_.path("other-ca-key.pem"), "--template",
          dir_.path("ca.info"), "--outfile", dir_.path("other-ca-cert.pem")});
    for (const char* who : {"alice", "mallory", "eve", "bob"})
      key(std::string(who) + "-key.pem");
    sign("alice", "client.info", "ca");
    sign("eve", "client.info", "other-ca");
    sign("bob", "client.info", "ca");
    tool({"--generate-self-signed", "--load-privkey", dir_.path("mallory-key.pem"), "--template",
          dir_.path("client.info"), "--outfile", dir_.path("mallory-cert.pem")});
    ASSERT_FALSE(HasFailure());
  }
  void tool(std::vector<std::string> args) {
    args.insert(args.begin(), "certtool");
    auto r = run(args);
    EXPECT_EQ(r.status, 0) << r.output;
  }
  // ECDSA: made in milliseconds, where certtool's default RSA key takes about
  // a second, and each case makes seven.
  void key(const std::string& file) { tool({"--generate-privkey", "--key-type=ecdsa", "--outfile", dir_.path(file)}); }
  void sign(const std::string& who, const std::string& info, const std::string& ca) {
    tool({"--generate-certificate", "--load-privkey", dir_.path(who + "-key.pem"), "--load-ca-certificate",
          dir_.path(ca + "-cert.pem"), "--load-ca-privkey", dir_.path(ca + "-key.pem"), "--template",
          dir_.path(info), "--outfile", dir_.path(who + "-cert.pem")});
  }
  // bob's certificate on ca-crl.pem.
  void revoke_bob() {
    tool({"--generate-crl", "--load-ca-privkey", dir_.path("ca-key.pem"), "--load-ca-certificate",
          dir_.path("ca-cert.pem"), "--load-certificate", dir_.path("bob-cert.pem"), "--template",
          dir_.path("crl.info"), "--outfile", dir_.path("ca-crl.pem")});
  }
  tls_settings as(const std::string& who) const {
    tls_settings t;
    t.ca_file = dir_.path("ca-cert.pem");
    if (!who.empty()) {
      t.cert_file = dir_.path(who + "-cert.pem");
      t.key_file = dir_.path(who + "-key.pem");
    }
    return t;
  }
  std::unique_ptr<server_process> serve(std::vector<std::string> more = {}) {
    more.insert(more.end(), {"--size=4m", "--tls=require", "--tls-certificates=" + dir_.dir()});
    return start(dir_, more);
  }
  // A client presenting who's certificate ("": none) after STARTTLS and
  // GO; null, with the reason in *why, when the server refuses it.
  std::unique_ptr<client> connect_as(const std::string& who, std::string* why) {
    auto c = client::connect_unix(dir_.path("sock"));
    if (!c || !c->greet()) {
      *why = "no greeting";
      return nullptr;
    }
    c->set_timeout_ms(10000);
    if (!c->starttls(as(who)) || !c->opt_structured_reply() || !c->opt_go("").ok) {
      *why = c->last_error();
      return nullptr;
    }
    return c;
  }
  temp_dir dir_;
};

TEST_F(NbdTlsVerifyPeer, ACertificateTheCaSignedIsServed) {
  auto srv = serve({"--tls-verify-peer"});
  std::string why;
  auto c = connect_as("alice", &why);
  ASSERT_TRUE(c) << why << "\n" << srv->output();
  std::mt19937_64 rng(5);
  expect_served(*c, 0, rng);
  c->disc();
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// Each refused during the handshake, with the reason in the log; a signed
// client is still served after them.
TEST_F(NbdTlsVerifyPeer, OthersAreRefusedWithAReason) {
  auto srv = serve({"--tls-verify-peer"});
  struct refused {
    const char* who;
    const char* logged;  // in the server's log line
  };
  // A GnuTLS client offers only a certificate of a CA the server names in
  // its request, so mallory and eve may send none; either way the log says
  // what was wrong with the client's certificate.
  // Each refusal is one more such line.
  auto refusals = [&](const char* logged) {
    const std::string log = srv->output();
    size_t n = 0;
    for (size_t at = 0; (at = log.find("a TLS handshake failed (", at)) != std::string::npos; at++) {
      const size_t eol = log.find('\n', at);
      if (log.substr(at, eol - at).find(logged) != std::string::npos)
        n++;
    }
    return n;
  };
  for (const refused& r : {refused{"", "sent no certificate"}, refused{"mallory", "certificate"},
                           refused{"eve", "certificate"}}) {
    // The server logs one line of a kind a second (log.hpp): each refusal its own second.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    const size_t before = refusals(r.logged);
    std::string why;
    EXPECT_FALSE(connect_as(r.who, &why)) << (*r.who ? r.who : "no certificate") << " was let in";
    EXPECT_TRUE(eventually([&] { return refusals(r.logged) == before + 1; }, 5000)) << r.who << ": " << srv->output();
  }
  const std::string log = srv->output();
  EXPECT_NE(log.find("a TLS handshake failed"), std::string::npos) << log;
  std::string why;
  EXPECT_TRUE(connect_as("alice", &why)) << why;
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// A certificate on ca-crl.pem is refused; the others the CA signed are not.
TEST_F(NbdTlsVerifyPeer, ARevokedCertificateIsRefused) {
  revoke_bob();
  ASSERT_FALSE(HasFailure());
  auto srv = serve({"--tls-verify-peer"});
  std::string why;
  EXPECT_FALSE(connect_as("bob", &why));
  EXPECT_TRUE(eventually([&] { return srv->output().find("revoked") != std::string::npos; }, 5000))
      << srv->output();
  EXPECT_TRUE(connect_as("alice", &why)) << why;
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// Without --tls-verify-peer no certificate is asked for: any client is let
// in, which is what the open-access warning then says.
TEST_F(NbdTlsVerifyPeer, WithoutItAnyClientIsLetIn) {
  auto srv = serve();
  std::string why;
  EXPECT_TRUE(connect_as("", &why)) << why;
  EXPECT_TRUE(connect_as("mallory", &why)) << why;
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// On an address the network reaches, the warning is printed unless clients
// are authenticated: X.509 alone warns, with --tls-verify-peer it does not.
TEST_F(NbdTlsVerifyPeer, TheOpenAccessWarningNamesIt) {
  const std::vector<std::string> tcp = {"--bind=0.0.0.0", "--port=0", "--size=4m", "--tls=require",
                                        "--tls-certificates=" + dir_.dir()};
  auto open = start(dir_, tcp, {}, /*add_socket=*/false);
  EXPECT_EQ(open->signal_and_wait(SIGTERM), 0);
  EXPECT_NE(open->output().find("clients are not authenticated"), std::string::npos) << open->output();
  std::vector<std::string> verified = tcp;
  verified.push_back("--tls-verify-peer");
  auto closed = start(dir_, verified, {}, /*add_socket=*/false);
  EXPECT_EQ(closed->signal_and_wait(SIGTERM), 0);
  EXPECT_EQ(closed->output().find("warning"), std::string::npos) << closed->output();
}

TEST_F(NbdTlsVerifyPeer, BadCombinationsAreRefused) {
  temp_dir no_ca;
  for (const char* f : {"server-cert.pem", "server-key.pem"})
    run({"cp", dir_.path(f), no_ca.path(f)});
  spit(dir_.path("good.psk"), "alice:0123456789abcdef\n");
  for (auto [args, status, text] : std::vector<std::tuple<std::vector<std::string>, int, std::string>>{
           {{"--tls=on", "--tls-psk=" + dir_.path("good.psk"), "--tls-verify-peer"}, 2, "--tls-certificates"},
           {{"--tls-verify-peer"}, 2, "--tls-certificates"},
           {{"--tls=on", "--tls-certificates=" + dir_.dir(), "--tls-verify-peer=1"}, 2, "takes no value"},
           {{"--tls=on", "--tls-certificates=" + no_ca.dir(), "--tls-verify-peer"}, 1, "ca-cert.pem"}}) {
    args.insert(args.begin(), kProgram);
    args.push_back("--socket=" + dir_.path("sock"));
    auto r = run(args);
    EXPECT_EQ(r.status, status) << args[1] << ": " << r.output;
    EXPECT_NE(r.output.find(text), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace iov_test::nbd
