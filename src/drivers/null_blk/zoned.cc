// zoned.cc: null_blk's host-managed zones, after the kernel's
// drivers/block/null_blk/zoned.c: the zone states and their transitions, the
// open and active resource limits, writes at the write pointer, zone append,
// and the zone management operations.
//
//   ZONE_OPEN:   EMPTY/IMP_OPEN/CLOSED -> EXP_OPEN (EXP_OPEN: no-op; FULL: -EIO)
//   ZONE_CLOSE:  IMP_OPEN/EXP_OPEN -> CLOSED, or EMPTY if nothing was written
//   ZONE_FINISH: any but FULL -> FULL with wp = start + len (FULL: no-op)
//   ZONE_RESET:  any -> EMPTY with wp = start, its blocks discarded
//   WRITE:       EMPTY/CLOSED -> IMP_OPEN; FULL when wp reaches start + capacity
//
// One lock, zone_lock, covers every zone and the resource counts (the kernel
// locks each zone and takes zone_res_lock for the counts); requests hold it
// across their data transfer, as the kernel holds the zone's lock.
#include <algorithm>
#include <cerrno>
#include <mutex>

#include "iov_drivers/internal/null_blk.hpp"

namespace iov::drivers::internal {

namespace {

constexpr sector_t mb_to_sects(unsigned long mb) { return (sector_t{mb} << 20) >> SECTOR_SHIFT; }

// The kernel's blk_status values, as blk_status_to_errno() turns them.
constexpr int BLK_STS_OK = 0;
constexpr int BLK_STS_IOERR = -EIO;
constexpr int BLK_STS_ZONE_OPEN_RESOURCE = -ETOOMANYREFS;
constexpr int BLK_STS_ZONE_ACTIVE_RESOURCE = -EOVERFLOW;

int zone_fail(blk_request& rq, int err, const char* why) {
  if (err == BLK_STS_ZONE_OPEN_RESOURCE) why = "null_blk: too many open zones (zone_max_open)";
  if (err == BLK_STS_ZONE_ACTIVE_RESOURCE) why = "null_blk: too many active zones (zone_max_active)";
  return blk_fail(rq, err, why);
}

int null_close_zone(nullb* dev, nullb_zone* zone) {
  switch (zone->cond) {
    case BLK_ZONE_COND_CLOSED:
      return BLK_STS_OK;  // close operation on closed is not an error
    case BLK_ZONE_COND_IMP_OPEN:
      dev->nr_zones_imp_open--;
      break;
    case BLK_ZONE_COND_EXP_OPEN:
      dev->nr_zones_exp_open--;
      break;
    default:  // EMPTY, FULL
      return BLK_STS_IOERR;
  }
  if (zone->wp == zone->start) {
    zone->cond = BLK_ZONE_COND_EMPTY;
  } else {
    zone->cond = BLK_ZONE_COND_CLOSED;
    dev->nr_zones_closed++;
  }
  return BLK_STS_OK;
}

// Closes the next implicitly open zone, round robin from imp_close_zone_no.
void null_close_imp_open_zone(nullb* dev) {
  unsigned zno = dev->imp_close_zone_no;
  if (zno >= dev->nr_zones) zno = dev->dev.zone_nr_conv;
  for (unsigned i = dev->dev.zone_nr_conv; i < dev->nr_zones; i++) {
    nullb_zone* zone = &dev->zones[zno];
    zno++;
    if (zno >= dev->nr_zones) zno = dev->dev.zone_nr_conv;
    if (zone->cond == BLK_ZONE_COND_IMP_OPEN) {
      null_close_zone(dev, zone);
      dev->imp_close_zone_no = zno;
      return;
    }
  }
}

int null_check_active(nullb* dev) {
  if (!dev->dev.zone_max_active) return BLK_STS_OK;
  if (dev->nr_zones_exp_open + dev->nr_zones_imp_open + dev->nr_zones_closed < dev->dev.zone_max_active)
    return BLK_STS_OK;
  return BLK_STS_ZONE_ACTIVE_RESOURCE;
}

int null_check_open(nullb* dev) {
  if (!dev->dev.zone_max_open) return BLK_STS_OK;
  if (dev->nr_zones_exp_open + dev->nr_zones_imp_open < dev->dev.zone_max_open) return BLK_STS_OK;
  if (dev->nr_zones_imp_open && null_check_active(dev) == BLK_STS_OK) {
    null_close_imp_open_zone(dev);
    return BLK_STS_OK;
  }
  return BLK_STS_ZONE_OPEN_RESOURCE;
}

// ZBC's "manage open zone resources", with ZNS's active limit: may close an
// implicitly open zone to make room.
int null_check_zone_resources(nullb* dev, nullb_zone* zone) {
  switch (zone->cond) {
    case BLK_ZONE_COND_EMPTY:
      if (int ret = null_check_active(dev)) return ret;
      [[fallthrough]];
    case BLK_ZONE_COND_CLOSED:
      return null_check_open(dev);
    default:
      return BLK_STS_IOERR;  // never called for other states
  }
}

int null_zone_write(nullb* dev, blk_request& rq, bool append) {
  sector_t sector = rq.sector;
  const sector_t nr_sectors = iov_iter_count(rq.iter) >> SECTOR_SHIFT;
  nullb_zone* zone = &dev->zones[null_zone_no(dev, sector)];

  if (zone->type == BLK_ZONE_TYPE_CONVENTIONAL) {
    if (append) return blk_fail(rq, BLK_STS_IOERR, "null_blk: zone append to a conventional zone");
    // A write over several zones would have been split by the block layer:
    // accept it only if every zone it touches is conventional.
    const sector_t last = sector + std::max<sector_t>(nr_sectors, 1) - 1;
    if (dev->zones[null_zone_no(dev, last)].type != BLK_ZONE_TYPE_CONVENTIONAL)
      return blk_fail(rq, -EINVAL, "null_blk: write crosses from a conventional into a sequential zone");
    const char* why = nullptr;
    if (int err = null_check_space(dev, sector, nr_sectors << SECTOR_SHIFT, null_req_is_fua(dev, rq), &why))
      return blk_fail(rq, err, why);
    return null_process_cmd(dev, rq, REQ_OP_WRITE, sector, nr_sectors);
  }
  if (append && sector != zone->start)
    return blk_fail(rq, BLK_STS_IOERR, "null_blk: zone append at a sector that does not start a zone");

  if (zone->cond == BLK_ZONE_COND_FULL || zone->cond == BLK_ZONE_COND_READONLY ||
      zone->cond == BLK_ZONE_COND_OFFLINE)
    return blk_fail(rq, BLK_STS_IOERR, "null_blk: write to a full zone");

  // Regular writes must be at the write pointer; zone append writes there.
  if (append)
    sector = zone->wp;
  else if (sector != zone->wp)
    return blk_fail(rq, BLK_STS_IOERR, "null_blk: write not at the zone's write pointer");
  if (zone->wp + nr_sectors > zone->start + zone->capacity)
    return blk_fail(rq, BLK_STS_IOERR, "null_blk: write beyond the zone's capacity");

  // Before any state changes, so that -ENOSPC leaves the zone as it was.
  if (dev->dev.memory_backed) {
    const char* why = nullptr;
    if (int err = null_check_space(dev, sector, nr_sectors << SECTOR_SHIFT, null_req_is_fua(dev, rq), &why))
      return blk_fail(rq, err, why);
  }

  if (zone->cond == BLK_ZONE_COND_CLOSED || zone->cond == BLK_ZONE_COND_EMPTY) {
    if (int ret = null_check_zone_resources(dev, zone)) return zone_fail(rq, ret, nullptr);
    if (zone->cond == BLK_ZONE_COND_CLOSED) {
      dev->nr_zones_closed--;
      dev->nr_zones_imp_open++;
    } else if (zone->cond == BLK_ZONE_COND_EMPTY) {
      dev->nr_zones_imp_open++;
    }
    zone->cond = BLK_ZONE_COND_IMP_OPEN;
  }

  if (int ret = null_process_cmd(dev, rq, REQ_OP_WRITE, sector, nr_sectors)) return ret;

  if (append) rq.sector = sector;
  zone->wp += nr_sectors;
  if (zone->wp == zone->start + zone->capacity) {
    if (zone->cond == BLK_ZONE_COND_EXP_OPEN)
      dev->nr_zones_exp_open--;
    else if (zone->cond == BLK_ZONE_COND_IMP_OPEN)
      dev->nr_zones_imp_open--;
    zone->cond = BLK_ZONE_COND_FULL;
  }
  return BLK_STS_OK;
}

int null_open_zone(nullb* dev, nullb_zone* zone) {
  switch (zone->cond) {
    case BLK_ZONE_COND_EXP_OPEN:
      return BLK_STS_OK;  // open operation on exp open is not an error
    case BLK_ZONE_COND_EMPTY:
      if (int ret = null_check_zone_resources(dev, zone)) return ret;
      break;
    case BLK_ZONE_COND_IMP_OPEN:
      dev->nr_zones_imp_open--;
      break;
    case BLK_ZONE_COND_CLOSED:
      if (int ret = null_check_zone_resources(dev, zone)) return ret;
      dev->nr_zones_closed--;
      break;
    default:  // FULL
      return BLK_STS_IOERR;
  }
  zone->cond = BLK_ZONE_COND_EXP_OPEN;
  dev->nr_zones_exp_open++;
  return BLK_STS_OK;
}

int null_finish_zone(nullb* dev, nullb_zone* zone) {
  switch (zone->cond) {
    case BLK_ZONE_COND_FULL:
      return BLK_STS_OK;  // finish operation on full is not an error
    case BLK_ZONE_COND_EMPTY:
      if (int ret = null_check_zone_resources(dev, zone)) return ret;
      break;
    case BLK_ZONE_COND_IMP_OPEN:
      dev->nr_zones_imp_open--;
      break;
    case BLK_ZONE_COND_EXP_OPEN:
      dev->nr_zones_exp_open--;
      break;
    case BLK_ZONE_COND_CLOSED:
      if (int ret = null_check_zone_resources(dev, zone)) return ret;
      dev->nr_zones_closed--;
      break;
    default:
      return BLK_STS_IOERR;
  }
  zone->cond = BLK_ZONE_COND_FULL;
  zone->wp = zone->start + zone->len;
  return BLK_STS_OK;
}

int null_reset_zone(nullb* dev, nullb_zone* zone) {
  switch (zone->cond) {
    case BLK_ZONE_COND_EMPTY:
      return BLK_STS_OK;  // reset operation on empty is not an error
    case BLK_ZONE_COND_IMP_OPEN:
      dev->nr_zones_imp_open--;
      break;
    case BLK_ZONE_COND_EXP_OPEN:
      dev->nr_zones_exp_open--;
      break;
    case BLK_ZONE_COND_CLOSED:
      dev->nr_zones_closed--;
      break;
    case BLK_ZONE_COND_FULL:
      break;
    default:
      return BLK_STS_IOERR;
  }
  zone->cond = BLK_ZONE_COND_EMPTY;
  zone->wp = zone->start;
  if (dev->dev.memory_backed) return null_handle_discard(dev, zone->start, zone->len);
  return BLK_STS_OK;
}

int null_zone_mgmt(nullb* dev, blk_request& rq) {
  if (rq.op == REQ_OP_ZONE_RESET_ALL) {
    for (unsigned i = dev->dev.zone_nr_conv; i < dev->nr_zones; i++) {
      nullb_zone* zone = &dev->zones[i];
      if (zone->cond != BLK_ZONE_COND_EMPTY && zone->cond != BLK_ZONE_COND_READONLY &&
          zone->cond != BLK_ZONE_COND_OFFLINE)
        null_reset_zone(dev, zone);
    }
    return BLK_STS_OK;
  }
  nullb_zone* zone = &dev->zones[null_zone_no(dev, rq.sector)];
  if (zone->type == BLK_ZONE_TYPE_CONVENTIONAL)
    return blk_fail(rq, BLK_STS_IOERR, "null_blk: zone operation on a conventional zone");
  if (zone->cond == BLK_ZONE_COND_READONLY || zone->cond == BLK_ZONE_COND_OFFLINE)
    return blk_fail(rq, BLK_STS_IOERR, "null_blk: zone is read-only or offline");
  int ret;
  switch (rq.op) {
    case REQ_OP_ZONE_RESET:
      ret = null_reset_zone(dev, zone);
      return ret ? zone_fail(rq, ret, "null_blk: zone cannot be reset") : 0;
    case REQ_OP_ZONE_OPEN:
      ret = null_open_zone(dev, zone);
      return ret ? zone_fail(rq, ret, "null_blk: a full zone cannot be opened") : 0;
    case REQ_OP_ZONE_CLOSE:
      ret = null_close_zone(dev, zone);
      return ret ? zone_fail(rq, ret, "null_blk: only an open zone can be closed") : 0;
    case REQ_OP_ZONE_FINISH:
      ret = null_finish_zone(dev, zone);
      return ret ? zone_fail(rq, ret, "null_blk: zone cannot be finished") : 0;
    default:
      return blk_fail(rq, -EOPNOTSUPP, "null_blk: operation not supported");
  }
}

}  // namespace

int null_init_zoned_dev(nullb* dev, const char** why) {
  null_blk_config& conf = dev->dev;
  if (!conf.zone_size || conf.zone_size & (conf.zone_size - 1)) {
    *why = "null_blk: zone_size must be a power of two (MiB)";
    return -EINVAL;
  }
  if ((uint64_t{conf.zone_size} << 20) > conf.size) {
    *why = "null_blk: zone size larger than device capacity";
    return -EINVAL;
  }
  if (!conf.zone_capacity) conf.zone_capacity = conf.zone_size;
  if (conf.zone_capacity > conf.zone_size) {
    *why = "null_blk: zone capacity larger than zone size";
    return -EINVAL;
  }
  const sector_t zone_capacity_sects = mb_to_sects(conf.zone_capacity);
  const sector_t dev_capacity_sects = dev->capacity;
  dev->zone_size_sects = mb_to_sects(conf.zone_size);
  dev->zone_size_shift = static_cast<unsigned>(__builtin_ctzll(dev->zone_size_sects));
  dev->nr_zones = static_cast<unsigned>((dev_capacity_sects + dev->zone_size_sects - 1) >> dev->zone_size_shift);
  dev->zones.assign(dev->nr_zones, nullb_zone{});

  if (conf.zone_nr_conv >= dev->nr_zones) conf.zone_nr_conv = dev->nr_zones - 1;
  // Max active zones has to be < nbr of seq zones in order to be enforceable.
  if (conf.zone_max_active >= dev->nr_zones - conf.zone_nr_conv) conf.zone_max_active = 0;
  // Max open zones has to be <= max active zones.
  if (conf.zone_max_active && conf.zone_max_open > conf.zone_max_active)
    conf.zone_max_open = conf.zone_max_active;
  else if (conf.zone_max_open >= dev->nr_zones - conf.zone_nr_conv)
    conf.zone_max_open = 0;
  dev->imp_close_zone_no = conf.zone_nr_conv;

  sector_t sector = 0;
  for (unsigned i = 0; i < dev->nr_zones; i++, sector += dev->zone_size_sects) {
    nullb_zone* zone = &dev->zones[i];
    zone->start = sector;
    if (i < conf.zone_nr_conv) {
      zone->len = dev->zone_size_sects;
      zone->capacity = zone->len;
      zone->wp = zone->start + zone->len;
      zone->type = BLK_ZONE_TYPE_CONVENTIONAL;
      zone->cond = BLK_ZONE_COND_NOT_WP;
    } else {
      zone->wp = sector;
      zone->len = std::min(dev->zone_size_sects, dev_capacity_sects - zone->start);
      zone->capacity = std::min(zone->len, zone_capacity_sects);
      zone->type = BLK_ZONE_TYPE_SEQWRITE_REQ;
      zone->cond = BLK_ZONE_COND_EMPTY;
    }
  }
  return 0;
}

uint64_t null_zone_valid_read_len(nullb* dev, sector_t sector, uint64_t len) {
  const nullb_zone* zone = &dev->zones[null_zone_no(dev, sector)];
  const sector_t nr_sectors = len >> SECTOR_SHIFT;
  // Read must be below the write pointer position.
  if (zone->type == BLK_ZONE_TYPE_CONVENTIONAL || sector + nr_sectors <= zone->wp) return len;
  if (sector > zone->wp) return 0;
  return (zone->wp - sector) << SECTOR_SHIFT;
}

bool null_zone_beyond_wp(nullb* dev, sector_t sector) {
  const nullb_zone* zone = &dev->zones[null_zone_no(dev, sector)];
  return zone->type != BLK_ZONE_TYPE_CONVENTIONAL && sector >= zone->wp;
}

int null_process_zoned_cmd(nullb* dev, blk_request& rq) {
  std::lock_guard guard(dev->zone_lock);
  switch (rq.op) {
    case REQ_OP_WRITE:
      return null_zone_write(dev, rq, false);
    case REQ_OP_ZONE_APPEND:
      return null_zone_write(dev, rq, true);
    case REQ_OP_ZONE_RESET:
    case REQ_OP_ZONE_RESET_ALL:
    case REQ_OP_ZONE_OPEN:
    case REQ_OP_ZONE_CLOSE:
    case REQ_OP_ZONE_FINISH:
      return null_zone_mgmt(dev, rq);
    default:
      return null_process_cmd(dev, rq, rq.op, rq.sector, iov_iter_count(rq.iter) >> SECTOR_SHIFT);
  }
}

}  // namespace iov::drivers::internal

namespace iov {

int nullb_device::report_zones(sector_t sector, unsigned nr_zones, std::vector<blk_zone>* out) {
  drivers::internal::nullb* dev = nullb_.get();
  if (!dev->dev.zoned) return -EOPNOTSUPP;
  unsigned first_zone = drivers::internal::null_zone_no(dev, sector);
  if (sector >= dev->capacity || first_zone >= dev->nr_zones) return 0;
  nr_zones = std::min(nr_zones, dev->nr_zones - first_zone);
  std::lock_guard guard(dev->zone_lock);
  for (unsigned i = 0; i < nr_zones; i++) {
    const drivers::internal::nullb_zone& z = dev->zones[first_zone + i];
    out->push_back({z.start, z.len, z.wp, z.type, z.cond, z.capacity});
  }
  return static_cast<int>(nr_zones);
}

}  // namespace iov
