// Tests of iov-nbd's TLS (NBD_OPT_STARTTLS with GnuTLS): PSK keys in
// psktool's format and X.509 certificates (certtool), with the real clients
// where installed (nbdinfo and nbdcopy with nbds+unix:// URIs, qemu-img with
// tls-creds-psk and tls-creds-x509 objects): data copied in and out intact,
// a wrong key refused while the server goes on serving; --tls=require
// refusing every option but STARTTLS and ABORT before the handshake (the
// tests' client, byte by byte), --tls=on serving plain clients too; the
// handshake timeout covering the TLS handshake; bad options.
//
//   build/release/tests/nbd_tls_test --gtest_filter='NbdTls*'
#include <signal.h>

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

std::string tls_uri(const temp_dir& dir, const std::string& psk_file) {
  return "nbds+unix://alice@/?socket=" + dir.path("sock") + "&tls-psk-file=" + psk_file;
}

// keys.psk for identity alice in dir (psktool's format, as qemu looks for it).
bool make_psk(const temp_dir& dir) {
  return run({"psktool", "-u", "alice", "-p", dir.path("keys.psk")}).status == 0;
}

class NbdTlsPsk : public testing::Test {
 protected:
  void SetUp() override {
    if (!kProgram)
      GTEST_SKIP() << "iov-nbd is not built in this tree";
    if (which("psktool").empty())
      GTEST_SKIP() << "psktool is not installed";
    ASSERT_TRUE(make_psk(dir_));
  }
  std::unique_ptr<server_process> serve(const std::string& mode, std::vector<std::string> more = {}) {
    more.insert(more.end(), {"--size=8m", "--tls=" + mode, "--tls-psk=" + dir_.path("keys.psk")});
    return start(dir_, more);
  }
  temp_dir dir_;
};

TEST_F(NbdTlsPsk, RealClientsCopyInAndOutIntact) {
  REQUIRE_TOOL("nbdinfo");
  REQUIRE_TOOL("nbdcopy");
  auto srv = serve("require");
  const std::string uri = tls_uri(dir_, dir_.path("keys.psk"));
  auto r = run({"nbdinfo", uri});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("with TLS"), std::string::npos) << r.output;
  std::mt19937_64 rng(41);
  bytes image = random_data(8 * MiB, rng);
  spit(dir_.path("in.img"), std::string(image.begin(), image.end()));
  r = run({"nbdcopy", dir_.path("in.img"), uri});
  ASSERT_EQ(r.status, 0) << r.output;
  r = run({"nbdcopy", uri, dir_.path("out.img")});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(slurp(dir_.path("out.img")) == std::string(image.begin(), image.end()));
  if (!which("qemu-img").empty()) {
    const std::vector<std::string> object = {
        "--object", "tls-creds-psk,id=tls0,endpoint=client,dir=" + dir_.dir() + ",username=alice"};
    const std::string opts = "driver=nbd,path=" + dir_.path("sock") + ",tls-creds=tls0";
    std::vector<std::string> cmp = {"qemu-img", "compare"};
    cmp.insert(cmp.end(), object.begin(), object.end());
    cmp.insert(cmp.end(), {"--image-opts", "driver=file,filename=" + dir_.path("in.img"), opts});
    r = run(cmp);
    EXPECT_EQ(r.status, 0) << r.output;
    bytes other = random_data(8 * MiB, rng);
    spit(dir_.path("other.img"), std::string(other.begin(), other.end()));
    std::vector<std::string> convert = {"qemu-img", "convert", "-n"};
    convert.insert(convert.end(), object.begin(), object.end());
    convert.insert(convert.end(), {"--target-image-opts", "-f", "raw", dir_.path("other.img"), opts});
    r = run(convert);
    ASSERT_EQ(r.status, 0) << r.output;
    r = run({"nbdcopy", uri, dir_.path("out2.img")});
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(slurp(dir_.path("out2.img")) == std::string(other.begin(), other.end()));
  }
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// A key the server does not have fails the handshake; the server goes on
// serving the right key.
TEST_F(NbdTlsPsk, AWrongKeyIsRefused) {
  REQUIRE_TOOL("nbdinfo");
  auto srv = serve("require");
  temp_dir other;
  ASSERT_TRUE(make_psk(other));  // alice, another key
  auto r = run({"nbdinfo", tls_uri(dir_, other.path("keys.psk"))});
  EXPECT_NE(r.status, 0) << r.output;
  r = run({"nbdinfo", tls_uri(dir_, dir_.path("keys.psk"))});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// Before the handshake, --tls=require answers every option but STARTTLS and
// ABORT with TLS_REQD (EXPORT_NAME, which has no error reply, ends the
// connection); a real client without TLS fails.
TEST_F(NbdTlsPsk, RequireRefusesPlainTextOptions) {
  auto srv = serve("require");
  auto c = client::connect_unix(dir_.path("sock"));
  ASSERT_TRUE(c && c->greet());
  for (uint32_t option : {uint32_t{OPT_LIST}, uint32_t{OPT_STRUCTURED_REPLY}, uint32_t{OPT_EXTENDED_HEADERS},
                          uint32_t{OPT_LIST_META_CONTEXT}, uint32_t{OPT_SET_META_CONTEXT}, 99u}) {
    ASSERT_TRUE(c->send_option(option, {}));
    auto r = c->read_option_reply();
    ASSERT_TRUE(r) << c->last_error();
    EXPECT_EQ(r->type, REP_ERR_TLS_REQD) << "option " << option;
  }
  export_info info = c->opt_info("", {INFO_NAME});
  EXPECT_FALSE(info.ok);
  EXPECT_EQ(info.error, REP_ERR_TLS_REQD);
  export_info go = c->opt_go("");
  EXPECT_FALSE(go.ok);
  EXPECT_EQ(go.error, REP_ERR_TLS_REQD);
  ASSERT_TRUE(c->send_option(OPT_STARTTLS, {1}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->type, REP_ERR_INVALID) << "STARTTLS takes no data";
  ASSERT_TRUE(c->send_option(OPT_ABORT, {}));
  r = c->read_option_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->type, REP_ACK);
  EXPECT_TRUE(c->wait_closed());

  auto d = client::connect_unix(dir_.path("sock"));
  ASSERT_TRUE(d && d->greet());
  ASSERT_TRUE(d->send_option(OPT_EXPORT_NAME, {}));
  EXPECT_TRUE(d->wait_closed());

  // Bytes sent after STARTTLS before its ACK would be plaintext injected into
  // the session: the connection is dropped.
  auto e = client::connect_unix(dir_.path("sock"));
  ASSERT_TRUE(e && e->greet());
  ASSERT_TRUE(e->send_option(OPT_STARTTLS, {}));
  ASSERT_TRUE(e->send_option(OPT_GO, client::go_payload("", {})));
  EXPECT_TRUE(e->wait_closed());

  if (!which("nbdinfo").empty()) {
    auto out = run({"nbdinfo", unix_uri(dir_.path("sock"))});
    EXPECT_NE(out.status, 0) << out.output;
  }
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// --tls=on: plain clients are served as before, TLS ones too.
TEST_F(NbdTlsPsk, OnServesBoth) {
  auto srv = serve("on");
  auto c = client::connect_unix(dir_.path("sock"));
  ASSERT_TRUE(c && c->greet() && c->opt_structured_reply() && c->opt_go("").ok);
  std::mt19937_64 rng(42);
  expect_served(*c, 0, rng);
  c->disc();
  if (!which("nbdinfo").empty()) {
    auto r = run({"nbdinfo", tls_uri(dir_, dir_.path("keys.psk"))});
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("with TLS"), std::string::npos) << r.output;
  }
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// A client that asks for TLS and then says nothing is cut off by the
// handshake timeout, as any client stalling its negotiation is.
TEST_F(NbdTlsPsk, HandshakeTimeoutCoversTheTlsHandshake) {
  auto srv = serve("require", {"--handshake-timeout=1"});
  auto c = client::connect_unix(dir_.path("sock"));
  ASSERT_TRUE(c && c->greet() && c->send_option(OPT_STARTTLS, {}));
  auto r = c->read_option_reply();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->type, REP_ACK);
  c->set_timeout_ms(10000);
  EXPECT_TRUE(c->wait_closed()) << "no ClientHello: closed by the handshake timeout";
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// A client that ends its stream in the middle of a TLS record is closed at
// once, not after the handshake timeout (GnuTLS reports such an end as
// "again"; the edge-triggered loop would never wake for it).
TEST_F(NbdTlsPsk, AnEndInsideARecordClosesAtOnce) {
  auto srv = serve("require", {"--handshake-timeout=60"});
  for (size_t cut : {size_t{3}, size_t{100}}) {
    auto c = client::connect_unix(dir_.path("sock"));
    ASSERT_TRUE(c && c->greet() && c->send_option(OPT_STARTTLS, {}));
    auto r = c->read_option_reply();
    ASSERT_TRUE(r && r->type == REP_ACK);
    bytes record = {0x16, 0x03, 0x01, 0x02, 0x00};  // a handshake record of 512 bytes, cut short
    record.resize(cut, 0x01);
    ASSERT_TRUE(c->send_bytes(record.data(), record.size()));
    c->shutdown_write();
    c->set_timeout_ms(5000);
    EXPECT_TRUE(c->wait_closed()) << cut;
  }
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

// X.509 as nbdkit and qemu read it: ca-cert.pem, server-cert.pem,
// server-key.pem in one directory; the client trusts the CA.
TEST(NbdTlsX509, CertificatesServeRealClients) {
  REQUIRE_PROGRAM();
  REQUIRE_TOOL("certtool");
  REQUIRE_TOOL("nbdinfo");
  temp_dir dir;
  auto tool = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "certtool");
    auto r = run(args);
    EXPECT_EQ(r.status, 0) << r.output;
  };
  spit(dir.path("ca.info"), "cn = iov test CA\nca\ncert_signing_key\nexpiration_days = 2\n");
  spit(dir.path("server.info"),
       "organization = iov\ncn = localhost\ndns_name = localhost\nip_address = 127.0.0.1\ntls_www_server\n"
       "encryption_key\nsigning_key\nexpiration_days = 2\n");
  tool({"--generate-privkey", "--outfile", dir.path("ca-key.pem")});
  tool({"--generate-self-signed", "--load-privkey", dir.path("ca-key.pem"), "--template", dir.path("ca.info"),
        "--outfile", dir.path("ca-cert.pem")});
  tool({"--generate-privkey", "--outfile", dir.path("server-key.pem")});
  tool({"--generate-certificate", "--load-privkey", dir.path("server-key.pem"), "--load-ca-certificate",
        dir.path("ca-cert.pem"), "--load-ca-privkey", dir.path("ca-key.pem"), "--template",
        dir.path("server.info"), "--outfile", dir.path("server-cert.pem")});
  ASSERT_FALSE(HasFailure());
  auto srv = start(dir, {"--size=4m", "--tls=require", "--tls-certificates=" + dir.dir()});
  auto r = run({"nbdinfo", "nbds+unix:///?socket=" + dir.path("sock") + "&tls-certificates=" + dir.dir()});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("with TLS"), std::string::npos) << r.output;
  if (!which("qemu-img").empty()) {
    r = run({"qemu-img", "info", "--object", "tls-creds-x509,id=tls0,endpoint=client,dir=" + dir.dir(),
             "--image-opts", "driver=nbd,path=" + dir.path("sock") + ",tls-creds=tls0,tls-hostname=localhost"});
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("4 MiB"), std::string::npos) << r.output;
  }
  EXPECT_EQ(srv->signal_and_wait(SIGTERM), 0) << srv->output();
}

TEST(NbdTlsOptions, BadValuesAreRefused) {
  REQUIRE_PROGRAM();
  temp_dir dir;
  spit(dir.path("bad.psk"), "alice:not-hex\n");
  spit(dir.path("good.psk"), "alice:0123456789abcdef\n");
  for (auto [args, status, text] : std::vector<std::tuple<std::vector<std::string>, int, std::string>>{
           {{"--tls=maybe"}, 2, "--tls"},
           {{"--tls=on"}, 2, "--tls-psk"},
           {{"--tls=require"}, 2, "--tls-psk"},
           {{"--tls-psk=" + dir.path("good.psk")}, 2, "--tls=on"},
           {{"--tls=on", "--tls-psk=" + dir.path("good.psk"), "--tls-certificates=" + dir.dir()}, 2, "one or"},
           {{"--tls=on", "--tls-psk=" + dir.path("none.psk")}, 1, "cannot be read"},
           {{"--tls=on", "--tls-psk=" + dir.path("bad.psk")}, 1, "psktool"},
           {{"--tls=on", "--tls-certificates=" + dir.dir()}, 1, "server-cert.pem"}}) {
    args.insert(args.begin(), kProgram);
    args.push_back("--socket=" + dir.path("sock"));
    auto r = run(args);
    EXPECT_EQ(r.status, status) << args[1] << ": " << r.output;
    EXPECT_NE(r.output.find(text), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace iov_test::nbd
