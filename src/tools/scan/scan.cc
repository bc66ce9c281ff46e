// scan.cc: file_scanner (see scan.hpp).
#include "scan/scan.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "iov/iov.hpp"

namespace iov::tools {

struct file_scanner::state {
  scan_result result;
  uint32_t crc = ~0u;
  void add_extent(uint64_t offset, uint64_t len, bool zero) {
    if (!len)
      return;
    auto& ex = result.extents;
    if (!ex.empty() && ex.back().zero == zero && ex.back().offset + ex.back().length == offset)
      ex.back().length += len;
    else
      ex.push_back({offset, len, zero});
  }
};

file_scanner::file_scanner(const scan_options& opts) : opts_(opts), table_(opts.nr_buffers) {}

absl::StatusOr<std::unique_ptr<file_scanner>> file_scanner::create(const scan_options& in) {
  scan_options opts = in;
  if (opts.block == 0)
    return absl::InvalidArgumentError("block size must be positive");
  if (opts.nr_buffers == 0)
    opts.nr_buffers = 1;
  // Whole blocks per buffer, so reads start on block boundaries.
  opts.buffer_size = (std::max(opts.buffer_size, opts.block) + opts.block - 1) / opts.block * opts.block;
  if (opts.buffer_size == 0 || opts.buffer_size > IOV_MAX_REG_BUFFER_SIZE)
    return absl::InvalidArgumentError(absl::StrCat("block size ", opts.block, " is too large"));
  std::unique_ptr<file_scanner> s(new file_scanner(opts));
  if (int err = io_uring_queue_init(opts.nr_buffers * 2, &s->ring_, 0); err < 0)
    return absl::UnavailableError(absl::StrCat("io_uring_queue_init: ", std::strerror(-err)));
  s->ring_ready_ = true;
  std::vector<::iovec> iovs;
  for (unsigned k = 0; k < opts.nr_buffers; k++) {
    char* b = static_cast<char*>(std::aligned_alloc(PAGE_SIZE, (opts.buffer_size + PAGE_SIZE - 1) & PAGE_MASK));
    if (!b)
      return absl::ResourceExhaustedError("out of memory for the read buffers");
    s->buffers_.push_back(b);
    iovs.push_back({b, opts.buffer_size});
  }
  if (int err = io_uring_register_buffers(&s->ring_, iovs.data(), iovs.size()); err < 0)
    return absl::UnavailableError(absl::StrCat("io_uring_register_buffers: ", std::strerror(-err)));
  if (absl::Status st = s->table_.register_buffers(iovs); !st.ok())
    return st;
  return s;
}

file_scanner::~file_scanner() {
  table_.unregister_all();
  if (ring_ready_)
    io_uring_queue_exit(&ring_);
  for (char* b : buffers_)
    std::free(b);
}

// One completed read, through the registration table: CRC and zero blocks.
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
  // Blocks are aligned to the file, and reads start on block boundaries.
  for (uint64_t done = 0; done < len;) {
    uint64_t n = std::min(opts_.block, len - done);
    st.add_extent(offset + done, n, iov_iter_is_zero(&it, n));
    iov_iter_advance(&it, n);
    done += n;
  }
  st.result.bytes_read += len;
}

// Reads [start, end) in buffer-sized chunks, nr_buffers in flight, and
// consumes them in file order.
absl::Status file_scanner::read_range(int fd, uint64_t start, uint64_t end, state& st) {
  for (uint64_t pos = start; pos < end;) {
    unsigned batch = 0;
    uint64_t want[64], got[64];
    for (; batch < opts_.nr_buffers && batch < 64 && pos + batch * opts_.buffer_size < end; batch++) {
      uint64_t off = pos + batch * opts_.buffer_size;
      want[batch] = std::min(opts_.buffer_size, end - off);
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
                                 pos + k * opts_.buffer_size + got[k], static_cast<int>(k));
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
          status = absl::DataLossError(absl::StrCat("read at ", pos + k * opts_.buffer_size, ": ", std::strerror(-res)));
        else if (res == 0 && status.ok())
          status = absl::DataLossError(absl::StrCat("the file shrank while being read (at ",
                                                    pos + k * opts_.buffer_size + got[k], ")"));
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
      consume(k, pos + k * opts_.buffer_size, want[k], st);
    for (unsigned k = 0; k < batch; k++)
      pos += want[k];
  }
  return absl::OkStatus();
}

absl::StatusOr<scan_result> file_scanner::scan(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || S_ISDIR(sb.st_mode)) {
    int err = S_ISDIR(sb.st_mode) ? EISDIR : errno;
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::strerror(err)));
  }
  state st;
  uint64_t size = static_cast<uint64_t>(sb.st_size);
  st.result.size = size;
  const uint64_t block = opts_.block;
  absl::Status status;
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
    uint64_t re = std::min(size, (static_cast<uint64_t>(hole) + block - 1) / block * block);
    if (rs > pos) {  // a hole of whole blocks
      st.crc = crc32c_extend_zeroes(st.crc, rs - pos);
      st.add_extent(pos, rs - pos, true);
    }
    if (re > rs)
      status = read_range(fd, rs, re, st);
    pos = std::max(re, rs);
  }
  close(fd);
  if (!status.ok())
    return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
  st.result.crc32c = ~st.crc;
  return std::move(st.result);
}

}  // namespace iov::tools
