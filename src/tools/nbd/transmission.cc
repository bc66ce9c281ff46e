// transmission.cc: requests and their replies (see transmission.hpp).
#include "nbd/transmission.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "iov/iov.hpp"
#include "nbd/log.hpp"

namespace iov::nbd {

namespace {
constexpr size_t kMaxDescriptors = 2048;              // per BLOCK_STATUS reply (the client asks again for the rest)
constexpr uint64_t kMapSlice = 1 << 20;               // bytes of the map asked of the device at a time
constexpr uint64_t kMaxMapBytes = uint64_t{1} << 32;  // of the device mapped per BLOCK_STATUS reply
}  // namespace

static_assert(2 * transmission::kMaxReadRuns + 1 <= output_queue::kReplySegments,
              "the output queue keeps room for a READ reply of kMaxReadRuns chunks");

transmission::transmission(const context& ctx, const negotiated& neg, transport& t, input_buffer& in, output_queue& out,
                           payload_budget::listener* loop, page_recycler* recycler)
    : ctx_(ctx),
      neg_(neg),
      t_(t),
      in_(in),
      out_(out),
      writer_(ctx.dev, ctx.locks),
      large_(ctx, writer_, loop),
      pages_(recycler) {
  if (neg_.any_offset)
    ctx_.locks.add_partial_writer();  // its writes of parts of blocks read them back
}

transmission::~transmission() {
  if (neg_.any_offset)
    ctx_.locks.remove_partial_writer();
}

step transmission::take() {
  if (in_payload_) {
    const step s = large_.resume(in_);
    if (s == step::done)
      finish_payload();
    return s;
  }
  if (in_.available() < request_size())
    return in_.need(request_size());
  if (ahead_ == 0)
    prefetch_ahead();
  request rq;
  if (!(neg_.extended ? decode_extended_request(in_.data(), &rq) : decode_request(in_.data(), &rq)))
    return step::fail;
  return on_request(rq);
}

// The whole requests already in the input, up to a window of them: the
// device is told which pages their READs and inline WRITEs will look up
// (blkdev::prefetch_lookups), so that with several requests waiting their
// lookups' misses overlap, as in brd's batched READs, instead of each
// request missing alone when it is served (a READ's allocation map, a
// WRITE's page replacement). A hint only: what it decodes is decoded again
// when taken, and a malformed header is the take's to refuse.
void transmission::prefetch_ahead() {
  sector_t sectors[blkdev::kBatchWindow];
  size_t n = 0, at = 0;
  const size_t header = request_size(), available = in_.available();
  unsigned whole = 0;
  while (whole < blkdev::kBatchWindow && available - at >= header) {
    request rq;
    if (!(neg_.extended ? decode_extended_request(in_.data() + at, &rq) : decode_request(in_.data() + at, &rq)))
      break;
    const bool payload = carries_payload(rq);
    if (payload && (rq.length > kInlinePayload || available - at - header < rq.length))
      break;  // received apart, or not all here
    at += header + (payload ? rq.length : 0);
    whole++;
    if (rq.type == NBD_CMD_READ || rq.type == NBD_CMD_WRITE)
      sectors[n++] = rq.offset >> SECTOR_SHIFT;
  }
  ahead_ = whole;
  if (n > 1)  // one alone is looked up now: nothing to overlap
    ctx_.dev.prefetch_lookups({sectors, n});
}

io transmission::fill() {
  const bool empty = in_.available() == 0;
  if (in_payload_ && empty && large_.receives_directly())
    return large_.receive(t_);
  const io r = in_.fill(t_);
  if (r == io::done && empty && !in_payload_ && out_.empty())
    t_.progress();  // the first bytes of a request after a pause: its timeout counts from here
  return r;
}

// Does a payload follow the header? A WRITE's always; with extended headers,
// whatever request says so (a WRITE that does not is refused, and sends none).
bool transmission::carries_payload(const request& rq) const {
  return neg_.extended ? (rq.flags & NBD_CMD_FLAG_PAYLOAD_LEN) != 0 : rq.type == NBD_CMD_WRITE;
}

step transmission::on_request(const request& rq) {
  if (ahead_)
    ahead_--;  // a whole request, so taken now
  const size_t header = request_size();
  const bool payload_follows = carries_payload(rq);
  if (payload_follows) {
    if (rq.length > ctx_.max_payload)
      return step::fail;  // not a client that read our block sizes; and the payload may never come
    if (rq.length > kInlinePayload) {
      in_.consume(header);
      const char* message = nullptr;
      const uint32_t error = refusal(rq, &message);
      in_payload_ = true;
      const step s = large_.start(rq, error, message, in_);
      if (s == step::done)
        finish_payload();
      return s;
    }
    if (in_.available() < header + rq.length)
      return in_.need(header + rq.length);
  }
  in_.consume(header);
  if (rq.type == NBD_CMD_DISC)
    return step::close;  // after the replies already queued
  const void* payload = in_.data();
  if (payload_follows)
    in_.consume(rq.length);
  handle_request(rq, payload);
  t_.progress();
  return step::done;
}

// A large WRITE's payload received and written, or drained.
void transmission::finish_payload() {
  in_payload_ = false;
  if (large_.error())
    reply_error(large_.rq(), large_.error(), large_.message());
  else
    reply_ok(large_.rq());
  t_.progress();
}

// The protocol's error for a request this server will not execute, with why
// in words; 0 for one it will.
uint32_t transmission::refusal(const request& rq, const char** message) const {
  const uint64_t size = ctx_.dev.get_capacity() << SECTOR_SHIFT;
  const bool in_range = rq.offset <= size && rq.length <= size - rq.offset;
  const bool aligned = neg_.any_offset || ctx_.block_aligned(rq.offset, rq.length);
  auto refuse = [message](uint32_t error, const char* why) {
    *message = why;
    return error;
  };
  const uint16_t known = NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE | NBD_CMD_FLAG_DF | NBD_CMD_FLAG_REQ_ONE |
                         NBD_CMD_FLAG_FAST_ZERO | (neg_.extended ? NBD_CMD_FLAG_PAYLOAD_LEN : 0);
  if (rq.flags & ~known)
    return refuse(NBD_EINVAL, "unknown command flags");
  if (neg_.extended && carries_payload(rq) != (rq.type == NBD_CMD_WRITE))
    return refuse(NBD_EINVAL, rq.type == NBD_CMD_WRITE ? "a WRITE without NBD_CMD_FLAG_PAYLOAD_LEN"
                                                       : "a payload this command does not take");
  const bool writes = rq.type == NBD_CMD_WRITE || rq.type == NBD_CMD_TRIM || rq.type == NBD_CMD_WRITE_ZEROES;
  if (writes && ctx_.exp.read_only)
    return refuse(NBD_EPERM, "the export is read-only");
  switch (rq.type) {
    case NBD_CMD_READ:
      if (!in_range)
        return refuse(NBD_EINVAL, "read beyond the end of the export");
      if (rq.length > ctx_.max_payload)
        return refuse(NBD_EINVAL, "read larger than the maximum payload");
      if (!aligned)
        return refuse(NBD_EINVAL, "read not aligned to the minimum block size");
      return 0;
    case NBD_CMD_WRITE:
      if (!in_range)
        return refuse(NBD_ENOSPC, "write beyond the end of the export");
      if (!aligned)
        return refuse(NBD_EINVAL, "write not aligned to the minimum block size");
      return 0;
    case NBD_CMD_FLUSH:
      return 0;
    case NBD_CMD_TRIM:
      return in_range ? 0 : refuse(NBD_ENOSPC, "trim beyond the end of the export");
    case NBD_CMD_WRITE_ZEROES:
      if (!ctx_.dev.limits().max_write_zeroes_sectors)
        return refuse(NBD_EINVAL, "this device cannot write zeroes (not advertised)");
      if (!in_range)
        return refuse(NBD_ENOSPC, "write zeroes beyond the end of the export");
      if (!aligned)
        return refuse(NBD_EINVAL, "write zeroes not aligned to the minimum block size");
      return 0;
    case NBD_CMD_BLOCK_STATUS:
      if (!neg_.structured || !neg_.meta_allocation)
        return refuse(NBD_EINVAL, "no metadata context was negotiated");
      if (!in_range || rq.length == 0)
        return refuse(NBD_EINVAL, "block status beyond the end of the export");
      return 0;
    case NBD_CMD_CACHE:
      return in_range ? 0 : refuse(NBD_EINVAL, "cache beyond the end of the export");
    default:
      return refuse(NBD_EINVAL, "unknown command");
  }
}

void transmission::handle_request(const request& rq, const void* payload) {
  const char* message = nullptr;
  if (uint32_t error = refusal(rq, &message))
    return reply_error(rq, error, message);
  switch (rq.type) {
    case NBD_CMD_READ:
      return queue_read(rq);
    case NBD_CMD_WRITE:
      return handle_write(rq, payload);
    case NBD_CMD_FLUSH: {
      blk_request br{.op = REQ_OP_FLUSH};
      if (submit_or_reply(rq, br, "flush failed", /*optional=*/true))
        reply_ok(rq);
      return;
    }
    case NBD_CMD_TRIM: {
      // Advisory: discard the whole blocks inside the range, if the device can.
      const uint64_t lbs = ctx_.dev.limits().logical_block_size;
      const uint64_t s = (rq.offset + lbs - 1) / lbs * lbs, e = (rq.offset + rq.length) / lbs * lbs;
      if (e > s && ctx_.dev.limits().max_hw_discard_sectors) {
        block_locks::guard g(ctx_.locks, s / lbs, e / lbs);
        blk_request br{.op = REQ_OP_DISCARD, .sector = s >> SECTOR_SHIFT, .nr_sectors = (e - s) >> SECTOR_SHIFT};
        if (!submit_or_reply(rq, br, "trim failed", /*optional=*/true))
          return;
      }
      return reply_ok(rq);
    }
    case NBD_CMD_WRITE_ZEROES:
      return handle_write_zeroes(rq);
    case NBD_CMD_BLOCK_STATUS:
      return reply_block_status(rq);
    default:  // NBD_CMD_CACHE: a RAM disk has nothing to prefetch
      return reply_ok(rq);
  }
}

// Submits br; on failure queues the error reply, with the driver's reason
// (or `what`), and returns false. An optional operation the device lacks
// (-EOPNOTSUPP) counts as done.
bool transmission::submit_or_reply(const request& rq, blk_request& br, const char* what, bool optional) {
  const int err = ctx_.dev.submit(br);
  if (err == 0 || (optional && err == -EOPNOTSUPP))
    return true;
  reply_error(rq, nbd_errno(err), br.error ? br.error : what);
  return false;
}

// One copy from the input buffer, into pages the device keeps whole where it
// takes them (so that a concurrent READ never sees half of this WRITE in a
// page), else into its own pages.
void transmission::handle_write(const request& rq, const void* payload) {
  const unsigned flags = rq.flags & NBD_CMD_FLAG_FUA ? REQ_FUA : 0u;
  const char* why = nullptr;
  int err;
  if (ctx_.replaces && ctx_.block_aligned(rq.offset, rq.length) && pages_.prepare(rq.offset, rq.length)) {
    pages_.fill(payload, rq.length);
    err = writer_.commit(pages_, rq.offset, rq.length, flags, &why);
  } else {
    err = writer_.write(rq.offset, rq.length, static_cast<const unsigned char*>(payload), flags, &why);
  }
  if (err)
    return reply_error(rq, nbd_errno(err), why ? why : "write failed");
  reply_ok(rq);
}

// Native on both drivers: brd frees or clears pages, null_blk unstores or
// stores zeros; NO_HOLE asks to keep the storage (REQ_NOUNMAP). So
// FAST_ZERO is always honoured (the partial blocks of an unaligned range
// are written, which is fast too).
void transmission::handle_write_zeroes(const request& rq) {
  const char* why = nullptr;
  const int err = writer_.write(
      rq.offset, rq.length, nullptr,
      (rq.flags & NBD_CMD_FLAG_NO_HOLE ? REQ_NOUNMAP : 0u) | (rq.flags & NBD_CMD_FLAG_FUA ? REQ_FUA : 0u), &why);
  if (err)
    return reply_error(rq, nbd_errno(err), why ? why : "write zeroes failed");
  reply_ok(rq);
}

// A chunk's header in the negotiated form: structured, or extended (which
// also carries the request's offset).
void transmission::queue_chunk_header(const request& rq, uint16_t flags, uint16_t type, uint32_t length) {
  unsigned char head[kExtendedReplySize];
  const structured_reply r{.flags = flags, .type = type, .cookie = rq.cookie, .length = length};
  if (neg_.extended) {
    encode_extended_reply(head, r, rq.offset);
    return out_.queue_bytes(head, kExtendedReplySize);
  }
  encode_structured_reply(head, r);
  out_.queue_bytes(head, kStructuredReplySize);
}

// With structured replies but not extended headers, a success without data
// to a request other than READ may be a simple reply (the protocol allows
// it): libnbd then takes it in one recv instead of two, a sixth of what a
// 4 KiB WRITE costs the client.
void transmission::reply_ok(const request& rq) {
  if (!neg_.structured || (!neg_.extended && rq.type != NBD_CMD_READ)) {
    unsigned char head[kSimpleReplySize];
    encode_simple_reply(head, 0, rq.cookie);
    return out_.queue_bytes(head, kSimpleReplySize);
  }
  queue_chunk_header(rq, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE, 0);
}

void transmission::reply_error(const request& rq, uint32_t error, const char* message) {
  if (!neg_.structured) {
    unsigned char head[kSimpleReplySize];
    encode_simple_reply(head, error, rq.cookie);
    return out_.queue_bytes(head, kSimpleReplySize);
  }
  const auto length = static_cast<uint16_t>(std::min(std::strlen(message), kMaxErrorMessage));
  queue_chunk_header(rq, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_ERROR, static_cast<uint32_t>(kErrorSize + length));
  unsigned char body[kErrorSize];
  encode_error(body, error, length);
  out_.queue_bytes(body, sizeof body);
  out_.queue_bytes(message, length);
}

// The headers now; the data when it is sent (output_queue::flush), so a READ
// holds nothing while it waits: a simple reply; one OFFSET_DATA chunk when
// the client asked not to fragment (DF); else the range in runs of data and
// of zeros, the zeros as OFFSET_HOLE chunks (read_runs).
void transmission::queue_read(const request& rq) {
  if (rq.length == 0)
    return reply_ok(rq);  // no data chunk: an empty OFFSET_DATA is not allowed
  if (!ctx_.lends && !out_.reserve_window()) {
    log_event(event::no_memory, "out of memory for a connection's read window: READ refused with ENOMEM");
    return reply_error(rq, NBD_ENOMEM, "out of memory for the read window");
  }
  if (!neg_.structured) {
    unsigned char head[kSimpleReplySize];
    encode_simple_reply(head, 0, rq.cookie);
    out_.queue_bytes(head, kSimpleReplySize);
    return out_.queue_device(rq.offset, rq.length);
  }
  const size_t runs = rq.flags & NBD_CMD_FLAG_DF ? 0 : read_runs(rq);
  if (runs == 0)
    runs_.assign(1, {rq.offset, rq.length, false});
  for (size_t k = 0; k < runs_.size(); k++) {
    const read_run& r = runs_[k];
    const uint16_t done = k + 1 == runs_.size() ? NBD_REPLY_FLAG_DONE : 0;
    if (r.zero) {
      unsigned char body[kOffsetHoleSize];
      encode_offset_hole(body, r.offset, static_cast<uint32_t>(r.length));
      queue_chunk_header(rq, done, NBD_REPLY_TYPE_OFFSET_HOLE, kOffsetHoleSize);
      out_.queue_bytes(body, sizeof body);
      continue;
    }
    unsigned char body[kOffsetDataSize];
    encode_offset_data(body, r.offset);
    queue_chunk_header(rq, done, NBD_REPLY_TYPE_OFFSET_DATA, static_cast<uint32_t>(kOffsetDataSize + r.length));
    out_.queue_bytes(body, sizeof body);
    out_.queue_device(r.offset, r.length);
  }
}

// The READ's range as runs of data and of holes (what is not stored and
// reads as zeros: brd's absent pages, null_blk's unstored blocks), into
// runs_: how many, or 0 to send it as one data chunk (a device error, a map
// that is one data run). At most kMaxReadRuns, so that the output queue has
// room for the reply: the last one then covers the rest as data, its holes
// included. Stored zeros go as data, as from nbdkit and qemu-nbd: finding
// them read every page of every READ once more before it was sent (14% of
// the server's profile on 4 KiB random reads; see docs/nbd.md).
size_t transmission::read_runs(const request& rq) {
  runs_.clear();
  extents_.clear();
  const uint64_t lbs = ctx_.dev.limits().logical_block_size, end = rq.offset + rq.length;
  const uint64_t first = rq.offset / lbs * lbs, last = (end + lbs - 1) / lbs * lbs;  // the covering blocks
  if (ctx_.dev.map_extents(first >> SECTOR_SHIFT, (last - first) >> SECTOR_SHIFT, &extents_, nullptr,
                           BLK_MAP_ALLOCATION) != 0)
    return 0;
  uint64_t at = rq.offset;
  for (const blk_extent& e : extents_) {
    const bool zero = e.flags & BLK_EXTENT_ZERO;
    const uint64_t s = std::max<uint64_t>(e.sector << SECTOR_SHIFT, rq.offset);
    const uint64_t t = std::min<uint64_t>((e.sector + e.nr_sectors) << SECTOR_SHIFT, end);
    if (t <= s)
      continue;
    if (s != at)
      return 0;  // not the maximal runs in order that map_extents promises: no holes then
    at = t;
    if (!runs_.empty() && runs_.back().zero == zero) {
      runs_.back().length += t - s;
    } else if (runs_.size() + 1 == kMaxReadRuns) {
      runs_.push_back({s, end - s, false});
      at = end;
      break;
    } else {
      runs_.push_back({s, t - s, zero});
    }
  }
  if (at != end || (runs_.size() == 1 && !runs_[0].zero))
    return 0;
  return runs_.size();
}

// base:allocation from the driver's extent map, a slice at a time so that
// neither the map nor the reply grows with the request: at most
// kMaxDescriptors descriptors from the start of the range (the protocol lets
// a reply cover less than was asked), runs of one kind merged.
void transmission::reply_block_status(const request& rq) {
  const uint64_t lbs = ctx_.dev.limits().logical_block_size;
  // An extended request may span 2^64 bytes: one reply maps a bounded part
  // of it (kMaxMapBytes), and a compact descriptor's 32 bits bound a run.
  const uint64_t req_end = rq.offset + std::min(rq.length, kMaxMapBytes);
  const uint64_t max_run = neg_.extended ? UINT64_MAX : UINT32_MAX / lbs * lbs;
  std::vector<unsigned char> payload(neg_.extended ? kBlockStatusExtSize : kBlockStatusSize);
  put32(payload.data(), kMetaContextAllocation);
  std::vector<blk_extent> extents;
  uint64_t run_length = 0;
  uint32_t run_flags = 0;
  size_t descriptors = 0;
  auto emit = [&] {
    unsigned char d[kExtentExtSize];
    if (neg_.extended)
      encode_extent_ext(d, run_length, run_flags);
    else
      encode_extent(d, static_cast<uint32_t>(run_length), run_flags);
    payload.insert(payload.end(), d, d + (neg_.extended ? kExtentExtSize : kExtentSize));
    descriptors++;
    run_length = 0;
  };
  for (uint64_t pos = rq.offset / lbs * lbs; pos < req_end && descriptors < kMaxDescriptors;) {
    const uint64_t end = std::min((pos + kMapSlice) / kMapSlice * kMapSlice, (req_end + lbs - 1) / lbs * lbs);
    extents.clear();
    const char* why = nullptr;
    if (int err = ctx_.dev.map_extents(pos >> SECTOR_SHIFT, (end - pos) >> SECTOR_SHIFT, &extents, &why))
      return reply_error(rq, nbd_errno(err), why ? why : "block status failed");
    for (const blk_extent& e : extents) {
      const uint64_t s = std::max<uint64_t>(e.sector << SECTOR_SHIFT, rq.offset);
      const uint64_t t = std::min<uint64_t>((e.sector + e.nr_sectors) << SECTOR_SHIFT, req_end);
      if (t <= s)
        continue;
      const uint32_t flags =
          (e.flags & BLK_EXTENT_HOLE ? NBD_STATE_HOLE : 0) | (e.flags & BLK_EXTENT_ZERO ? NBD_STATE_ZERO : 0);
      if (run_length && (flags != run_flags || run_length > max_run - (t - s))) {
        emit();
        if (descriptors == kMaxDescriptors || (rq.flags & NBD_CMD_FLAG_REQ_ONE))
          break;
      }
      run_flags = flags;
      run_length += t - s;
    }
    pos = end;
    if ((rq.flags & NBD_CMD_FLAG_REQ_ONE) && descriptors)
      break;
  }
  if (run_length && descriptors < kMaxDescriptors && !((rq.flags & NBD_CMD_FLAG_REQ_ONE) && descriptors))
    emit();
  if (neg_.extended)
    put32(payload.data() + 4, static_cast<uint32_t>(descriptors));
  queue_chunk_header(rq, NBD_REPLY_FLAG_DONE,
                     neg_.extended ? NBD_REPLY_TYPE_BLOCK_STATUS_EXT : NBD_REPLY_TYPE_BLOCK_STATUS,
                     static_cast<uint32_t>(payload.size()));
  out_.queue_bytes(payload.data(), payload.size());
}

}  // namespace iov::nbd
