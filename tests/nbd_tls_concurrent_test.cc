// iov-nbd's TLS with many clients at once, against the server in this
// process (so that the sanitizers see its event loops): four qemu-io
// clients over TLS with a PSK, each writing its own pattern over its own
// quarter and reading it back at the same time on two event loops; the
// device holds every pattern after.
//
//   ctest --preset tsan -R nbd_tls_concurrent
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "iov/iov.hpp"
#include "support/nbd_process.hpp"
#include "support/nbd_server_fixture.hpp"

namespace iov_test::nbd {
namespace {

TEST(NbdTlsConcurrent, FourClientsAtOnceOverTls) {
  REQUIRE_TOOL("psktool");
  REQUIRE_TOOL("qemu-io");
  temp_dir dir;
  ASSERT_EQ(run({"psktool", "-u", "alice", "-p", dir.path("keys.psk")}).status, 0);
  auto creds = iov::nbd::tls_credentials::load_psk(dir.path("keys.psk"));
  ASSERT_TRUE(creds.ok()) << creds.status();
  auto dev = iov::blkdev_create("brd", {{"size", std::to_string(16 * MiB)}});
  ASSERT_TRUE(dev.ok()) << dev.status();
  iov::nbd::server_options opts;
  opts.socket_path = dir.path("sock");
  opts.limits.threads = 2;
  opts.tls = iov::nbd::tls_mode::require;
  opts.credentials = std::move(*creds);
  iov::nbd::server server(**dev, opts);
  ASSERT_TRUE(server.listen().ok());
  std::thread loop([&] { server.run(); });

  // Each client writes its own pattern over its quarter and reads it back
  // (qemu-io checks the pattern), then the whole disk is read once more.
  const std::string object = "tls-creds-psk,id=tls0,endpoint=client,dir=" + dir.dir() + ",username=alice";
  const std::string image = "driver=nbd,path=" + dir.path("sock") + ",tls-creds=tls0";
  std::vector<std::future<run_result>> done;
  for (int k = 0; k < 4; k++) {
    done.push_back(std::async(std::launch::async, [&, k] {
      const std::string pattern = std::to_string(0x41 + k), off = std::to_string(k * 4 * MiB), len = "4M";
      return run({"qemu-io", "--object", object, "--image-opts", image, "-c",
                  "write -P " + pattern + " " + off + " " + len, "-c", "read -P " + pattern + " " + off + " " + len});
    }));
  }
  for (auto& f : done) {
    run_result r = f.get();
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output.find("Pattern verification failed"), std::string::npos) << r.output;
  }
  server.stop();  // and joined: what its event loops wrote is then the main thread's to read
  loop.join();
  for (int k = 0; k < 4; k++) {
    bytes got(4 * MiB);
    iov::iov_iter it;
    iov::iov_iter_ubuf(&it, iov::ITER_DEST, got.data(), got.size());
    iov::blk_request rq{.op = iov::REQ_OP_READ, .sector = k * 4 * MiB >> iov::SECTOR_SHIFT, .iter = &it};
    ASSERT_EQ((*dev)->submit(rq), 0);
    EXPECT_EQ(got, bytes(4 * MiB, static_cast<unsigned char>(0x41 + k))) << k;
  }
}

}  // namespace
}  // namespace iov_test::nbd
