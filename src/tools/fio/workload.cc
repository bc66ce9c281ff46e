// workload.cc: the jobs of an iov-fio run. Each job is a thread with its own
// region of the device (size / numjobs, whole zones on a zoned device, so
// verify and zone resets never race another job), iodepth buffers and an
// iterator kind:
//   ubuf   iov_iter_ubuf over the buffer
//   iovec  one ::iovec per page of the buffer
//   bvec   what an unregistered buffer costs per request: the ubuf's pages
//          extracted (iov_iter_extract_pages) and a bvec table built
//   fixed  the buffers registered once; each request is an import_fixed()
// The driver completes synchronously (as fio's sync engines): iodepth is how
// many buffers a job cycles through, not concurrency; --iodepth_batch_submit
// hands that many of them to the driver in one blkdev::submit_batch. The
// blocks --verify writes and checks are verify.hpp's.
#include <sys/resource.h>

#include <algorithm>
#include <barrier>
#include <cstring>
#include <latch>
#include <new>
#include <span>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "fio/clock.hpp"
#include "fio/engine.hpp"
#include "fio/job.hpp"
#include "fio/status.hpp"
#include "fio/verify.hpp"
#include "fio/written_blocks.hpp"
#include "iov/iov.hpp"

namespace iov::fio {

namespace {

struct job {
  const job_options* o;
  blkdev* dev;
  buffer_table* table;
  job_progress* live;
  char* memory = nullptr;  // --ioengine=memcpy: the mapping standing for the device
  unsigned id;
  uint64_t region_start, region_len;
  std::vector<char*> bufs;
  std::vector<std::vector<::iovec>> iovs;
  written_blocks written;  // with --verify only
  xorshift rng;
  uint64_t seq = 0;
  direction_stats read, write;
  int error = 0;
  std::string error_text;
  uint64_t elapsed_ns = 0;
  uint64_t zone_start = UINT64_MAX, zone_capacity = 0;  // bytes: the zone of the last sequential write

  unsigned slot_base() const { return id * o->iodepth; }
};

// A request's iterator and what keeps it valid until the request completes.
struct io_unit {
  iov_iter it;
  buffer_ref ref;  // --iter=fixed
  bio_vec bv[66];  // --iter=bvec: up to 264 KiB here; larger requests build on the heap
  std::vector<bio_vec> big;
};

// The iterator in *u of a request through buffer `slot` for --iter=iovec,
// bvec or fixed: 0, or -EFAULT with *why. Out of line, so that a ubuf
// request, a few stores, is made without a call and its saved registers.
IOV_NOINLINE int prepare_iter(job& j, unsigned slot, unsigned dir, io_unit* u, const char** why) {
  const job_options& o = *j.o;
  char* buf = j.bufs[slot];
  switch (o.iter) {
    case iter_kind::ubuf:  // made by prepare_io, never here
      break;
    case iter_kind::iovec:
      iov_iter_init(&u->it, dir, j.iovs[slot].data(), j.iovs[slot].size(), o.bs);
      break;
    case iter_kind::bvec: {
      iov_iter ub;
      iov_iter_ubuf(&ub, dir, buf, o.bs);
      size_t npages = (o.bs + PAGE_SIZE - 1) / PAGE_SIZE;
      bio_vec* table = u->bv;
      if (npages > sizeof u->bv / sizeof u->bv[0]) {
        u->big.resize(npages);
        table = u->big.data();
      }
      page* pages[64];
      size_t nbv = 0;
      while (iov_iter_count(&ub)) {
        page** pp = pages;
        size_t off0;
        ssize_t n = iov_iter_extract_pages(&ub, &pp, iov_iter_count(&ub), 64, 0, &off0);
        for (size_t k = 0, left = static_cast<size_t>(n); left; k++) {
          size_t len = std::min(left, PAGE_SIZE - off0);
          bvec_set_page(&table[nbv++], pages[k], static_cast<unsigned>(len), static_cast<unsigned>(off0));
          left -= len;
          off0 = 0;
        }
      }
      iov_iter_bvec(&u->it, dir, table, nbv, o.bs);
      break;
    }
    case iter_kind::fixed: {
      absl::StatusOr<buffer_ref> r =
          import_fixed(*j.table, j.slot_base() + slot, reinterpret_cast<uintptr_t>(buf), o.bs, dir, &u->it);
      if (!r.ok()) {
        *why = "import_fixed failed";
        return -EFAULT;
      }
      u->ref = std::move(*r);
      break;
    }
  }
  return 0;
}

// Makes *rq a request of bs bytes at `offset` through buffer `slot`, its
// iterator in *u. 0, or -EFAULT with *why.
IOV_ALWAYS_INLINE int prepare_io(job& j, unsigned slot, bool is_write, uint64_t offset, io_unit* u, blk_request* rq,
                                 const char** why) {
  const unsigned dir = is_write ? ITER_SOURCE : ITER_DEST;
  if (j.o->iter == iter_kind::ubuf)
    iov_iter_ubuf(&u->it, dir, j.bufs[slot], j.o->bs);
  else if (int err = prepare_iter(j, slot, dir, u, why))
    return err;
  *rq = {.op = is_write ? REQ_OP_WRITE : REQ_OP_READ, .sector = offset >> SECTOR_SHIFT, .iter = &u->it};
  return 0;
}

// What the driver returned for a prepared request, a short transfer being an
// error; the buffer's registration is let go.
int complete_io(io_unit* u, const blk_request& rq, int err, const char** why) {
  u->ref = buffer_ref{};
  if (err)
    *why = rq.error;
  else if (iov_iter_count(&u->it)) {
    *why = "short transfer";
    err = -EIO;
  }
  return err;
}

// One request of bs bytes at `offset` through buffer `slot`.
int submit_io(job& j, unsigned slot, bool is_write, uint64_t offset, const char** why) {
  io_unit u;
  blk_request rq;
  if (int err = prepare_io(j, slot, is_write, offset, &u, &rq, why))
    return err;
  return complete_io(&u, rq, j.dev->submit(rq), why);
}

bool fail(job& j, int err, const char* why, uint64_t offset) {
  j.error = err;
  j.error_text = absl::StrCat("job ", j.id, ": request at offset ", offset, " failed: ", std::strerror(-err), " (",
                              why ? why : "no reason given", ")");
  return false;
}

// A sequential write to block *block of a zoned device, as fio's
// zonemode=zbd does it: a block past its zone's capacity moves to the next
// zone's start (*block grows, and may reach the region's end), and a write
// at the start of a sequential zone that is not empty (a run that wrapped
// around, or a measured phase after --prefill) resets the zone first, whose
// blocks then no longer hold verifiable data. 0 or a request's error.
int prepare_zoned_write(job& j, uint64_t* block, uint64_t blocks, const char** why) {
  const uint64_t zone_bytes = j.dev->limits().chunk_sectors << SECTOR_SHIFT, bs = j.o->bs;
  for (; *block < blocks; *block = (j.zone_start + zone_bytes - j.region_start) / bs) {
    uint64_t offset = j.region_start + *block * bs, start = offset / zone_bytes * zone_bytes;
    if (start != j.zone_start || offset == start) {
      std::vector<blk_zone> zone;
      if (int n = j.dev->report_zones(start >> SECTOR_SHIFT, 1, &zone); n != 1) {
        *why = "cannot report the zone";
        return n < 0 ? n : -EIO;
      }
      j.zone_start = start;
      j.zone_capacity = zone[0].capacity << SECTOR_SHIFT;
      if (offset == start && zone[0].type == BLK_ZONE_TYPE_SEQWRITE_REQ && zone[0].cond != BLK_ZONE_COND_EMPTY) {
        blk_request rq;
        rq.op = REQ_OP_ZONE_RESET;
        rq.sector = start >> SECTOR_SHIFT;
        if (int err = j.dev->submit(rq)) {
          *why = rq.error;
          return err;
        }
        if (j.o->verify)
          j.written.erase((start - j.region_start) / bs, (start + zone_bytes - j.region_start) / bs);
      }
    }
    if (offset + bs <= j.zone_start + j.zone_capacity)
      return 0;
  }
  return 0;
}

bool zoned_sequential_writes(const job& j) {
  return (j.dev->limits().features & BLK_FEAT_ZONED) && j.dev->limits().chunk_sectors;
}

// Sequential bs-sized writes over the job's region.
bool prefill(job& j) {
  const uint64_t blocks = j.region_len / j.o->bs;
  j.live->start_phase('I', j.region_len, monotonic_ns());
  j.zone_start = UINT64_MAX;
  for (uint64_t b = 0; b < blocks; b++) {
    const char* why = nullptr;
    if (zoned_sequential_writes(j)) {
      if (int err = prepare_zoned_write(j, &b, blocks, &why))
        return fail(j, err, why, j.region_start + b * j.o->bs);
      if (b >= blocks)
        break;
    }
    uint64_t offset = j.region_start + b * j.o->bs;
    if (j.o->verify)
      fill_block(j.bufs[0], j.o->bs, offset, ++j.seq);
    if (int err = submit_io(j, 0, true, offset, &why))
      return fail(j, err, why, offset);
    j.live->count(true, j.o->bs);
    if (j.o->verify)
      j.written.set(b);
  }
  return true;
}

// A request of the measured phase: its direction and block.
struct planned {
  bool is_write;
  uint64_t block;
};

// --ioengine=memcpy: the requests planned for buffers slot, slot + 1, ...
// made as plain copies between the buffers and the mapping. A batch goes in
// submit_batch's windows, whose blocks' first KiB is asked for before any is
// copied, as brd does for its pages: the fastest a plain copy goes with
// the window known (a loop waiting for each miss in turn ran at 0.78 of it
// on Zen 5). One request at a time is copied as it is.
void memcpy_io(job& j, unsigned slot, std::span<const planned> plan) {
  constexpr size_t kWindow = blkdev::kBatchWindow, kHead = 1024;
  const uint64_t bs = j.o->bs;
  const size_t head = std::min<uint64_t>(kHead, bs);
  auto where = [&j, bs](const planned& p) { return j.memory + j.region_start + p.block * bs; };
  for (size_t i = 0; i < plan.size(); i += kWindow) {
    const std::span<const planned> window = plan.subspan(i, std::min(kWindow, plan.size() - i));
    if (plan.size() > 1)
      for (const planned& p : window)
        p.is_write ? prefetchw_range(where(p), head) : prefetch_range(where(p), head);
    for (const planned& p : window) {
      char* buf = j.bufs[slot++];
      if (p.is_write)
        std::memcpy(where(p), buf, bs);
      else
        std::memcpy(buf, where(p), bs);
    }
  }
}

void measured_phase(job& j) {
  const job_options& o = *j.o;
  const uint64_t blocks = j.region_len / o.bs;
  const bool random = o.rw == rw_pattern::randread || o.rw == rw_pattern::randwrite || o.rw == rw_pattern::randrw;
  const bool zoned = !random && o.rw == rw_pattern::write && !j.memory && zoned_sequential_writes(j);
  // Latencies and the deadline in the latency clock's ticks (clock.hpp).
  const latency_clock& clock = latency_clock::get();
  const uint64_t start = monotonic_ns();
  const uint64_t deadline =
      o.runtime > 0 ? clock.ticks() + clock.ticks_for_ns(static_cast<uint64_t>(o.runtime * 1e9)) : UINT64_MAX;
  j.live->start_phase(run_letter(o.rw), o.runtime > 0 ? 0 : o.io_size, start);
  uint64_t done = 0, next_block = 0;
  bool stop = false;
  // --iodepth_batch_submit: n requests prepared, handed over in one
  // submit_batch, each one's latency the batch's. One at a time for zoned
  // sequential writes, each of which needs the write pointer the last left.
  const unsigned batch = zoned ? 1 : o.iodepth_batch;
  std::vector<io_unit> units(batch);
  std::vector<blk_request> rqs(batch);
  std::vector<int> results(batch);
  std::vector<planned> plan(batch);
  while (!stop) {
    for (unsigned slot = 0; slot < o.iodepth && !stop;) {
      unsigned n = std::min(batch, o.iodepth - slot);
      if (o.runtime <= 0)
        n = static_cast<unsigned>(std::min<uint64_t>(n, (o.io_size - done + o.bs - 1) / o.bs));
      const char* why = nullptr;
      for (unsigned k = 0; k < n && !stop; k++) {
        bool is_write = o.rw == rw_pattern::write || o.rw == rw_pattern::randwrite ||
                        (o.rw == rw_pattern::randrw && j.rng.next() % 100 >= o.rwmixread);
        uint64_t block = random ? j.rng.next() % blocks : next_block++ % blocks;
        if (zoned) {
          int err = prepare_zoned_write(j, &block, blocks, &why);
          if (!err && block >= blocks) {  // the rest of the region is past the zones' capacity: wrap
            block = 0;
            err = prepare_zoned_write(j, &block, blocks, &why);
          }
          if (err || block >= blocks) {
            fail(j, err ? err : -ENOSPC, why ? why : "no zone has room for a block", j.region_start + block * o.bs);
            stop = true;
            break;
          }
          next_block = block + 1;
        }
        uint64_t offset = j.region_start + block * o.bs;
        if (is_write && o.verify)
          fill_block(j.bufs[slot + k], o.bs, offset, ++j.seq);
        if (!j.memory) {  // with the memcpy engine, no request: the copy is made at submission
          if (int err = prepare_io(j, slot + k, is_write, offset, &units[k], &rqs[k], &why)) {
            fail(j, err, why, offset);
            stop = true;
          }
        }
        plan[k] = {is_write, block};
      }
      if (stop)
        break;
      uint64_t t0 = clock.ticks();
      if (j.memory)
        memcpy_io(j, slot, {plan.data(), n});
      else if (n == 1)
        results[0] = j.dev->submit(rqs[0]);
      else
        j.dev->submit_batch({rqs.data(), n}, results);
      uint64_t t1 = clock.ticks();
      const uint64_t clat = t1 > t0 ? clock.ns(t1 - t0) : 0;  // a TSC behind on another CPU reads as 0, not 2^64
      for (unsigned k = 0; k < n; k++) {
        const auto [is_write, block] = plan[k];
        if (int err = j.memory ? 0 : complete_io(&units[k], rqs[k], results[k], &why)) {
          if (!stop)
            fail(j, err, why, j.region_start + block * o.bs);
          stop = true;
          continue;  // the rest still let go of their buffers
        }
        direction_stats& d = is_write ? j.write : j.read;
        d.ios++;
        d.bytes += o.bs;
        d.clat.add(clat);
        j.live->count(is_write, o.bs);
        if (is_write && o.verify)
          j.written.set(block);
        done += o.bs;
      }
      if (o.runtime > 0 ? t1 >= deadline : done >= o.io_size)
        stop = true;
      slot += n;
    }
  }
  j.elapsed_ns = monotonic_ns() - start;
}

// Reads back every block the job wrote and checks its header and CRC.
bool verify_job(job& j, run_result& r) {
  const uint64_t bs = j.o->bs;
  j.live->start_phase('V', j.written.count() * bs, monotonic_ns());
  bool ok = j.written.for_each([&](uint64_t b) {
    uint64_t offset = j.region_start + b * bs;
    const char* why = nullptr;
    if (int err = submit_io(j, 0, false, offset, &why)) {
      r.verify_failed = true;
      r.verify_text = absl::StrCat("verify: read at offset ", offset, " failed: ", why ? why : std::strerror(-err));
      return false;
    }
    j.live->count(false, bs);
    uint32_t header_crc, data_crc;
    if (const char* bad = check_block(j.bufs[0], bs, offset, &header_crc, &data_crc)) {
      r.verify_failed = true;
      char hex[64];
      std::snprintf(hex, sizeof hex, "header crc32c %08x, data crc32c %08x", header_crc, data_crc);
      r.verify_text = absl::StrCat("verify: ", bad, " at offset ", offset, " (block ", offset / bs, "): ", hex);
      return false;
    }
    r.verified_blocks++;
    return true;
  });
  j.live->state.store(ok ? '_' : 'X', std::memory_order_relaxed);
  return ok;
}

double tv_seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

// Each job's buffers (checked: a failed allocation is an error, not a crash
// on first use), and their registration for --iter=fixed only.
absl::Status allocate_buffers(const job_options& o, std::vector<job>& jobs, buffer_table& table) {
  const size_t alloc = (o.bs + PAGE_SIZE - 1) & PAGE_MASK;
  std::vector<::iovec> to_register;
  for (job& j : jobs) {
    for (unsigned s = 0; s < o.iodepth; s++) {
      char* b = static_cast<char*>(std::aligned_alloc(PAGE_SIZE, alloc));
      if (!b)
        return absl::ResourceExhaustedError(absl::StrCat("out of memory for the I/O buffers (", o.numjobs, " jobs x ",
                                                         o.iodepth, " x ", alloc, " bytes)"));
      j.bufs.push_back(b);
      for (size_t k = 0; k < alloc; k += 8) {  // no zero byte, so zero detection never skips a write
        uint64_t v = j.rng.next() | 0x0101010101010101ull;
        std::memcpy(b + k, &v, 8);
      }
      if (o.iter == iter_kind::iovec) {
        std::vector<::iovec> pages;
        for (size_t off = 0; off < o.bs; off += PAGE_SIZE)
          pages.push_back({b + off, std::min<size_t>(PAGE_SIZE, o.bs - off)});
        j.iovs.push_back(std::move(pages));
      }
      to_register.push_back({b, o.bs});
    }
  }
  if (o.iter == iter_kind::fixed)
    return table.register_buffers(to_register);
  return absl::OkStatus();
}

// Starts one thread per job, all held at a gate until every one exists: a
// thread that cannot be created (RLIMIT_NPROC, memory for its stack) ends
// the run before any job has started, with a clear error.
class job_threads {
 public:
  template <class F>
  absl::Status start(std::vector<job>& jobs, F body) {
    for (job& j : jobs) {
      try {
        threads_.emplace_back([this, &j, body] {
          gate_.wait();
          if (!abort_.load(std::memory_order_acquire))
            body(j);
        });
      } catch (const std::system_error& e) {
        abort_.store(true, std::memory_order_release);
        gate_.count_down();
        join();
        return absl::ResourceExhaustedError(absl::StrCat("cannot start the thread of job ", j.id, " (of ", jobs.size(),
                                                         "): ", e.code().message()));
      }
    }
    gate_.count_down();
    return absl::OkStatus();
  }
  void join() {
    for (auto& t : threads_)
      t.join();
    threads_.clear();
  }
  ~job_threads() { join(); }

 private:
  std::latch gate_{1};
  std::atomic<bool> abort_{false};
  std::vector<std::thread> threads_;
};

run_result setup_failure(const absl::Status& s) {
  run_result r;
  r.setup_failed = true;
  r.error = -ENOMEM;
  r.error_text = std::string(s.message());
  return r;
}

}  // namespace

run_result run(const job_options& o, blkdev& dev, std::vector<job_progress>* progress) {
  run_result r;
  latency_clock::get();  // calibrated here, before any job's clock starts
  uint64_t region = o.size / o.numjobs / o.bs * o.bs;
  if (const uint64_t zone = dev.limits().chunk_sectors << SECTOR_SHIFT; (dev.limits().features & BLK_FEAT_ZONED) && zone)
    region = o.size / o.numjobs / zone * zone;
  std::vector<job_progress> own(progress ? 0 : o.numjobs);
  std::vector<job_progress>& live = progress ? *progress : own;
  buffer_table table(o.iter == iter_kind::fixed ? o.numjobs * o.iodepth : 0);
  std::vector<job> jobs(o.numjobs);
  for (unsigned id = 0; id < o.numjobs; id++) {
    job& j = jobs[id];
    j.o = &o;
    j.dev = &dev;
    j.table = &table;
    j.live = &live[id];
    j.id = id;
    j.region_start = id * region;
    j.region_len = region;
    j.rng.s = (o.seed + id) * 0x9E3779B97F4A7C15ull | 1;
  }
  auto free_buffers = [&] {
    table.unregister_all();
    for (job& j : jobs)
      for (char* b : j.bufs)
        std::free(b);
  };
  if (absl::Status s = allocate_buffers(o, jobs, table); !s.ok()) {
    free_buffers();
    return setup_failure(s);
  }
  memcpy_target target;
  if (o.engine == ioengine::memcpy) {
    if (absl::Status s = target.map(o.size); !s.ok()) {
      free_buffers();
      return setup_failure(s);
    }
    for (job& j : jobs)
      j.memory = target.data();
  }

  // Each job prefills (if asked), then all wait for the slowest, so that the
  // measured phase starts together and its wall time is the run's.
  rusage ru0, ru1;
  uint64_t t0 = 0;
  std::barrier sync(static_cast<std::ptrdiff_t>(o.numjobs) + 1);
  job_threads threads;
  absl::Status started = threads.start(jobs, [&](job& j) {
    if (o.prefill && !j.memory)  // the memcpy engine's mapping is written whole already
      prefill(j);
    sync.arrive_and_wait();  // every prefill done: the clock starts
    sync.arrive_and_wait();
    if (!j.error)
      measured_phase(j);
    j.live->state.store(j.error ? 'X' : o.verify ? 'E' : '_', std::memory_order_relaxed);
  });
  if (!started.ok()) {
    free_buffers();
    return setup_failure(started);
  }
  sync.arrive_and_wait();
  getrusage(RUSAGE_SELF, &ru0);
  t0 = monotonic_ns();
  sync.arrive_and_wait();
  threads.join();
  r.seconds = static_cast<double>(monotonic_ns() - t0) / 1e9;
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
  for (job_progress& p : live)
    if (p.state.load(std::memory_order_relaxed) == 'E')
      p.state.store('_', std::memory_order_relaxed);
  free_buffers();
  return r;
}

}  // namespace iov::fio
