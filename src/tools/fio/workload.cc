// workload.cc: the jobs of an iov-fio run. Each job is a thread with its own
// region of the device (size / numjobs, so verify never races another job),
// iodepth buffers and an iterator kind:
//   ubuf   iov_iter_ubuf over the buffer
//   iovec  one ::iovec per page of the buffer
//   bvec   what an unregistered buffer costs per request: the ubuf's pages
//          extracted (iov_iter_extract_pages) and a bvec table built
//   fixed  the buffers registered once; each request is an import_fixed()
// The driver completes synchronously (as fio's sync engines): iodepth is how
// many buffers a job cycles through, not concurrency.
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "fio/job.hpp"
#include "iov/iov.hpp"

namespace iov::fio {

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct xorshift {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

// The header fio's verify=crc32c puts at the start of every block.
struct verify_header {
  uint64_t magic;
  uint64_t offset;
  uint64_t seq;
  uint32_t crc;  // standard CRC-32C of the block after the header
  uint32_t len;
};
constexpr uint64_t kVerifyMagic = 0x69766f2d66696f31ull;  // "iov-fio1"

struct job {
  const job_options* o;
  blkdev* dev;
  buffer_table* table;
  unsigned id;
  uint64_t region_start, region_len;
  std::vector<char*> bufs;
  std::vector<std::vector<::iovec>> iovs;
  std::vector<bool> written;  // per block of the region, for verify
  xorshift rng;
  uint64_t seq = 0;
  direction_stats read, write;
  int error = 0;
  std::string error_text;
  uint64_t elapsed_ns = 0;

  unsigned slot_base() const { return id * o->iodepth; }
};

void fill_block(job& j, char* buf, uint64_t offset) {
  const uint64_t bs = j.o->bs;
  xorshift r{(offset + 1) * 0x9E3779B97F4A7C15ull ^ ++j.seq};
  for (uint64_t k = sizeof(verify_header); k + 8 <= bs; k += 8) {
    uint64_t v = r.next();
    std::memcpy(buf + k, &v, 8);
  }
  verify_header h{kVerifyMagic, offset, j.seq, 0, static_cast<uint32_t>(bs)};
  h.crc = ~crc32c(~0u, buf + sizeof h, bs - sizeof h);
  std::memcpy(buf, &h, sizeof h);
}

// One request of bs bytes at `offset` through buffer `slot`.
int submit_io(job& j, unsigned slot, bool is_write, uint64_t offset, const char** why) {
  const job_options& o = *j.o;
  char* buf = j.bufs[slot];
  const unsigned dir = is_write ? ITER_SOURCE : ITER_DEST;
  iov_iter it;
  buffer_ref ref;
  bio_vec bv[66];  // on the stack up to 264 KiB; larger requests build on the heap
  std::vector<bio_vec> big;
  switch (o.iter) {
    case iter_kind::ubuf:
      iov_iter_ubuf(&it, dir, buf, o.bs);
      break;
    case iter_kind::iovec:
      iov_iter_init(&it, dir, j.iovs[slot].data(), j.iovs[slot].size(), o.bs);
      break;
    case iter_kind::bvec: {
      iov_iter u;
      iov_iter_ubuf(&u, dir, buf, o.bs);
      size_t npages = (o.bs + PAGE_SIZE - 1) / PAGE_SIZE;
      bio_vec* table = bv;
      if (npages > sizeof bv / sizeof bv[0]) {
        big.resize(npages);
        table = big.data();
      }
      page* pages[64];
      size_t nbv = 0;
      while (iov_iter_count(&u)) {
        page** pp = pages;
        size_t off0;
        ssize_t n = iov_iter_extract_pages(&u, &pp, iov_iter_count(&u), 64, 0, &off0);
        for (size_t k = 0, left = static_cast<size_t>(n); left; k++) {
          size_t len = std::min(left, PAGE_SIZE - off0);
          bvec_set_page(&table[nbv++], pages[k], static_cast<unsigned>(len), static_cast<unsigned>(off0));
          left -= len;
          off0 = 0;
        }
      }
      iov_iter_bvec(&it, dir, table, nbv, o.bs);
      break;
    }
    case iter_kind::fixed: {
      absl::StatusOr<buffer_ref> r =
          import_fixed(*j.table, j.slot_base() + slot, reinterpret_cast<uintptr_t>(buf), o.bs, dir, &it);
      if (!r.ok()) {
        *why = "import_fixed failed";
        return -EFAULT;
      }
      ref = std::move(*r);
      break;
    }
  }
  blk_request rq;
  rq.op = is_write ? REQ_OP_WRITE : REQ_OP_READ;
  rq.sector = offset >> SECTOR_SHIFT;
  rq.iter = &it;
  int err = j.dev->submit(rq);
  if (err)
    *why = rq.error;
  else if (iov_iter_count(&it)) {
    *why = "short transfer";
    err = -EIO;
  }
  return err;
}

bool fail(job& j, int err, const char* why, uint64_t offset) {
  j.error = err;
  j.error_text = absl::StrCat("job ", j.id, ": request at offset ", offset, " failed: ", std::strerror(-err), " (",
                              why ? why : "no reason given", ")");
  return false;
}

// Sequential bs-sized writes over the job's region.
bool prefill(job& j) {
  for (uint64_t off = 0; off < j.region_len; off += j.o->bs) {
    uint64_t offset = j.region_start + off;
    if (j.o->verify)
      fill_block(j, j.bufs[0], offset);
    const char* why = nullptr;
    if (int err = submit_io(j, 0, true, offset, &why))
      return fail(j, err, why, offset);
    j.written[off / j.o->bs] = true;
  }
  return true;
}

void measured_phase(job& j) {
  const job_options& o = *j.o;
  const uint64_t blocks = j.region_len / o.bs;
  const bool random = o.rw == rw_pattern::randread || o.rw == rw_pattern::randwrite || o.rw == rw_pattern::randrw;
  const uint64_t start = now_ns();
  const uint64_t deadline = o.runtime > 0 ? start + static_cast<uint64_t>(o.runtime * 1e9) : UINT64_MAX;
  uint64_t done = 0, next_block = 0;
  bool stop = false;
  while (!stop) {
    for (unsigned slot = 0; slot < o.iodepth && !stop; slot++) {
      bool is_write = o.rw == rw_pattern::write || o.rw == rw_pattern::randwrite ||
                      (o.rw == rw_pattern::randrw && j.rng.next() % 100 >= o.rwmixread);
      uint64_t block = random ? j.rng.next() % blocks : next_block++ % blocks;
      uint64_t offset = j.region_start + block * o.bs;
      if (is_write && o.verify)
        fill_block(j, j.bufs[slot], offset);
      const char* why = nullptr;
      uint64_t t0 = now_ns();
      int err = submit_io(j, slot, is_write, offset, &why);
      uint64_t t1 = now_ns();
      if (err) {
        fail(j, err, why, offset);
        stop = true;
        break;
      }
      direction_stats& d = is_write ? j.write : j.read;
      d.ios++;
      d.bytes += o.bs;
      d.clat.add(t1 - t0);
      if (is_write)
        j.written[block] = true;
      done += o.bs;
      if (o.runtime > 0 ? t1 >= deadline : done >= o.io_size)
        stop = true;
    }
  }
  j.elapsed_ns = now_ns() - start;
}

// Reads back every block the job wrote and checks its header and CRC.
bool verify_job(job& j, run_result& r) {
  const uint64_t bs = j.o->bs;
  for (uint64_t b = 0; b < j.written.size(); b++) {
    if (!j.written[b])
      continue;
    uint64_t offset = j.region_start + b * bs;
    const char* why = nullptr;
    if (int err = submit_io(j, 0, false, offset, &why)) {
      r.verify_failed = true;
      r.verify_text = absl::StrCat("verify: read at offset ", offset, " failed: ", why ? why : std::strerror(-err));
      return false;
    }
    verify_header h;
    std::memcpy(&h, j.bufs[0], sizeof h);
    uint32_t crc = ~crc32c(~0u, j.bufs[0] + sizeof h, bs - sizeof h);
    const char* bad = h.magic != kVerifyMagic ? "bad magic"
                      : h.offset != offset    ? "block written for another offset"
                      : h.len != bs           ? "bad length"
                      : h.crc != crc          ? "crc32c mismatch"
                                              : nullptr;
    if (bad) {
      r.verify_failed = true;
      char hex[64];
      std::snprintf(hex, sizeof hex, "header crc32c %08x, data crc32c %08x", h.crc, crc);
      r.verify_text = absl::StrCat("verify: ", bad, " at offset ", offset, " (block ", offset / bs, "): ", hex);
      return false;
    }
    r.verified_blocks++;
  }
  return true;
}

// The testing aid: flip one byte on the device, bypassing the headers.
void corrupt(blkdev& dev, uint64_t offset) {
  char sector[SECTOR_SIZE];
  uint64_t base = offset & ~uint64_t{SECTOR_SIZE - 1};
  iov_iter it;
  iov_iter_ubuf(&it, ITER_DEST, sector, sizeof sector);
  blk_request rq;
  rq.op = REQ_OP_READ;
  rq.sector = base >> SECTOR_SHIFT;
  rq.iter = &it;
  if (dev.submit(rq))
    return;
  sector[offset - base] ^= 0x5a;
  iov_iter_ubuf(&it, ITER_SOURCE, sector, sizeof sector);
  rq.op = REQ_OP_WRITE;
  rq.iter = &it;
  dev.submit(rq);
}

double tv_seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

}  // namespace

run_result run(const job_options& o, blkdev& dev) {
  run_result r;
  const uint64_t region = o.size / o.numjobs / o.bs * o.bs;
  buffer_table table(o.numjobs * o.iodepth);
  std::vector<job> jobs(o.numjobs);
  std::vector<::iovec> to_register;
  for (unsigned id = 0; id < o.numjobs; id++) {
    job& j = jobs[id];
    j.o = &o;
    j.dev = &dev;
    j.table = &table;
    j.id = id;
    j.region_start = id * region;
    j.region_len = region;
    j.written.assign(region / o.bs, false);
    j.rng.s = (o.seed + id) * 0x9E3779B97F4A7C15ull | 1;
    for (unsigned s = 0; s < o.iodepth; s++) {
      size_t alloc = (o.bs + PAGE_SIZE - 1) & PAGE_MASK;
      char* b = static_cast<char*>(std::aligned_alloc(PAGE_SIZE, alloc));
      for (size_t k = 0; k < alloc; k++)  // non-zero, so zero detection never skips a write
        b[k] = static_cast<char>(j.rng.next() | 1);
      j.bufs.push_back(b);
      std::vector<::iovec> pages;
      for (size_t off = 0; off < o.bs; off += PAGE_SIZE)
        pages.push_back({b + off, std::min<size_t>(PAGE_SIZE, o.bs - off)});
      j.iovs.push_back(std::move(pages));
      to_register.push_back({b, o.bs});
    }
  }
  if (absl::Status s = table.register_buffers(to_register); !s.ok()) {
    r.error = -EINVAL;
    r.error_text = std::string(s.message());
  }

  if (!r.error && o.prefill) {
    std::vector<std::thread> threads;
    for (job& j : jobs)
      threads.emplace_back([&j] { prefill(j); });
    for (auto& t : threads)
      t.join();
  }
  rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);
  uint64_t t0 = now_ns();
  if (!r.error) {
    std::vector<std::thread> threads;
    for (job& j : jobs)
      threads.emplace_back([&j] {
        if (!j.error)
          measured_phase(j);
      });
    for (auto& t : threads)
      t.join();
  }
  r.seconds = static_cast<double>(now_ns() - t0) / 1e9;
  getrusage(RUSAGE_SELF, &ru1);
  if (r.seconds > 0) {
    r.usr_cpu = 100.0 * (tv_seconds(ru1.ru_utime) - tv_seconds(ru0.ru_utime)) / r.seconds;
    r.sys_cpu = 100.0 * (tv_seconds(ru1.ru_stime) - tv_seconds(ru0.ru_stime)) / r.seconds;
  }
  r.ctx = static_cast<uint64_t>((ru1.ru_nvcsw + ru1.ru_nivcsw) - (ru0.ru_nvcsw + ru0.ru_nivcsw));
  for (job& j : jobs) {
    r.read.ios += j.read.ios;
    r.read.bytes += j.read.bytes;
    r.read.clat.merge(j.read.clat);
    r.write.ios += j.write.ios;
    r.write.bytes += j.write.bytes;
    r.write.clat.merge(j.write.clat);
    if (j.error && !r.error) {
      r.error = j.error;
      r.error_text = j.error_text;
    }
  }
  if (o.debug_corrupt >= 0 && static_cast<uint64_t>(o.debug_corrupt) < o.size)
    corrupt(dev, static_cast<uint64_t>(o.debug_corrupt));
  if (o.verify && !r.error)
    for (job& j : jobs)
      if (!verify_job(j, r))
        break;
  table.unregister_all();
  for (job& j : jobs)
    for (char* b : j.bufs)
      std::free(b);
  return r;
}

}  // namespace iov::fio
