// disk_model.hpp: flat models of the RAM-backed block drivers, for the
// drivers' tests: a byte vector plus which pages or blocks hold storage, and
// for null_blk's zoned mode the zone states, all written with plain loops and
// no part of the library, so that a driver's behaviour is checked against an
// independent statement of the rules.
//
//   iov_test::BrdModel model(1 << 20, iov_test::ZeroDetect::unmap);
//   model.write(4096, data.data(), data.size());
//   EXPECT_EQ(read_whole_device(dev), model.bytes());
//   EXPECT_EQ(to_model(extents), model.extents(0, model.sectors()));
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace iov_test {

inline constexpr uint64_t kSector = 512;
inline constexpr uint64_t kPage = 4096;

// CRC-32C, table-driven, the kernel's convention: no inversion in or out.
inline uint32_t model_crc32c(uint32_t crc, const unsigned char* p, size_t len) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; n++) {
      uint32_t c = n;
      for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
      t[n] = c;
    }
    return t;
  }();
  while (len--) crc = (crc >> 8) ^ table[(crc ^ *p++) & 0xff];
  return crc;
}

// An extent as the map service reports it, with NBD's flags.
inline constexpr unsigned kHole = 1, kZero = 2;
struct ModelExtent {
  uint64_t sector, nr_sectors;
  unsigned flags;
  bool operator==(const ModelExtent&) const = default;
};

// Extents from per-granule flags, merged into maximal runs.
inline std::vector<ModelExtent> merge_extents(uint64_t first_sector, uint64_t granule_sectors,
                                              const std::vector<unsigned>& flags) {
  std::vector<ModelExtent> out;
  for (size_t k = 0; k < flags.size(); k++) {
    uint64_t s = first_sector + k * granule_sectors;
    if (!out.empty() && out.back().flags == flags[k])
      out.back().nr_sectors += granule_sectors;
    else
      out.push_back({s, granule_sectors, flags[k]});
  }
  return out;
}

inline bool all_zero(const unsigned char* p, size_t len) {
  for (size_t k = 0; k < len; k++)
    if (p[k]) return false;
  return true;
}

// A request's buffer cut into segments: lengths summing to len (some zero)
// and the offset each starts at within its page (up to three pages for bvec).
struct Segment {
  size_t len, offset;
};
inline std::vector<Segment> random_segments(size_t len, std::mt19937_64& rng, size_t max_offset = kPage - 1) {
  size_t nr = 1 + rng() % 6;
  std::vector<size_t> cuts{0, len};
  for (size_t k = 1; k < nr; k++) cuts.push_back(len ? rng() % (len + 1) : 0);
  std::sort(cuts.begin(), cuts.end());
  std::vector<Segment> segs;
  for (size_t k = 1; k < cuts.size(); k++)
    segs.push_back({cuts[k] - cuts[k - 1], rng() % 3 == 0 ? 0 : rng() % (max_offset + 1)});
  return segs;
}

// Write data: per 512-byte block random bytes, zeros, or zeros but one byte,
// so that zero detection and the extent map meet every case.
inline std::vector<unsigned char> random_blocks(size_t len, std::mt19937_64& rng) {
  std::vector<unsigned char> v(len);
  for (size_t b = 0; b < len; b += kSector) {
    size_t n = std::min<size_t>(kSector, len - b);
    switch (rng() % 4) {
      case 0: break;  // zeros
      case 1: v[b + rng() % n] = static_cast<unsigned char>(1 + rng() % 255); break;
      default:
        for (size_t k = 0; k < n; k++) v[b + k] = static_cast<unsigned char>(rng());
    }
  }
  if (rng() % 4 == 0) std::fill(v.begin(), v.end(), 0);  // whole writes of zeros too
  return v;
}

// --- brd ---------------------------------------------------------------------

enum class ZeroDetect { off, on, unmap };

// The RAM disk: pages are stored or not; a page not stored reads as zeros.
class BrdModel {
 public:
  BrdModel(uint64_t size, ZeroDetect dz) : bytes_(size), stored_((size + kPage - 1) / kPage), dz_(dz) {}

  uint64_t size() const { return bytes_.size(); }
  uint64_t sectors() const { return bytes_.size() / kSector; }
  const std::vector<unsigned char>& bytes() const { return bytes_; }
  size_t stored_pages() const { return std::count(stored_.begin(), stored_.end(), true); }
  bool stored(size_t page) const { return stored_[page]; }

  // Each page's part: zero detection looks at the part alone.
  void write(uint64_t pos, const unsigned char* src, size_t len) {
    for_each_part(pos, len, [&](size_t page, size_t off, size_t n, size_t done) {
      const unsigned char* s = src + done;
      if (dz_ != ZeroDetect::off && all_zero(s, n)) {
        if (dz_ == ZeroDetect::unmap && n == kPage) unstore(page);
        else if (stored_[page]) std::memset(&bytes_[page * kPage + off], 0, n);
        return;
      }
      stored_[page] = true;
      std::memcpy(&bytes_[page * kPage + off], s, n);
    });
  }

  // Pages a write would add.
  size_t pages_needed(uint64_t pos, const unsigned char* src, size_t len) const {
    size_t needed = 0;
    for_each_part(pos, len, [&](size_t page, size_t, size_t n, size_t done) {
      if (stored_[page]) return;
      if (dz_ != ZeroDetect::off && all_zero(src + done, n)) return;
      needed++;
    });
    return needed;
  }

  // Only the pages the range covers whole lose their storage.
  void discard(uint64_t pos, uint64_t len) {
    for (size_t page = 0; page < stored_.size(); page++)
      if (page * kPage >= pos && (page + 1) * kPage <= pos + len) unstore(page);
  }

  void write_zeroes(uint64_t pos, uint64_t len, bool unmap) {
    std::memset(&bytes_[pos], 0, len);
    if (unmap) discard(pos, len);
  }

  // One flag per 512-byte sector; allocation_only: stored is data, zeros or not
  // (map_extents with BLK_MAP_ALLOCATION).
  std::vector<ModelExtent> extents(uint64_t sector, uint64_t nr, bool allocation_only = false) const {
    std::vector<unsigned> flags;
    for (uint64_t s = sector; s < sector + nr; s++) {
      if (!stored_[s * kSector / kPage]) flags.push_back(kHole | kZero);
      else flags.push_back(!allocation_only && all_zero(&bytes_[s * kSector], kSector) ? kZero : 0);
    }
    return merge_extents(sector, 1, flags);
  }

  uint32_t crc32c(uint32_t crc, uint64_t pos, uint64_t len) const { return model_crc32c(crc, &bytes_[pos], len); }

 private:
  template <class F>
  void for_each_part(uint64_t pos, size_t len, F&& f) const {
    for (size_t done = 0; done < len;) {
      size_t page = (pos + done) / kPage, off = (pos + done) % kPage;
      size_t n = std::min<size_t>(len - done, kPage - off);
      f(page, off, n, done);
      done += n;
    }
  }
  void unstore(size_t page) {
    stored_[page] = false;
    size_t end = std::min<size_t>((page + 1) * kPage, bytes_.size());
    std::fill(bytes_.begin() + page * kPage, bytes_.begin() + end, 0);
  }

  std::vector<unsigned char> bytes_;
  std::vector<bool> stored_;
  ZeroDetect dz_;
};

// --- null_blk ----------------------------------------------------------------

// Zone conditions and types with the uapi values, so tests can compare.
enum ZoneCond : uint8_t { kNotWp = 0, kEmpty = 1, kImpOpen = 2, kExpOpen = 3, kClosed = 4, kFull = 0xE };
struct ModelZone {
  uint64_t start, len, capacity, wp;  // sectors
  bool conventional;
  ZoneCond cond;
};
enum class ZoneOp { open, close, finish, reset, reset_all };

struct NullBlkModelConfig {
  uint64_t size;       // bytes
  unsigned blocksize;  // bytes
  bool zoned = false;
  uint64_t zone_sectors = 0, zone_capacity_sectors = 0;
  unsigned nr_conv = 0, max_open = 0, max_active = 0;  // as the device adjusted them
};

// null_blk memory backed: a block is stored or not (a block not stored reads
// as zeros); zoned, a sequential zone reads 0xFF from its write pointer on.
// The cache does not show in what a read returns, so it is not modelled.
class NullBlkModel {
 public:
  explicit NullBlkModel(const NullBlkModelConfig& c)
      : c_(c), bytes_(c.size), stored_(c.size / c.blocksize) {
    if (!c.zoned) return;
    for (uint64_t start = 0, i = 0; start < sectors(); start += c.zone_sectors, i++) {
      uint64_t len = std::min(c.zone_sectors, sectors() - start);
      if (i < c.nr_conv) zones_.push_back({start, len, len, start + len, true, kNotWp});
      else zones_.push_back({start, len, std::min(len, c.zone_capacity_sectors), start, false, kEmpty});
    }
    imp_close_next_ = c.nr_conv;
  }

  uint64_t sectors() const { return bytes_.size() / kSector; }
  const std::vector<ModelZone>& zones() const { return zones_; }
  size_t stored_pages() const {  // pages with any block stored
    size_t n = 0, per_page = kPage / c_.blocksize;
    for (size_t p = 0; p * per_page < stored_.size(); p++)
      n += std::any_of(stored_.begin() + p * per_page, stored_.begin() + std::min(stored_.size(), (p + 1) * per_page),
                       [](bool b) { return b; });
    return n;
  }
  size_t pages_needed(uint64_t pos, size_t len) const {  // without a cache
    size_t per_page = kPage / c_.blocksize, n = 0;
    for (uint64_t p = pos / kPage; p * kPage < pos + len; p++)
      n += std::none_of(stored_.begin() + p * per_page, stored_.begin() + std::min(stored_.size(), (p + 1) * per_page),
                        [](bool b) { return b; });
    return n;
  }

  // What a READ returns.
  std::vector<unsigned char> read(uint64_t pos, size_t len) const {
    std::vector<unsigned char> out(bytes_.begin() + pos, bytes_.begin() + pos + len);
    for (size_t k = 0; k < len; k += kSector)
      if (beyond_wp((pos + k) / kSector)) std::fill(out.begin() + k, out.begin() + k + kSector, 0xff);
    return out;
  }

  // A WRITE (or ZONE_APPEND at a zone's start): 0 or the errno the driver
  // must return; *where is where the data went.
  int write(uint64_t sector, const unsigned char* src, size_t len, bool append, uint64_t* where) {
    uint64_t nr = len / kSector;
    *where = sector;
    if (!c_.zoned) return store(sector, src, len), 0;
    ModelZone& z = zone_of(sector);
    if (z.conventional) {
      if (append) return -EIO;
      if (!zone_of(sector + std::max<uint64_t>(nr, 1) - 1).conventional) return -EINVAL;
      return store(sector, src, len), 0;
    }
    if (append && sector != z.start) return -EIO;
    if (z.cond == kFull) return -EIO;
    if (append) sector = z.wp;
    else if (sector != z.wp) return -EIO;
    if (z.wp + nr > z.start + z.capacity) return -EIO;
    if (z.cond == kEmpty || z.cond == kClosed) {
      if (int err = make_room(z)) return err;
      z.cond = kImpOpen;
    }
    store(sector, src, len);
    *where = sector;
    z.wp += nr;
    if (z.wp == z.start + z.capacity) z.cond = kFull;
    return 0;
  }

  void discard(uint64_t sector, uint64_t nr) {
    std::fill(bytes_.begin() + sector * kSector, bytes_.begin() + (sector + nr) * kSector, 0);
    for (uint64_t b = sector * kSector / c_.blocksize; b < (sector + nr) * kSector / c_.blocksize; b++)
      stored_[b] = false;
  }

  int zone_mgmt(ZoneOp op, uint64_t sector) {
    if (op == ZoneOp::reset_all) {
      for (ModelZone& z : zones_)
        if (!z.conventional && z.cond != kEmpty) reset(z);
      return 0;
    }
    ModelZone& z = zone_of(sector);
    if (z.conventional) return -EIO;
    switch (op) {
      case ZoneOp::open:
        if (z.cond == kExpOpen) return 0;
        if (z.cond == kFull) return -EIO;
        if (z.cond == kEmpty || z.cond == kClosed)
          if (int err = make_room(z)) return err;
        z.cond = kExpOpen;
        return 0;
      case ZoneOp::close:
        if (z.cond == kClosed) return 0;
        if (z.cond != kImpOpen && z.cond != kExpOpen) return -EIO;
        z.cond = z.wp == z.start ? kEmpty : kClosed;
        return 0;
      case ZoneOp::finish:
        if (z.cond == kFull) return 0;
        if (z.cond == kEmpty || z.cond == kClosed)
          if (int err = make_room(z)) return err;
        z.cond = kFull;
        z.wp = z.start + z.len;
        return 0;
      default:
        if (z.cond != kEmpty) reset(z);
        return 0;
    }
  }

  // One flag per block; allocation_only as above.
  std::vector<ModelExtent> extents(uint64_t sector, uint64_t nr, bool allocation_only = false) const {
    std::vector<unsigned> flags;
    uint64_t step = c_.blocksize / kSector;
    for (uint64_t s = sector; s < sector + nr; s += step) {
      if (beyond_wp(s)) flags.push_back(kHole);
      else if (!stored_[s * kSector / c_.blocksize]) flags.push_back(kHole | kZero);
      else flags.push_back(!allocation_only && all_zero(&bytes_[s * kSector], c_.blocksize) ? kZero : 0);
    }
    return merge_extents(sector, step, flags);
  }

  uint32_t crc32c(uint32_t crc, uint64_t pos, size_t len) const {
    std::vector<unsigned char> r = read(pos, len);
    return model_crc32c(crc, r.data(), r.size());
  }

 private:
  ModelZone& zone_of(uint64_t sector) { return zones_[sector / c_.zone_sectors]; }
  bool beyond_wp(uint64_t sector) const {
    if (!c_.zoned) return false;
    const ModelZone& z = zones_[sector / c_.zone_sectors];
    return !z.conventional && sector >= z.wp;
  }
  void store(uint64_t sector, const unsigned char* src, size_t len) {
    std::memcpy(&bytes_[sector * kSector], src, len);
    for (uint64_t b = sector * kSector / c_.blocksize; b < (sector * kSector + len) / c_.blocksize; b++)
      stored_[b] = true;
  }
  void reset(ModelZone& z) {
    z.cond = kEmpty;
    z.wp = z.start;
    discard(z.start, z.len);
  }
  size_t count(ZoneCond cond) const {
    return std::count_if(zones_.begin(), zones_.end(), [cond](const ModelZone& z) { return z.cond == cond; });
  }
  // The open and active limits for a zone about to open (EMPTY or CLOSED):
  // an implicitly open zone is closed to make room when that helps.
  int make_room(const ModelZone& z) {
    auto active_ok = [&] {
      return !c_.max_active || count(kExpOpen) + count(kImpOpen) + count(kClosed) < c_.max_active;
    };
    if (z.cond == kEmpty && !active_ok()) return -EOVERFLOW;
    if (!c_.max_open || count(kExpOpen) + count(kImpOpen) < c_.max_open) return 0;
    if (count(kImpOpen) && active_ok()) {
      size_t n = zones_.size(), k = imp_close_next_ < n ? imp_close_next_ : c_.nr_conv;
      for (size_t tries = c_.nr_conv; tries < n; tries++) {
        ModelZone& victim = zones_[k];
        k = k + 1 < n ? k + 1 : c_.nr_conv;
        if (victim.cond == kImpOpen) {
          victim.cond = victim.wp == victim.start ? kEmpty : kClosed;
          imp_close_next_ = k;
          return 0;
        }
      }
    }
    return -ETOOMANYREFS;
  }

  NullBlkModelConfig c_;
  std::vector<unsigned char> bytes_;
  std::vector<bool> stored_;
  std::vector<ModelZone> zones_;
  size_t imp_close_next_ = 0;
};

}  // namespace iov_test
