// blkdev.hpp: one interface to the in-process block drivers (brd, null_blk),
// so that tools drive either through the same calls: requests that carry an
// iov_iter of any type, and services (CRC, extent map, zone report) that never
// touch what the device does not store.
//
//   absl::StatusOr<std::unique_ptr<iov::blkdev>> dev = iov::blkdev_create("brd", {{"size", "64m"}});
//   if (!dev.ok()) return dev.status();
//   iov::iov_iter it;
//   iov::iov_iter_ubuf(&it, iov::ITER_SOURCE, buf, 8192);           // or a bvec, kvec, ... iterator
//   iov::blk_request rq{.op = iov::REQ_OP_WRITE, .sector = 16, .iter = &it};
//   if (int err = (*dev)->submit(rq)) return iov::blk_status(err, rq.error);   // -errno and why
//   uint32_t crc = ~0u;
//   (*dev)->crc32c(16, 16, &crc);                                   // ~crc: the standard CRC-32C
//
// The request (the kernel's struct bio, reduced to what a ramdisk uses):
//   op          REQ_OP_READ, WRITE, FLUSH, DISCARD, WRITE_ZEROES, and on a zoned
//               device ZONE_APPEND, ZONE_OPEN/CLOSE/FINISH/RESET/RESET_ALL
//   flags       REQ_FUA, REQ_PREFLUSH, REQ_NOUNMAP (write zeroes may keep pages)
//   sector      the first 512-byte sector; a zone append's sector names the
//               zone's start and comes back as where the data went
//   nr_sectors  the length of DISCARD and WRITE_ZEROES
//   iter        the data of READ (ITER_DEST) and WRITE/ZONE_APPEND (ITER_SOURCE),
//               any iterator type; the length is iov_iter_count(iter), and
//               the iterator ends advanced past what was transferred
// submit() returns 0 or a negative errno, the kernel's blk_status_to_errno():
//   -EINVAL      misaligned (sector / logical block), wrong iterator direction
//   -EIO         beyond the end of the device; a zone rule broken (write not at
//                the write pointer, past the zone's capacity, a full zone, ...)
//   -ENOSPC      the page budget (max_pages) or memory would be exceeded
//   -EOPNOTSUPP  an operation the device does not offer (see limits())
//   -ETOOMANYREFS / -EOVERFLOW  zone open / active resources exhausted
//   -EFAULT      the iterator ended before its count (an XARRAY hole)
// and sets rq.error to a sentence saying why. A request refused for its shape,
// its zone or the budget changes nothing; -EFAULT and a genuine out-of-memory
// can stop a transfer part way, as a failed bio can.
//
// submit() may be called from many threads at once: one virtual call per
// request, and inside a driver the copy loop is a template instantiated for
// the device's copy settings, chosen once per request. Data requests are
// synchronous: the buffer may be reused when submit() returns. The services
// (crc32c, map_extents, report_zones) may run alongside requests; over a
// range being written they see what a concurrent read would.
#pragma once


#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iov/bvec.hpp"
#include "iov/iov_iter.hpp"

namespace iov {

using sector_t = uint64_t;

// The kernel's enum req_op (values as include/linux/blk_types.h).
enum req_op : uint8_t {
  REQ_OP_READ = 0,
  REQ_OP_WRITE = 1,
  REQ_OP_FLUSH = 2,
  REQ_OP_DISCARD = 3,
  REQ_OP_ZONE_APPEND = 7,
  REQ_OP_WRITE_ZEROES = 9,
  REQ_OP_ZONE_OPEN = 10,
  REQ_OP_ZONE_CLOSE = 11,
  REQ_OP_ZONE_FINISH = 13,
  REQ_OP_ZONE_RESET = 15,
  REQ_OP_ZONE_RESET_ALL = 17,
};
const char* req_op_name(req_op op);
inline bool op_is_write(req_op op) { return op & 1; }  // as the kernel's: the low bit
inline bool op_is_zone_mgmt(req_op op) { return op >= REQ_OP_ZONE_OPEN && op <= REQ_OP_ZONE_RESET_ALL; }

// Request flags (the kernel's REQ_* bits of blk_opf_t; only these are used).
using blk_opf_t = uint32_t;
inline constexpr blk_opf_t REQ_FUA = 1u << 0;       // write through any cache
inline constexpr blk_opf_t REQ_PREFLUSH = 1u << 1;  // flush the cache first
inline constexpr blk_opf_t REQ_NOUNMAP = 1u << 2;   // WRITE_ZEROES: keep the storage

struct blk_request {
  req_op op = REQ_OP_READ;
  blk_opf_t flags = 0;
  sector_t sector = 0;
  sector_t nr_sectors = 0;      // DISCARD and WRITE_ZEROES only
  iov_iter* iter = nullptr;     // READ, WRITE, ZONE_APPEND only
  const char* error = nullptr;  // set by a failing submit(): why, in words (static storage)
};

// The negative errno and message of a failed request or service as an
// absl::Status (absl::ErrnoToStatus), for the C++ callers; OkStatus for 0.
absl::Status blk_status(int err, const char* why);

// The kernel's struct queue_limits, reduced: what a caller may send.
inline constexpr unsigned BLK_FEAT_WRITE_CACHE = 1u << 0;  // FLUSH and FUA mean something
inline constexpr unsigned BLK_FEAT_FUA = 1u << 1;
inline constexpr unsigned BLK_FEAT_ZONED = 1u << 2;
struct queue_limits {
  unsigned logical_block_size = 512;   // every sector and length is a multiple of it
  unsigned physical_block_size = 512;
  sector_t max_hw_discard_sectors = 0;  // 0: DISCARD is not supported
  unsigned discard_granularity = 0;     // bytes: what a discard can free (brd: a page)
  sector_t max_write_zeroes_sectors = 0;  // 0: WRITE_ZEROES is not supported
  sector_t chunk_sectors = 0;           // the zone size of a zoned device
  unsigned features = 0;                // BLK_FEAT_*
};

// How a driver moves bytes between its pages and the iterator: both the
// conversions the kernel made can be measured side by side, and the stores a
// memory-backed device wants.
//   copy_mode::modern   memcpy_to_page / memcpy_from_page / memset_page per piece
//   copy_mode::legacy   kmap_local_page, memcpy / memset, kunmap_local
//   copy_mode::nocache  as modern, but writes fill the driver's pages with
//                       copy_from_iter_nocache (streaming stores), as the
//                       kernel's pmem driver writes with _flushcache: a page
//                       written is not read again soon, and a cached copy
//                       would first read every line of it from memory
//   iteration_mode::inlined     iterate_and_advance2 with inlined steps
//   iteration_mode::outofline   generic_iterate with function-pointer steps
enum class copy_mode : uint8_t { modern, legacy, nocache };
enum class iteration_mode : uint8_t { inlined, outofline };

// An extent of the map service: NBD's base:allocation flags (and SEEK_DATA's
// view: data is what is not a hole).
inline constexpr unsigned BLK_EXTENT_HOLE = 1;  // no storage behind it
inline constexpr unsigned BLK_EXTENT_ZERO = 2;  // reads as zeros
// map_extents() with this finds only where nothing is stored and reads no
// data: what is stored is data (flags 0), zeros or not. Without it stored
// blocks that read as zeros are found too, at the cost of a pass over them.
inline constexpr unsigned BLK_MAP_ALLOCATION = 1;
struct blk_extent {
  sector_t sector;
  sector_t nr_sectors;
  unsigned flags;  // 0: data; ZERO: stored zeros; HOLE|ZERO: a hole; HOLE alone:
                   // unstored but not zero (beyond a zone's write pointer: 0xFF)
  bool operator==(const blk_extent&) const = default;
};

// The kernel's struct blk_zone (uapi values for type and cond).
enum blk_zone_type : uint8_t { BLK_ZONE_TYPE_CONVENTIONAL = 0x1, BLK_ZONE_TYPE_SEQWRITE_REQ = 0x2 };
enum blk_zone_cond : uint8_t {
  BLK_ZONE_COND_NOT_WP = 0x0,
  BLK_ZONE_COND_EMPTY = 0x1,
  BLK_ZONE_COND_IMP_OPEN = 0x2,
  BLK_ZONE_COND_EXP_OPEN = 0x3,
  BLK_ZONE_COND_CLOSED = 0x4,
  BLK_ZONE_COND_READONLY = 0xD,
  BLK_ZONE_COND_FULL = 0xE,
  BLK_ZONE_COND_OFFLINE = 0xF,
};
const char* blk_zone_cond_name(blk_zone_cond cond);
struct blk_zone {
  sector_t start;
  sector_t len;
  sector_t wp;
  blk_zone_type type;
  blk_zone_cond cond;
  sector_t capacity;
  bool operator==(const blk_zone&) const = default;
};

// What lend_pages() lent: the pieces, in order, as the kernel names memory
// (page, offset, length), valid while the lease holds; bvec_virt() is the
// address of a piece (there is no highmem to map).
// A lease holds an RCU read-side section from its first loan until release()
// or its end, so that pages freed meanwhile (a discard, an unmap) outlive the
// pieces. Like any read-side section it belongs to the thread that took it
// and must never be held across a wait (a slow client): send what the socket
// takes, release, and lend again later. Several loans may share one lease.
//
//   iov::blk_lease lease;
//   if (dev.lend_pages(sector, nr, &lease) == 0)
//     for (const iov::bio_vec& bv : lease.pieces()) send(fd, iov::bvec_virt(&bv), bv.bv_len, 0);
//   lease.release();   // the pages may go; the pieces are forgotten
class blk_lease {
 public:
  blk_lease() = default;
  ~blk_lease() { release(); }
  blk_lease(const blk_lease&) = delete;
  blk_lease& operator=(const blk_lease&) = delete;

  const std::vector<bio_vec>& pieces() const { return pieces_; }
  bool held() const { return held_; }
  // Ends the read-side section and forgets the pieces (keeping their storage
  // for the next loan).
  void release();

 private:
  friend class blkdev;
  void hold();
  bool held_ = false;
  std::vector<bio_vec> pieces_;
};

class blkdev {
 public:
  virtual ~blkdev() = default;
  blkdev(const blkdev&) = delete;
  blkdev& operator=(const blkdev&) = delete;

  // Executes one request, synchronously; thread-safe.
  virtual int submit(blk_request& rq) = 0;
  // Executes the requests in order, each as submit() would, and puts each
  // one's return value in results[i]; returns 0 when all succeeded, else the
  // first failure's. The outcome is that of the same submit() calls one
  // after the other (a failed request stops nothing after it); what a batch
  // buys is that the device sees the requests ahead, as the kernel's blk-mq
  // hands a plugged list to ->queue_rqs(): brd fetches the xarray slots of a
  // window's requests (kBatchWindow) before copying for the first, so that
  // their cache misses overlap. Consecutive READs of a window run inside one
  // RCU read-side section (a driver's READ must therefore never wait for a
  // grace period, nor for a lock whose holder may), and brd looks each one's
  // page up once in it. -EINVAL, with nothing submitted, when results is shorter than rqs.
  int submit_batch(std::span<blk_request> rqs, std::span<int> results);
  // submit_batch() takes the requests in windows of this many: far enough
  // ahead for the lookups' misses to overlap, near enough that what they
  // fetch is still cached when its request runs. prefetch_requests() and
  // submit_reads() are never handed more at once.
  static constexpr size_t kBatchWindow = 16;

  virtual const char* name() const = 0;             // "brd", "null_blk"
  sector_t get_capacity() const { return capacity_; }  // in 512-byte sectors
  const queue_limits& limits() const { return limits_; }

  // *crc = crc32c(*crc, the bytes a READ of the range would return), with the
  // kernel's convention (no inversion). Runs the device stores no data for
  // are folded in with crc32c_extend_zeroes, never read. 0 or -errno.
  int crc32c(sector_t sector, sector_t nr_sectors, uint32_t* crc, const char** why = nullptr);
  // Appends the range's extents, maximal runs in order, to *out. Granularity:
  // the logical block (brd: 512 bytes; a brd hole is a whole page).
  // `how`: 0 or BLK_MAP_ALLOCATION.
  int map_extents(sector_t sector, sector_t nr_sectors, std::vector<blk_extent>* out,
                  const char** why = nullptr, unsigned how = 0);
  // Lends the bytes a READ of the range would return, without copying them:
  // appends to the lease one bio_vec per piece of a stored page, and pieces
  // of one shared zero page for what is not stored (what a server sends). The lease keeps the pages alive (see blk_lease); a concurrent
  // write may show through, as in a READ racing it. -EOPNOTSUPP where the
  // device cannot lend (the caller then READs into a buffer of its own).
  int lend_pages(sector_t sector, sector_t nr_sectors, blk_lease* lease, const char** why = nullptr);
  // Stores whole pages without copying them (a server that received a
  // WRITE's payload straight into pages of its own): pages[i] becomes the
  // device's page at byte offset (index + i) << PAGE_SHIFT, and the page it
  // replaces is freed once no reader can hold it, so that a concurrent READ
  // or lent page sees the whole old page or the whole new one. The pages
  // must come from alloc_page() and be the caller's alone; the device takes
  // them whatever the outcome (stored, or freed). The device's rules for a
  // WRITE hold (page budget, zero detection). 0, or -errno as a WRITE of the
  // range would fail: -ENOSPC with nothing changed; -ENOMEM with a prefix
  // stored. -EOPNOTSUPP (the pages freed) where can_replace_pages() is false.
  // With `replaced`, the replaced pages are not freed: replaced[i] receives
  // the page pages[i] replaced (nullptr where there was none), or that a
  // page of zeros unmapped, which the device no longer refers to and the
  // caller frees, or reuses, once no reader can hold it (after a grace
  // period: free_page_rcu, call_rcu). Then the call waits for no grace
  // period, and may run inside a read-side section.
  int replace_pages(pgoff_t index, page** pages, unsigned nr, const char** why = nullptr,
                    page** replaced = nullptr);
  virtual bool can_replace_pages() const { return false; }
  // A hint from a caller that holds several requests at once (a server's
  // input): the pages holding these sectors will be looked up soon. brd
  // starts fetching each one's xarray slot, so that the lookups' cache misses
  // overlap instead of coming one after another, as submit_batch's window
  // does. Never waits, changes nothing; the sectors are not checked (any may
  // be beyond the end). At most kBatchWindow at a time is useful.
  virtual void prefetch_lookups(std::span<const sector_t>) {}
  // Appends up to nr_zones zones from the one holding `sector` on; returns how
  // many, or -EOPNOTSUPP on a device that is not zoned.
  virtual int report_zones(sector_t sector, unsigned nr_zones, std::vector<blk_zone>* out);

  // The copy settings; read once per request, so they may change at any time.
  void set_copy_mode(copy_mode m) { copy_mode_.store(m, std::memory_order_relaxed); }
  void set_iteration(iteration_mode i) { iteration_.store(i, std::memory_order_relaxed); }
  copy_mode get_copy_mode() const { return copy_mode_.load(std::memory_order_relaxed); }
  iteration_mode get_iteration() const { return iteration_.load(std::memory_order_relaxed); }

  // Pages of storage the device holds now (data and cache).
  virtual uint64_t nr_pages() const = 0;

 protected:
  blkdev(sector_t capacity, const queue_limits& limits) : capacity_(capacity), limits_(limits) {}
  // The services after the range has been checked against capacity and block size.
  virtual int do_crc32c(sector_t sector, sector_t nr_sectors, uint32_t* crc, const char** why) = 0;
  virtual int do_map_extents(sector_t sector, sector_t nr_sectors, std::vector<blk_extent>* out,
                             const char** why, unsigned how) = 0;
  virtual int do_lend_pages(sector_t, sector_t, std::vector<bio_vec>*, const char** why) {
    *why = "this device cannot lend its pages";
    return -EOPNOTSUPP;
  }
  // After the range has been checked; takes the pages in every case.
  virtual int do_replace_pages(pgoff_t, page** pages, unsigned nr, const char** why, page** replaced);
  // A hint before a window of submit_batch()'s requests is submitted: start
  // fetching what they will need, without waiting and changing nothing. The
  // requests are not checked yet: any field may be out of range.
  virtual void prefetch_requests(std::span<const blk_request>) {}
  // submit_batch() hands each run of consecutive READs of a window to this,
  // after prefetch_requests() and inside one read-side section: results[k]
  // = what submit(rqs[k]) would return. A driver may look a run's pages up
  // once, in the section its copies run in. The requests are not checked.
  virtual void submit_reads(std::span<blk_request> rqs, int* results);

 private:
  sector_t capacity_;
  queue_limits limits_;
  std::atomic<copy_mode> copy_mode_{copy_mode::modern};
  std::atomic<iteration_mode> iteration_{iteration_mode::inlined};
};

// Sets rq.error and returns err: `return blk_fail(rq, -EIO, "...")`.
inline int blk_fail(blk_request& rq, int err, const char* why) {
  rq.error = why;
  return err;
}

// Creates a device from the settings the tools take on their command lines:
//   brd:       size, detect_zeroes=off|on|unmap, max_pages
//   null_blk:  size, blocksize, memory_backed=0|1, cache_size (MiB), fua=0|1,
//              discard=0|1, zoned=0|1, zone_size (MiB), zone_capacity (MiB),
//              zone_nr_conv, zone_max_open, zone_max_active, max_pages
//   both:      copy_mode=modern|legacy|nocache, iteration=inline|outofline
// Sizes are parse_size's (parse_size.hpp: 4096, 64k, 1g, 4KiB; powers of
// 1024); a MiB setting given with a suffix is read as bytes. Defaults are the
// drivers' (brd_config, null_blk_config) except, as the programs want,
// null_blk's memory_backed=1 and discard=1 when memory backed and not zoned.
// A setting the driver does not have is an error naming it:
//
//   blkdev_create("brd", {{"zoned", "1"}})  ->  "setting zoned does not apply to brd"
using blkdev_settings = std::vector<std::pair<std::string, std::string>>;
absl::StatusOr<std::unique_ptr<blkdev>> blkdev_create(std::string_view driver, const blkdev_settings& settings);

}  // namespace iov
