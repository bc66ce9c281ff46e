// fuzz_drivers: request sequences on a small brd or null_blk device (memory
// backed or not, with a write-back cache, discard, or host-managed zones with
// conventional ones first), each request's data carried by an iterator of any
// layout from fuzz_model.hpp, checked against a flat disk model: the result
// of every request (-EINVAL, -EIO, -ENOSPC, -EOPNOTSUPP, -EFAULT at an XARRAY
// hole), the bytes a read returns (zeros where nothing is stored, 0xFF past a
// zone's write pointer), what a write, discard or write-zeroes leaves, the
// zones' conditions and write pointers, brd's page count and budget, and the
// crc32c and extent-map services; and whole pages handed to brd with
// replace_pages (its budget, zero detection and bounds; null_blk refusing).
// A request goes alone or as a batch of one (submit_batch, whose look-ahead
// sees it unchecked). The copy and iteration modes change at random between
// requests. Not modelled, so left off: null_blk's zone_max_open,
// zone_max_active and max_pages, and null_blk writes torn by an XARRAY hole.
//
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_drivers
//   build/fuzz/fuzz/fuzz_drivers -max_total_time=60 fuzz/corpus/fuzz_drivers
//   IOV_FUZZ_TRACE=1 build/fuzz/fuzz/fuzz_drivers crash-...    # replay one input
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_model.hpp"
#include "iov_drivers/blkdev.hpp"
#include "iov_drivers/brd.hpp"
#include "iov_drivers/null_blk.hpp"

namespace {

using fuzz::input;
using iov::sector_t;
constexpr uint64_t MiB = uint64_t{1} << 20;

struct zone_model {
  sector_t start, len, cap, wp;
  bool conv;
  iov::blk_zone_cond cond;
};

// The disk as a reader sees it. bytes[] is zero wherever nothing is stored;
// `stored` is per page for brd, per block for null_blk.
struct disk {
  bool brd = true, backed = true, discard = false, zoned = false;
  iov::detect_zeroes dz = iov::detect_zeroes::off;
  uint64_t max_pages = 0;
  unsigned lbs = 512;  // logical block: brd 512, null_blk its blocksize
  sector_t capacity = 0;
  std::vector<unsigned char> bytes;
  std::vector<uint8_t> stored;
  std::vector<zone_model> zones;
  sector_t zone_sects = 0;

  size_t unit() const { return brd ? iov::PAGE_SIZE : lbs; }
  FUZZ_MODEL zone_model* zone_of(sector_t s) { return zoned ? &zones[s / zone_sects] : nullptr; }
  FUZZ_MODEL bool beyond_wp(sector_t s) {
    zone_model* z = zone_of(s);
    return z && !z->conv && s >= z->wp;
  }
  FUZZ_MODEL unsigned char read_byte(uint64_t off) { return beyond_wp(off >> iov::SECTOR_SHIFT) ? 0xff : bytes[off]; }
  FUZZ_MODEL void unstore(size_t u) {
    stored[u] = 0;
    std::fill(bytes.begin() + u * unit(), bytes.begin() + (u + 1) * unit(), 0);
  }
  FUZZ_MODEL uint64_t pages() const { return brd ? std::count(stored.begin(), stored.end(), 1) : 0; }
  // A read's bytes into the layout's model; a null_blk write's into the disk.
  FUZZ_MODEL void read_into(fuzz::layout& L, uint64_t pos, size_t n) {
    for (size_t k = 0; k < n; k++) L.put(k, read_byte(pos + k));
  }
  FUZZ_MODEL void store_blocks(const fuzz::layout& L, uint64_t pos, size_t n) {
    for (size_t k = 0; k < n; k++) bytes[pos + k] = L.get(k);
    for (size_t k = 0; k < n; k += lbs) stored[(pos + k) / lbs] = 1;
  }
  // What the services must say about [sector, sector + nr).
  FUZZ_MODEL uint32_t crc(uint32_t crc0, sector_t sector, sector_t nr) {
    static const std::vector<unsigned char> ff(iov::SECTOR_SIZE, 0xff);
    for (sector_t s = sector; s < sector + nr; s++)
      crc0 = fuzz::crc32c_table(crc0, beyond_wp(s) ? ff.data() : &bytes[s << iov::SECTOR_SHIFT], iov::SECTOR_SIZE);
    return crc0;
  }
  // allocation_only: map_extents with BLK_MAP_ALLOCATION (stored is data, zeros or not).
  FUZZ_MODEL std::vector<iov::blk_extent> extents(sector_t sector, sector_t nr, bool allocation_only = false) {
    std::vector<iov::blk_extent> out;
    const sector_t step = brd ? 1 : lbs >> iov::SECTOR_SHIFT;  // brd maps sectors, null_blk blocks
    for (sector_t s = sector; s < sector + nr; s += step) {
      uint64_t off = s << iov::SECTOR_SHIFT;
      unsigned flags = iov::BLK_EXTENT_HOLE;  // past the write pointer: unstored, not zero
      if (!beyond_wp(s)) {
        bool zero = true;
        for (uint64_t k = off; k < off + step * iov::SECTOR_SIZE; k++) zero &= !bytes[k];
        flags = !stored[off / unit()]          ? iov::BLK_EXTENT_HOLE | iov::BLK_EXTENT_ZERO
                : zero && !allocation_only ? iov::BLK_EXTENT_ZERO
                                           : 0;
      }
      if (!out.empty() && out.back().flags == flags) out.back().nr_sectors += step;
      else out.push_back({s, step, flags});
    }
    return out;
  }
};

std::unique_ptr<iov::blkdev> make_device(input& in, disk& d) {
  uint8_t kind = in.u8();
  d.brd = kind % 2 == 0;
  if (d.brd) {
    iov::brd_config c;
    c.size = (1 + in.below(48)) * iov::PAGE_SIZE - in.below(8) * iov::SECTOR_SIZE;
    c.detect_zeroes = static_cast<iov::detect_zeroes>(in.below(3));
    c.max_pages = in.u8() % 4 == 0 ? in.below(8) : 0;
    d.dz = c.detect_zeroes;
    d.max_pages = c.max_pages;
    d.capacity = c.size >> iov::SECTOR_SHIFT;
    d.stored.assign((c.size + iov::PAGE_SIZE - 1) / iov::PAGE_SIZE, 0);
    d.bytes.assign(d.stored.size() * iov::PAGE_SIZE, 0);
    fuzz::trace("brd: size %llu, detect_zeroes %d, max_pages %llu", (unsigned long long)c.size, int(c.detect_zeroes),
                (unsigned long long)c.max_pages);
    auto dev = iov::brd_device::create(c);
    FUZZ_CHECK(dev.ok());
    return std::move(*dev);
  }
  iov::null_blk_config c;
  c.blocksize = 512u << in.below(4);
  c.memory_backed = in.u8() % 8 != 0;
  c.cache_size = in.u8() % 3 == 0;  // 1 MiB: a few large writes fill it and flush pages
  c.fua = in.u8() & 1;
  c.discard = in.u8() & 1;
  c.zoned = kind & 2;
  if (c.zoned) {
    c.zone_size = 1 + in.below(2);
    c.zone_capacity = in.below(2);  // 1 MiB in a 2 MiB zone: capacity < len
    uint64_t full = 1 + in.below(c.zone_size == 1 ? 3 : 1), part = in.below(c.zone_size * MiB / c.blocksize);
    c.size = full * c.zone_size * MiB + part * c.blocksize;  // a smaller last zone, sometimes
    c.zone_nr_conv = static_cast<unsigned>(in.below(full + (part != 0)));
  } else {
    c.size = (1 + in.below(c.cache_size ? 512 : 64)) * iov::PAGE_SIZE;
  }
  d.backed = c.memory_backed;
  d.discard = c.discard && c.memory_backed && !c.zoned;
  d.zoned = c.zoned;
  d.lbs = c.blocksize;
  d.capacity = c.size >> iov::SECTOR_SHIFT;
  d.bytes.assign(c.size, 0);
  d.stored.assign(c.size / c.blocksize, 0);
  if (d.zoned) {
    d.zone_sects = c.zone_size * MiB >> iov::SECTOR_SHIFT;
    sector_t cap = (c.zone_capacity ? c.zone_capacity : c.zone_size) * MiB >> iov::SECTOR_SHIFT;
    for (sector_t s = 0; s < d.capacity; s += d.zone_sects) {
      sector_t len = std::min(d.zone_sects, d.capacity - s);
      bool conv = d.zones.size() < c.zone_nr_conv;
      d.zones.push_back({s, len, conv ? len : std::min(len, cap), conv ? s + len : s, conv,
                         conv ? iov::BLK_ZONE_COND_NOT_WP : iov::BLK_ZONE_COND_EMPTY});
    }
  }
  fuzz::trace("null_blk: size %llu, bs %u, backed %d, cache %lu, fua %d, discard %d, zones %zu (%u conv)",
              (unsigned long long)c.size, c.blocksize, c.memory_backed, c.cache_size, c.fua, c.discard,
              d.zones.size(), c.zone_nr_conv);
  auto dev = iov::nullb_device::create(c);
  FUZZ_CHECK(dev.ok());
  return std::move(*dev);
}

// The block layer's checks of a range: 0, -EINVAL (misaligned) or -EIO (past the end).
int range_error(const disk& d, sector_t sector, uint64_t bytes) {
  if (bytes % d.lbs || sector % (d.lbs >> iov::SECTOR_SHIFT)) return -EINVAL;
  uint64_t nr = bytes >> iov::SECTOR_SHIFT;
  return sector > d.capacity || nr > d.capacity - sector ? -EIO : 0;
}
int sectors_error(const disk& d, sector_t sector, sector_t nr) {
  return nr > d.capacity ? -EIO : range_error(d, sector, nr << iov::SECTOR_SHIFT);
}

// brd: what a write of the layout's next n bytes at pos does to the pages, or
// -ENOSPC when it would need more than the budget (then nothing changes).
FUZZ_MODEL int brd_write(disk& d, const fuzz::layout& L, uint64_t pos, size_t n, size_t done, bool apply) {
  uint64_t needed = 0;
  for (uint64_t off = 0; off < n;) {
    size_t idx = (pos + off) / iov::PAGE_SIZE, len = std::min<uint64_t>(n - off, iov::PAGE_SIZE - (pos + off) % iov::PAGE_SIZE);
    bool zero = d.dz != iov::detect_zeroes::off && L.zero_at(off, len);
    if (!apply) {
      needed += !d.stored[idx] && !zero;
    } else if (off < done || (off == done && done < n)) {  // reached: this piece, or the one that stops short
      if (zero && d.dz == iov::detect_zeroes::unmap && len == iov::PAGE_SIZE) {
        d.unstore(idx);
      } else if (!zero || d.stored[idx]) {
        d.stored[idx] = 1;
        for (size_t k = off; k < std::min<size_t>(off + len, done); k++) d.bytes[pos + k] = L.get(k);
      }
    }
    off += len;
  }
  return !apply && d.max_pages && d.pages() + needed > d.max_pages ? -ENOSPC : 0;
}

// A zoned WRITE or ZONE_APPEND of nr sectors: the error, or 0 with *at (the
// sector written) and the zone advanced.
int zoned_write(disk& d, iov::req_op op, sector_t sector, sector_t nr, sector_t* at) {
  zone_model* z = d.zone_of(sector);
  bool append = op == iov::REQ_OP_ZONE_APPEND;
  if (z->conv) {
    if (append) return -EIO;
    return d.zone_of(sector + std::max<sector_t>(nr, 1) - 1)->conv ? (*at = sector, 0) : -EINVAL;
  }
  if (append && sector != z->start) return -EIO;
  if (z->cond == iov::BLK_ZONE_COND_FULL || (!append && sector != z->wp)) return -EIO;
  if (z->wp + nr > z->start + z->cap) return -EIO;
  *at = z->wp;
  if (z->cond == iov::BLK_ZONE_COND_EMPTY || z->cond == iov::BLK_ZONE_COND_CLOSED) z->cond = iov::BLK_ZONE_COND_IMP_OPEN;
  z->wp += nr;
  if (z->wp == z->start + z->cap) z->cond = iov::BLK_ZONE_COND_FULL;
  return 0;
}

int zone_mgmt(disk& d, iov::req_op op, sector_t sector) {
  if (op == iov::REQ_OP_ZONE_RESET_ALL) {
    for (zone_model& z : d.zones)
      if (!z.conv && z.cond != iov::BLK_ZONE_COND_EMPTY) zone_mgmt(d, iov::REQ_OP_ZONE_RESET, z.start);
    return 0;
  }
  if (sector >= d.capacity || sector % d.zone_sects) return -EINVAL;
  zone_model& z = *d.zone_of(sector);
  if (z.conv) return -EIO;
  bool open = z.cond == iov::BLK_ZONE_COND_IMP_OPEN || z.cond == iov::BLK_ZONE_COND_EXP_OPEN;
  switch (op) {
    case iov::REQ_OP_ZONE_OPEN:
      if (z.cond == iov::BLK_ZONE_COND_FULL) return -EIO;
      z.cond = iov::BLK_ZONE_COND_EXP_OPEN;
      return 0;
    case iov::REQ_OP_ZONE_CLOSE:
      if (z.cond == iov::BLK_ZONE_COND_CLOSED) return 0;
      if (!open) return -EIO;
      z.cond = z.wp == z.start ? iov::BLK_ZONE_COND_EMPTY : iov::BLK_ZONE_COND_CLOSED;
      return 0;
    case iov::REQ_OP_ZONE_FINISH:
      z.cond = iov::BLK_ZONE_COND_FULL;
      z.wp = z.start + z.len;
      return 0;
    default:  // RESET: empty again, its blocks discarded
      z.cond = iov::BLK_ZONE_COND_EMPTY;
      z.wp = z.start;
      if (d.backed)
        for (sector_t s = z.start; s < z.start + z.len; s += d.lbs >> iov::SECTOR_SHIFT) d.unstore((s << iov::SECTOR_SHIFT) / d.lbs);
      return 0;
  }
}

// Discard and write-zeroes on the model (brd frees whole pages only;
// null_blk's write-zeroes with REQ_NOUNMAP stores zeros).
FUZZ_MODEL void model_trim(disk& d, iov::req_op op, sector_t sector, sector_t nr, bool unmap) {
  uint64_t pos = sector << iov::SECTOR_SHIFT, end = (sector + nr) << iov::SECTOR_SHIFT;
  if (!d.brd) {
    const bool store = op == iov::REQ_OP_WRITE_ZEROES && !unmap && d.backed;
    for (uint64_t p = pos; p < end; p += d.lbs) {
      d.unstore(p / d.lbs);
      if (store) d.stored[p / d.lbs] = 1;
    }
    return;
  }
  for (uint64_t p = pos; p < end;) {
    size_t idx = p / iov::PAGE_SIZE;
    uint64_t stop = std::min<uint64_t>(end, (idx + 1) * iov::PAGE_SIZE);
    bool whole = p % iov::PAGE_SIZE == 0 && stop - p == iov::PAGE_SIZE;
    if (whole && (op == iov::REQ_OP_DISCARD || unmap)) d.unstore(idx);
    else if (op == iov::REQ_OP_WRITE_ZEROES) std::fill(d.bytes.begin() + p, d.bytes.begin() + stop, 0);
    p = stop;
  }
}

void check_services(disk& d, iov::blkdev& dev, sector_t sector, sector_t nr, uint32_t crc0);

sector_t pick_sector(input& in, disk& d) {
  sector_t s;
  switch (in.u8() % 5) {
    case 0: s = in.below(d.capacity + 2); break;
    case 1: s = d.capacity - std::min<sector_t>(d.capacity, in.below(65)); break;
    case 2: {
      if (!d.zoned) { s = in.below(d.capacity / 8 + 1) * 8; break; }
      const zone_model& z = d.zones[in.below(d.zones.size())];
      s = in.u8() & 1 ? z.wp : z.start;
      break;
    }
    case 3: s = in.u64(); break;
    default: s = 0; break;
  }
  return in.u8() % 4 ? s & ~sector_t{(d.lbs >> iov::SECTOR_SHIFT) - 1} : s;
}

void op_request(input& in, disk& d, iov::blkdev& dev) {
  static constexpr iov::req_op kOps[] = {
      iov::REQ_OP_READ, iov::REQ_OP_WRITE, iov::REQ_OP_READ, iov::REQ_OP_WRITE, iov::REQ_OP_FLUSH,
      iov::REQ_OP_DISCARD, iov::REQ_OP_WRITE_ZEROES, iov::REQ_OP_ZONE_APPEND, iov::REQ_OP_ZONE_OPEN,
      iov::REQ_OP_ZONE_CLOSE, iov::REQ_OP_ZONE_FINISH, iov::REQ_OP_ZONE_RESET, iov::REQ_OP_ZONE_RESET_ALL,
      static_cast<iov::req_op>(5)};
  iov::blk_request rq{.op = kOps[in.u8() % 14], .flags = in.u8() & 7u, .sector = pick_sector(in, d)};
  bool data = rq.op == iov::REQ_OP_READ || rq.op == iov::REQ_OP_WRITE || rq.op == iov::REQ_OP_ZONE_APPEND;
  bool trim = rq.op == iov::REQ_OP_DISCARD || rq.op == iov::REQ_OP_WRITE_ZEROES;
  fuzz::layout L;
  if (data) {
    L.build(in);
    if (in.u8() % 8) {  // mostly whole blocks
      L.count -= L.count % d.lbs;
      iov::iov_iter_truncate(&L.it, L.count);
    }
    rq.iter = &L.it;
  } else if (trim) {
    rq.nr_sectors = in.u8() & 1 ? in.below(d.capacity + 2) : in.below(64);
  }
  static constexpr iov::copy_mode kModes[] = {iov::copy_mode::modern, iov::copy_mode::legacy, iov::copy_mode::nocache};
  dev.set_copy_mode(kModes[in.u8() % 3]);
  dev.set_iteration(in.u8() & 1 ? iov::iteration_mode::outofline : iov::iteration_mode::inlined);
  const size_t n = data ? L.count : 0, reach = data ? L.reach(n) : 0;
  const bool write = iov::op_is_write(rq.op);
  const sector_t nr = n >> iov::SECTOR_SHIFT;
  const uint64_t pos = rq.sector << iov::SECTOR_SHIFT;
  if (!d.brd && d.backed && data && write && reach < n) return;  // a torn null_blk block is not modelled
  const bool zone_op = iov::op_is_zone_mgmt(rq.op);
  bool supported = rq.op == iov::REQ_OP_READ || rq.op == iov::REQ_OP_WRITE || rq.op == iov::REQ_OP_FLUSH;
  if (d.brd) supported |= trim;
  else supported |= (rq.op == iov::REQ_OP_DISCARD && d.discard) || (rq.op == iov::REQ_OP_WRITE_ZEROES && !d.zoned) ||
                    ((zone_op || rq.op == iov::REQ_OP_ZONE_APPEND) && d.zoned);
  // The expected result, applying the model's changes as it goes (an error
  // is found before anything changes; -EFAULT stops part way).
  int want = 0;
  size_t moved = n;  // bytes the iterator must end advanced by
  sector_t at = rq.sector;
  if (!supported) {
    want = -EOPNOTSUPP;
  } else if (data) {
    want = write != (L.dir == iov::ITER_SOURCE) ? -EINVAL : range_error(d, rq.sector, n);
    if (!want && n && write && d.zoned) want = zoned_write(d, rq.op, rq.sector, nr, &at);
    if (!want && n && write && d.brd) want = brd_write(d, L, pos, n, reach, false);
    if (!want && n && (d.brd || d.backed)) {
      if (reach < n) want = -EFAULT, moved = reach;
      if (write && d.brd) brd_write(d, L, pos, n, reach, true);
      if (write && !d.brd) d.store_blocks(L, at << iov::SECTOR_SHIFT, n);
      if (!write) d.read_into(L, pos, moved);
    }
  } else if (trim) {
    want = sectors_error(d, rq.sector, rq.nr_sectors);
    if (!want) model_trim(d, rq.op, rq.sector, rq.nr_sectors, !(rq.flags & iov::REQ_NOUNMAP));
  } else if (zone_op) {
    want = zone_mgmt(d, rq.op, rq.sector);
  }
  iov::iov_iter it0 = L.it;
  fuzz::trace("%s sector %llu, %zu bytes (%llu sectors), flags %u: want %d", iov::req_op_name(rq.op),
              (unsigned long long)rq.sector, n, (unsigned long long)rq.nr_sectors, rq.flags, want);
  // Alone, or as a batch of one: the device's look-ahead then sees the
  // request before anything has checked it.
  int got;
  if (in.u8() & 1)
    got = dev.submit(rq);
  else
    dev.submit_batch({&rq, 1}, {&got, 1});
  fuzz::trace("  -> %d%s%s", got, rq.error ? ": " : "", rq.error ? rq.error : "");
  FUZZ_CHECK(got == want && (got == 0) == (rq.error == nullptr));
  if (got && got != -EFAULT) {
    FUZZ_CHECK(fuzz::same_iter(it0, L.it));  // refused: nothing moved
    return;
  }
  if (rq.op == iov::REQ_OP_ZONE_APPEND && n) FUZZ_CHECK(rq.sector == at);
  if (data) {
    L.advance(moved);
    L.check("request");
  }
  // Read back what a change touched, in whole pages (or blocks): a bug that
  // strays into a neighbour shows there.
  sector_t first = write ? at : rq.sector, end = first + (data ? nr : rq.nr_sectors);
  if (zone_op && rq.op != iov::REQ_OP_ZONE_RESET_ALL) end = first + d.zone_of(first)->len;
  const sector_t align = std::max<sector_t>(d.unit() >> iov::SECTOR_SHIFT, 1);
  first -= first % align;
  end = std::min(d.capacity, (end + align - 1) / align * align);
  if (!(write || trim || zone_op) || end <= first) return;
  if (end - first <= 512) {
    check_services(d, dev, first, end - first, 0);
  } else {  // a long range (a zone): its ends
    check_services(d, dev, first, 256, 0);
    check_services(d, dev, end - 256, 256, 0);
  }
}

// Reads back through the services: crc32c, the extent map, the zone report
// and brd's page count, against the model.
void check_services(disk& d, iov::blkdev& dev, sector_t sector, sector_t nr, uint32_t crc0) {
  int want = sectors_error(d, sector, nr);
  if (!want && !d.brd && !d.backed) want = -EOPNOTSUPP;
  uint32_t crc = crc0;
  std::vector<iov::blk_extent> map, allocation;
  int got_crc = dev.crc32c(sector, nr, &crc), got_map = dev.map_extents(sector, nr, &map);
  int got_alloc = dev.map_extents(sector, nr, &allocation, nullptr, iov::BLK_MAP_ALLOCATION);
  fuzz::trace("services %llu + %llu: crc %d, map %d (%zu extents), allocation %d, want %d",
              (unsigned long long)sector, (unsigned long long)nr, got_crc, got_map, map.size(), got_alloc, want);
  FUZZ_CHECK(got_crc == want && got_map == want && got_alloc == want);
  if (!want)
    FUZZ_CHECK(crc == d.crc(crc0, sector, nr) && map == d.extents(sector, nr) &&
               allocation == d.extents(sector, nr, true));
  std::vector<iov::blk_zone> zones;
  int nz = dev.report_zones(0, static_cast<unsigned>(d.zones.size() + 1), &zones);
  FUZZ_CHECK(nz == (d.zoned ? static_cast<int>(d.zones.size()) : -EOPNOTSUPP));
  for (size_t k = 0; k < zones.size(); k++) {
    const zone_model& z = d.zones[k];
    FUZZ_CHECK(zones[k] == (iov::blk_zone{z.start, z.len, z.wp, z.conv ? iov::BLK_ZONE_TYPE_CONVENTIONAL
                                                                       : iov::BLK_ZONE_TYPE_SEQWRITE_REQ,
                                          z.cond, z.cap}));
  }
  if (d.brd) FUZZ_CHECK(dev.nr_pages() == d.pages());
}

// Whole pages handed over (blkdev::replace_pages): the same rules as a
// WRITE of those pages, so the same model; beyond the end (or a partial last
// page) -EINVAL; null_blk cannot.
void op_replace(input& in, disk& d, iov::blkdev& dev) {
  const unsigned nr = in.u8() % 5;
  const uint64_t cap_pages = d.capacity / (iov::PAGE_SIZE >> iov::SECTOR_SHIFT);
  const iov::pgoff_t index = in.u8() % 16 ? in.below(cap_pages + 2) : in.u64();
  std::vector<unsigned char> bytes(nr * iov::PAGE_SIZE);
  std::vector<iov::page*> pages;
  for (unsigned k = 0; k < nr; k++) {
    const uint8_t kind = in.u8();
    for (size_t b = 0; b < iov::PAGE_SIZE; b++)  // zeros, a zero page with one byte set, or a pattern
      bytes[k * iov::PAGE_SIZE + b] = kind % 3 == 0 ? 0 : kind % 3 == 1 ? (b == kind % iov::PAGE_SIZE ? kind : 0)
                                                                         : static_cast<unsigned char>(kind + b * 7);
    iov::page* pg = iov::alloc_page(iov::GFP_KERNEL);
    FUZZ_CHECK(pg);
    std::memcpy(iov::page_address(pg), bytes.data() + k * iov::PAGE_SIZE, iov::PAGE_SIZE);
    pages.push_back(pg);
  }
  auto zero = [&](unsigned k) {
    return d.dz != iov::detect_zeroes::off &&
           std::all_of(bytes.begin() + k * iov::PAGE_SIZE, bytes.begin() + (k + 1) * iov::PAGE_SIZE,
                       [](unsigned char c) { return c == 0; });
  };
  int want = 0;
  if (!d.brd) {
    want = -EOPNOTSUPP;
  } else if (index > cap_pages || nr > cap_pages - index) {
    want = -EINVAL;
  } else {
    uint64_t needed = 0;
    for (unsigned k = 0; k < nr; k++) needed += !d.stored[index + k] && !zero(k);
    if (d.max_pages && d.pages() + needed > d.max_pages) want = -ENOSPC;
  }
  const char* why = nullptr;
  const int got = dev.replace_pages(index, pages.data(), nr, &why);
  fuzz::trace("replace_pages %llu + %u: %d (want %d)%s%s", (unsigned long long)index, nr, got, want,
              why ? ": " : "", why ? why : "");
  FUZZ_CHECK(got == want && dev.can_replace_pages() == d.brd);
  if (want || !nr) return;
  for (unsigned k = 0; k < nr; k++) {
    const size_t idx = index + k;
    if (zero(k) && d.dz == iov::detect_zeroes::unmap) {
      d.unstore(idx);
    } else if (!zero(k) || d.stored[idx]) {
      d.stored[idx] = 1;
      std::copy_n(bytes.begin() + k * iov::PAGE_SIZE, iov::PAGE_SIZE, d.bytes.begin() + idx * iov::PAGE_SIZE);
    }
  }
  const sector_t per_page = iov::PAGE_SIZE >> iov::SECTOR_SHIFT;
  check_services(d, dev, index * per_page, std::min<sector_t>(nr * per_page, 512), 0);
}

void op_services(input& in, disk& d, iov::blkdev& dev) {
  sector_t sector = pick_sector(in, d), rest = d.capacity - std::min(sector, d.capacity);
  sector_t nr = in.u8() % 8 == 7 ? rest : in.below(1024);  // the whole rest (slow on MiB zones) now and then
  check_services(d, dev, sector, nr, in.u32());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  input in(data, size);
  disk d;
  std::unique_ptr<iov::blkdev> dev = make_device(in, d);
  FUZZ_CHECK(dev && dev->get_capacity() == d.capacity && dev->limits().logical_block_size == d.lbs);
  for (int n = 0; n < 32 && !in.empty(); n++) {
    const uint8_t op = in.u8() % 8;
    if (op < 6)
      op_request(in, d, *dev);
    else if (op == 6)
      op_services(in, d, *dev);
    else
      op_replace(in, d, *dev);
  }
  op_services(in, d, *dev);
  return 0;
}
