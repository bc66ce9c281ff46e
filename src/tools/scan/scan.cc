// scan.cc: file_scanner (see scan.hpp).
#include "scan/scan.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "iov/iov.hpp"

namespace iov::tools {

struct file_scanner::state {
  scan_result result;
  uint32_t crc = ~0u;
  // The block being classified: it may span several reads.
  uint64_t block_start = 0, block_seen = 0;
  bool block_zero = true;

  void add_extent(uint64_t offset, uint64_t len, bool zero) {
    if (!len)
      return;
    auto& ex = result.extents;
    if (!ex.empty() && ex.back().zero == zero && ex.back().offset + ex.back().length == offset)
      ex.back().length += len;
    else
      ex.push_back({offset, len, zero});
  }
  void end_block() {
    add_extent(block_start, block_seen, block_zero);
    block_seen = 0;
  }
};

namespace {

// Why io_uring said ENOMEM, most likely.
std::string memlock_hint(const char* what) {
  struct rlimit rl;
  std::string limit = getrlimit(RLIMIT_MEMLOCK, &rl) != 0 ? std::string("unknown")
                      : rl.rlim_cur == RLIM_INFINITY  ? std::string("unlimited")
                                                      : absl::StrCat(rl.rlim_cur, " bytes");
  return absl::StrCat("; io_uring charges ", what, " to RLIMIT_MEMLOCK (", limit,
                      ", shared by this user's processes) unless the process has CAP_IPC_LOCK: raise it with ulimit -l");
}

// What a file that is not regular is, for the message that refuses it.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

absl::Status refuse_unless_regular(const std::string& path, const struct stat& sb) {
  if (S_ISREG(sb.st_mode))
    return absl::OkStatus();
  if (S_ISDIR(sb.st_mode))
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::strerror(EISDIR)));
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": ", file_kind(sb.st_mode), "; iov-scan reads regular files only"));
}

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

}  // namespace

file_scanner::file_scanner(const scan_options& opts) : opts_(opts), table_(opts.nr_buffers) {}

absl::StatusOr<std::unique_ptr<file_scanner>> file_scanner::create(const scan_options& in) {
  scan_options opts = in;
  if (opts.block == 0)
    return absl::InvalidArgumentError("block size must be positive");
  if (opts.block > kMaxScanBlock)
    return absl::InvalidArgumentError(absl::StrCat("block size ", opts.block, " is too large (at most 1 GiB)"));
  opts.nr_buffers = std::clamp(opts.nr_buffers, 1u, 64u);
  opts.buffer_size = std::clamp<uint64_t>(round_up(opts.buffer_size, PAGE_SIZE), PAGE_SIZE, 64u << 20);
  std::unique_ptr<file_scanner> s(new file_scanner(opts));
  if (int err = io_uring_queue_init(opts.nr_buffers * 2, &s->ring_, 0); err < 0) {
    std::string hint = err == -ENOMEM ? memlock_hint("its rings")
                       : err == -EPERM || err == -ENOSYS
                           ? " (io_uring is disabled here: see sysctl kernel.io_uring_disabled, or a seccomp filter)"
                           : "";
    return absl::UnavailableError(absl::StrCat("io_uring_queue_init: ", std::strerror(-err), hint));
  }
  s->ring_ready_ = true;
  return s;
}

file_scanner::~file_scanner() {
  release_buffers();
  if (ring_ready_)
    io_uring_queue_exit(&ring_);
}

void file_scanner::release_buffers() {
  if (buffers_.empty())
    return;
  table_.unregister_all();
  io_uring_unregister_buffers(&ring_);
  for (char* b : buffers_)
    std::free(b);
  buffers_.clear();
  buffer_size_ = 0;
}

// Buffers for a file of `file_size` bytes: as large as the file or
// opts_.buffer_size, whichever is smaller, so that a small file (whatever
// --block says) pins a page or two. io_uring charges what it pins to
// RLIMIT_MEMLOCK (without CAP_IPC_LOCK); when the limit refuses, the buffers
// are halved, then fewer, down to one page, before giving up with the limit
// named.
absl::Status file_scanner::reserve_buffers(uint64_t file_size) {
  uint64_t size = std::min(opts_.buffer_size, round_up(std::max<uint64_t>(file_size, 1), PAGE_SIZE));
  if (buffer_size_ >= size)
    return absl::OkStatus();
  release_buffers();
  for (unsigned count = opts_.nr_buffers;;) {
    std::vector<::iovec> iovs;
    auto free_all = [&iovs] {
      for (const ::iovec& v : iovs)
        std::free(v.iov_base);
    };
    for (unsigned k = 0; k < count; k++) {
      char* b = static_cast<char*>(std::aligned_alloc(PAGE_SIZE, size));
      if (!b) {
        free_all();
        return absl::ResourceExhaustedError(absl::StrCat("out of memory for ", count, " read buffers of ", size, " bytes"));
      }
      iovs.push_back({b, size});
    }
    int err = io_uring_register_buffers(&ring_, iovs.data(), count);
    if (err == 0) {
      if (absl::Status st = table_.register_buffers(iovs); !st.ok()) {
        io_uring_unregister_buffers(&ring_);
        free_all();
        return st;
      }
      for (const ::iovec& v : iovs)
        buffers_.push_back(static_cast<char*>(v.iov_base));
      buffer_size_ = size;
      return absl::OkStatus();
    }
    free_all();
    if (err == -ENOMEM && size > PAGE_SIZE) {
      size = round_up(size / 2, PAGE_SIZE);
    } else if (err == -ENOMEM && count > 1) {
      count /= 2;
    } else {
      return absl::ResourceExhaustedError(absl::StrCat("io_uring_register_buffers (", count, " x ", size,
                                                       " bytes): ", std::strerror(-err),
                                                       err == -ENOMEM ? memlock_hint("registered buffers") : ""));
    }
  }
}

// One completed read, through the registration table: CRC, and the blocks it
// completes (a block may span reads; it is zero if all its pieces are).
void file_scanner::consume(unsigned buf, uint64_t offset, uint64_t len, state& st) {
  iov_iter it;
  absl::StatusOr<buffer_ref> ref =
      import_fixed(table_, buf, reinterpret_cast<uintptr_t>(buffers_[buf]), len, ITER_SOURCE, &it);
  if (!ref.ok()) {  // cannot happen for our own registrations: a bug, say it loudly
    std::fprintf(stderr, "iov-scan: %s\n", std::string(ref.status().message()).c_str());
    std::abort();
  }
  iov_iter crc_pass = it;
  crc32c_iter(&crc_pass, len, &st.crc);
  for (uint64_t done = 0; done < len;) {
    if (st.block_seen == 0) {
      st.block_start = offset + done;
      st.block_zero = true;
    }
    uint64_t n = std::min(opts_.block - st.block_seen, len - done);
    st.block_zero = st.block_zero && iov_iter_is_zero(&it, n);
    iov_iter_advance(&it, n);
    st.block_seen += n;
    done += n;
    if (st.block_seen == opts_.block)
      st.end_block();
  }
  st.result.bytes_read += len;
}

// Reads [start, end) in buffer-sized chunks, nr_buffers in flight, and
// consumes them in file order. start is a block boundary; end is one, or the
// end of the file, where the last block may be partial.
absl::Status file_scanner::read_range(int fd, uint64_t start, uint64_t end, state& st) {
  const uint64_t chunk = buffer_size_;
  for (uint64_t pos = start; pos < end;) {
    unsigned batch = 0;
    uint64_t want[64], got[64];
    for (; batch < buffers_.size() && pos + batch * chunk < end; batch++) {
      want[batch] = std::min(chunk, end - (pos + batch * chunk));
      got[batch] = 0;
    }
    // Submit, and resubmit the rest of any short read, until each is whole.
    for (bool pending = true; pending;) {
      unsigned submitted = 0;
      for (unsigned k = 0; k < batch; k++) {
        if (got[k] == want[k])
          continue;
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        io_uring_prep_read_fixed(sqe, fd, buffers_[k] + got[k], static_cast<unsigned>(want[k] - got[k]),
                                 pos + k * chunk + got[k], static_cast<int>(k));
        io_uring_sqe_set_data64(sqe, k);
        submitted++;
      }
      if (int err = io_uring_submit(&ring_); err < 0)
        return absl::UnavailableError(absl::StrCat("io_uring_submit: ", std::strerror(-err)));
      absl::Status status;
      for (unsigned c = 0; c < submitted; c++) {
        io_uring_cqe* cqe;
        if (int err = io_uring_wait_cqe(&ring_, &cqe); err < 0)
          return absl::UnavailableError(absl::StrCat("io_uring_wait_cqe: ", std::strerror(-err)));
        unsigned k = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
        int res = cqe->res;
        io_uring_cqe_seen(&ring_, cqe);
        if (res < 0 && status.ok())
          status = absl::DataLossError(absl::StrCat("read at ", pos + k * chunk + got[k], ": ", std::strerror(-res)));
        else if (res == 0 && status.ok())
          status = absl::DataLossError(absl::StrCat(
              "ends at ", pos + k * chunk + got[k],
              ", before its size: it shrank while being read, or its size is not its length (as in /sys)"));
        else if (res > 0)
          got[k] += static_cast<uint64_t>(res);
      }
      if (!status.ok())
        return status;
      pending = false;
      for (unsigned k = 0; k < batch; k++)
        pending |= got[k] != want[k];
    }
    for (unsigned k = 0; k < batch; k++)
      consume(k, pos + k * chunk, want[k], st);
    for (unsigned k = 0; k < batch; k++)
      pos += want[k];
  }
  if (st.block_seen)  // the file's last, partial block
    st.end_block();
  return absl::OkStatus();
}

absl::StatusOr<scan_result> file_scanner::scan(const std::string& path) {
  // Refuse what is not a regular file before opening it (opening a FIFO
  // waits for a writer, a device may act on open), and again after: the path
  // may have changed in between. O_NONBLOCK so that open never waits.
  struct stat sb;
  if (stat(path.c_str(), &sb) != 0)
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  if (absl::Status st = refuse_unless_regular(path, sb); !st.ok())
    return st;
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 && errno == EWOULDBLOCK)  // a lease on a regular file: wait for its holder, as cat would
    fd = open(path.c_str(), O_RDONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  absl::Status status;
  if (fstat(fd, &sb) != 0)
    status = absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  else
    status = refuse_unless_regular(path, sb);
  // io_uring would answer -EAGAIN instead of waiting for the disk.
  if (status.ok() && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    status = absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  if (!status.ok()) {
    close(fd);
    return status;
  }
  state st;
  uint64_t size = static_cast<uint64_t>(sb.st_size);
  st.result.size = size;
  const uint64_t block = opts_.block;
  // Data segments from SEEK_DATA/SEEK_HOLE, widened to whole blocks; the rest
  // is hole: zero, and never read.
  uint64_t pos = 0;
  while (pos < size && status.ok()) {
    off_t data = lseek(fd, static_cast<off_t>(pos), SEEK_DATA);
    if (data < 0 && errno == ENXIO)
      data = static_cast<off_t>(size);  // only a hole is left
    else if (data < 0)
      data = static_cast<off_t>(pos);   // no SEEK_DATA here: read everything
    off_t hole = lseek(fd, data, SEEK_HOLE);
    if (hole < 0)
      hole = static_cast<off_t>(size);
    uint64_t rs = std::max(pos, static_cast<uint64_t>(data) / block * block);
    uint64_t re = std::min(size, round_up(static_cast<uint64_t>(hole), block));
    if (rs > pos) {  // a hole of whole blocks
      st.crc = crc32c_extend_zeroes(st.crc, rs - pos);
      st.add_extent(pos, rs - pos, true);
    }
    if (re > rs) {
      status = reserve_buffers(size);
      if (status.ok())
        status = read_range(fd, rs, re, st);
    }
    pos = std::max(re, rs);
  }
  // Nothing may follow the size: a file in /proc has size 0 and contents, and
  // a file that grew while read has more than its CRC covers.
  char probe;
  if (status.ok() && pread(fd, &probe, 1, static_cast<off_t>(size)) > 0)
    status = absl::DataLossError(absl::StrCat("has more than its size of ", size,
                                              " bytes: it grew while being read, or its size is not its length "
                                              "(as in /proc); not scanned"));
  close(fd);
  if (!status.ok())
    return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
  st.result.crc32c = ~st.crc;
  return std::move(st.result);
}

}  // namespace iov::tools
