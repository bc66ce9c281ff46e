// blkdev.cc: what every driver shares: the services' range checks, names for
// ops and zone conditions, errno -> absl::Status, and the CRC of runs the
// device does not store.
#include "iov_drivers/blkdev.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "iov/crc32c.hpp"
#include "iov/rcu.hpp"
#include "iov_drivers/internal/services.hpp"

namespace iov {

const char* req_op_name(req_op op) {
  switch (op) {
    case REQ_OP_READ: return "READ";
    case REQ_OP_WRITE: return "WRITE";
    case REQ_OP_FLUSH: return "FLUSH";
    case REQ_OP_DISCARD: return "DISCARD";
    case REQ_OP_ZONE_APPEND: return "ZONE_APPEND";
    case REQ_OP_WRITE_ZEROES: return "WRITE_ZEROES";
    case REQ_OP_ZONE_OPEN: return "ZONE_OPEN";
    case REQ_OP_ZONE_CLOSE: return "ZONE_CLOSE";
    case REQ_OP_ZONE_FINISH: return "ZONE_FINISH";
    case REQ_OP_ZONE_RESET: return "ZONE_RESET";
    case REQ_OP_ZONE_RESET_ALL: return "ZONE_RESET_ALL";
  }
  return "UNKNOWN";
}

const char* blk_zone_cond_name(blk_zone_cond cond) {
  switch (cond) {
    case BLK_ZONE_COND_NOT_WP: return "NOT_WP";
    case BLK_ZONE_COND_EMPTY: return "EMPTY";
    case BLK_ZONE_COND_IMP_OPEN: return "IMP_OPEN";
    case BLK_ZONE_COND_EXP_OPEN: return "EXP_OPEN";
    case BLK_ZONE_COND_CLOSED: return "CLOSED";
    case BLK_ZONE_COND_READONLY: return "READONLY";
    case BLK_ZONE_COND_FULL: return "FULL";
    case BLK_ZONE_COND_OFFLINE: return "OFFLINE";
  }
  return "UNKNOWN";
}

absl::Status blk_status(int err, const char* why) {
  if (err == 0) return absl::OkStatus();
  return absl::ErrnoToStatus(-err, why ? why : "");
}

int blkdev::crc32c(sector_t sector, sector_t nr_sectors, uint32_t* crc, const char** why) {
  const char* ignored;
  const char** w = why ? why : &ignored;
  if (int err = drivers::internal::blk_check_sectors(sector, nr_sectors, capacity_, limits_.logical_block_size, w))
    return err;
  return do_crc32c(sector, nr_sectors, crc, w);
}

int blkdev::map_extents(sector_t sector, sector_t nr_sectors, std::vector<blk_extent>* out, const char** why,
                        unsigned how) {
  const char* ignored;
  const char** w = why ? why : &ignored;
  if (int err = drivers::internal::blk_check_sectors(sector, nr_sectors, capacity_, limits_.logical_block_size, w))
    return err;
  return do_map_extents(sector, nr_sectors, out, w, how);
}

int blkdev::submit_batch(std::span<blk_request> rqs, std::span<int> results) {
  if (results.size() < rqs.size()) return -EINVAL;
  int first_err = 0;
  for (size_t i = 0; i < rqs.size(); i += kBatchWindow) {
    const size_t end = std::min(rqs.size(), i + kBatchWindow);
    // A run of READs goes to submit_reads() inside one read-side section, so
    // that each page's section in the driver nests (a thread-local
    // increment): the kernel's rcu_read_lock() is a preempt count, where our
    // outermost one calls into liburcu (6% of brd's batched 4 KiB reads on
    // Zen 5). A window that starts with one opens it before the prefetch
    // pass, whose section then nests too. READs never wait for a grace
    // period; anything else may (a discard's deferred free waits when it
    // cannot allocate), so it runs outside.
    bool in_section = rqs[i].op == REQ_OP_READ;
    if (in_section) rcu_read_lock();
    prefetch_requests(rqs.subspan(i, end - i));
    for (size_t k = i; k < end;) {
      size_t run = k;
      while (run < end && rqs[run].op == REQ_OP_READ) run++;
      if (run == k) {
        results[k] = submit(rqs[k]);
        k++;
        continue;
      }
      if (!in_section) rcu_read_lock();
      submit_reads(rqs.subspan(k, run - k), &results[k]);
      rcu_read_unlock();
      in_section = false;
      k = run;
    }
    for (size_t k = i; k < end && !first_err; k++) first_err = results[k];
  }
  return first_err;
}

void blkdev::submit_reads(std::span<blk_request> rqs, int* results) {
  for (size_t k = 0; k < rqs.size(); k++) results[k] = submit(rqs[k]);
}

int blkdev::report_zones(sector_t, unsigned, std::vector<blk_zone>*) { return -EOPNOTSUPP; }

namespace drivers::internal {

namespace {
// crc32c(0, n bytes of c), n > 0, by doubling: F(2m) = combine(F(m), F(m), m).
uint32_t crc_of_run(unsigned char c, uint64_t n) {
  unsigned char block[64];
  std::memset(block, c, sizeof block);
  if (n <= sizeof block) return iov::crc32c(0, block, static_cast<size_t>(n));
  const uint32_t unit = iov::crc32c(0, block, sizeof block);
  uint64_t units = n / sizeof block, rest = n % sizeof block;
  int top = 63 - __builtin_clzll(units);
  uint32_t acc = unit;  // F(1 unit), then F(prefix of the bits of units)
  uint64_t acc_len = sizeof block;
  for (int bit = top - 1; bit >= 0; bit--) {
    acc = crc32c_combine(acc, acc, static_cast<size_t>(acc_len));
    acc_len *= 2;
    if (units >> bit & 1) {
      acc = crc32c_combine(acc, unit, sizeof block);
      acc_len += sizeof block;
    }
  }
  return rest ? crc32c_combine(acc, iov::crc32c(0, block, static_cast<size_t>(rest)), static_cast<size_t>(rest))
              : acc;
}
}  // namespace

uint32_t crc32c_extend_fill(uint32_t crc, unsigned char c, uint64_t n) {
  if (n == 0) return crc;
  // crc32c(crc, B) == crc32c(crc, zeros) ^ crc32c(0, B): the update is linear.
  uint32_t extended = crc32c_extend_zeroes(crc, static_cast<size_t>(n));
  return c == 0 ? extended : extended ^ crc_of_run(c, n);
}

void crc_builder::data(const void* p, size_t len) {
  flush();
  crc32c_update(&state_, p, len);
}

void crc_builder::flush() {
  if (!pending_len_) return;
  if (pending_byte_ == 0) {
    crc32c_update_zeroes(&state_, static_cast<size_t>(pending_len_));
  } else {  // rare (null_blk's zoned blocks past the write pointer): through a finished CRC
    uint32_t crc = crc32c_extend_fill(crc32c_final(&state_), pending_byte_, pending_len_);
    crc32c_init(&state_, crc);
  }
  pending_len_ = 0;
}

}  // namespace drivers::internal

int blkdev::lend_pages(sector_t sector, sector_t nr_sectors, blk_lease* lease, const char** why) {
  const char* ignored;
  const char** w = why ? why : &ignored;
  if (int err = drivers::internal::blk_check_sectors(sector, nr_sectors, capacity_, limits_.logical_block_size, w))
    return err;
  lease->hold();
  return do_lend_pages(sector, nr_sectors, &lease->pieces_, w);
}

int blkdev::replace_pages(pgoff_t index, page** pages, unsigned nr, const char** why, page** replaced) {
  const char* ignored;
  const char** w = why ? why : &ignored;
  const sector_t per_page = PAGE_SIZE >> SECTOR_SHIFT;
  if (replaced)
    std::fill(replaced, replaced + nr, nullptr);
  if (!can_replace_pages())
    return do_replace_pages(index, pages, nr, w, replaced);  // frees them, says why
  if (index > capacity_ / per_page || nr > capacity_ / per_page - index) {
    for (unsigned i = 0; i < nr; i++) free_page(pages[i]);
    *w = "pages beyond the end of the device";
    return -EINVAL;
  }
  return nr ? do_replace_pages(index, pages, nr, w, replaced) : 0;
}

int blkdev::do_replace_pages(pgoff_t, page** pages, unsigned nr, const char** why, page**) {
  for (unsigned i = 0; i < nr; i++) free_page(pages[i]);
  *why = "this device cannot take pages whole";
  return -EOPNOTSUPP;
}

void blk_lease::hold() {
  if (!held_) rcu_read_lock();
  held_ = true;
}

void blk_lease::release() {
  pieces_.clear();
  if (held_) rcu_read_unlock();
  held_ = false;
}

namespace drivers::internal {

page* zero_page() {
  static const page zeros{};
  return const_cast<page*>(&zeros);  // read only: a source of zeros, never written
}

void lend_zeroes(uint64_t bytes, std::vector<bio_vec>* out) {
  while (bytes) {
    const auto n = static_cast<unsigned>(std::min<uint64_t>(bytes, PAGE_SIZE));
    out->push_back({zero_page(), n, 0});
    bytes -= n;
  }
}

}  // namespace drivers::internal

}  // namespace iov
