// transmission.cc: requests and their replies (see connection.hpp). Every
// request is checked before it reaches the device; a refused one gets the
// protocol's error, a WRITE's payload consumed first whatever becomes of it.
// Replies are queued and go out with the next flush; a READ queues its
// header and the range of the device, whose bytes are taken when sent.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

#include "iov/iov.hpp"
#include "nbd/connection.hpp"
#include "nbd/log.hpp"

namespace iov::nbd {

namespace {

uint32_t nbd_errno(int err) {
  switch (-err) {
    case EPERM: return NBD_EPERM;
    case ENOMEM: return NBD_ENOMEM;
    case EINVAL: return NBD_EINVAL;
    case ENOSPC: return NBD_ENOSPC;
    case EOVERFLOW: return NBD_EOVERFLOW;
    case EOPNOTSUPP: return NBD_ENOTSUP;
    default: return NBD_EIO;
  }
}

constexpr size_t kMaxDescriptors = 2048;     // per BLOCK_STATUS reply (the client asks again for the rest)
constexpr uint64_t kMapSlice = 1 << 20;      // bytes of the map asked of the device at a time

}  // namespace

connection::step connection::on_request(const request& rq) {
  if (rq.type == NBD_CMD_WRITE) {
    if (rq.length > ctx_.max_payload)
      return step::fail;  // not a client that read our block sizes; and the payload may never come
    if (rq.length > kInlinePayload) {
      consume(kRequestSize);
      return start_payload(rq);
    }
    if (available() < kRequestSize + rq.length)
      return need(kRequestSize + rq.length);
  }
  consume(kRequestSize);
  if (rq.type == NBD_CMD_DISC) {
    phase_ = phase::closing;  // after the replies already queued
    return step::done;
  }
  const void* payload = input();
  if (rq.type == NBD_CMD_WRITE)
    consume(rq.length);
  handle_request(rq, payload);
  progress();
  return step::done;
}

// A WRITE above kInlinePayload. Its payload is read before anything else:
// into memory the shared budget has reserved for it whole (parked, reading
// nothing, until then), or drained if the request is refused anyway.
connection::step connection::start_payload(const request& rq) {
  pending_ = rq;
  payload_received_ = 0;
  payload_error_ = refusal(rq, &payload_message_);
  phase_ = phase::payload;
  if (!payload_error_) {
    switch (ctx_.budget.acquire(&waiter_, rq.length)) {
      case payload_budget::granted:
        break;
      case payload_budget::queued:
        parked_ = true;
        return step::park;
      case payload_budget::too_big:
        payload_error_ = NBD_ENOMEM;
        payload_message_ = "the payload is larger than the server's payload memory";
        break;
    }
  }
  return continue_payload();
}

connection::step connection::continue_payload() {
  if (parked_) {
    if (!waiter_.granted())
      return step::park;
    parked_ = false;
  }
  if (!payload_error_ && !payload_) {
    // Mapped, not touched: pages come as the bytes arrive.
    void* p = mmap(nullptr, pending_.length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
      log_event(event::no_memory, "out of memory for a %u-byte WRITE payload: refused with ENOMEM",
                pending_.length);
      ctx_.budget.release(&waiter_);
      payload_error_ = NBD_ENOMEM;
      payload_message_ = "out of memory for the payload";
    } else {
      payload_ = p;
    }
  }
  const uint64_t take = std::min<uint64_t>(available(), pending_.length - payload_received_);
  if (payload_)
    std::memcpy(static_cast<char*>(payload_) + payload_received_, input(), take);
  consume(take);
  payload_received_ += take;
  if (payload_received_ < pending_.length)
    return step::need_input;
  finish_payload();
  return step::done;
}

void connection::finish_payload() {
  phase_ = phase::requests;
  if (payload_error_)
    reply_error(pending_, payload_error_, payload_message_);
  else
    handle_write(pending_, payload_);
  if (payload_)
    munmap(payload_, pending_.length);
  payload_ = nullptr;
  payload_error_ = 0;
  ctx_.budget.release(&waiter_);
  progress();
}

// The protocol's error for a request this server will not execute, with why
// in words; 0 for one it will.
uint32_t connection::refusal(const request& rq, const char** message) const {
  const uint64_t size = ctx_.dev.get_capacity() << SECTOR_SHIFT;
  const uint64_t lbs = ctx_.dev.limits().logical_block_size;
  const bool in_range = rq.offset <= size && rq.length <= size - rq.offset;
  const bool aligned = rq.offset % lbs == 0 && rq.length % lbs == 0;
  auto refuse = [message](uint32_t error, const char* why) {
    *message = why;
    return error;
  };
  const uint16_t known = NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE | NBD_CMD_FLAG_DF | NBD_CMD_FLAG_REQ_ONE |
                         NBD_CMD_FLAG_FAST_ZERO;
  if (rq.flags & ~known)
    return refuse(NBD_EINVAL, "unknown command flags");
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
      if (!structured_ || !meta_allocation_)
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

void connection::handle_request(const request& rq, const void* payload) {
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
bool connection::submit_or_reply(const request& rq, blk_request& br, const char* what, bool optional) {
  const int err = ctx_.dev.submit(br);
  if (err == 0 || (optional && err == -EOPNOTSUPP))
    return true;
  reply_error(rq, nbd_errno(err), br.error ? br.error : what);
  return false;
}

void connection::handle_write(const request& rq, const void* payload) {
  iov_iter it;
  iov_iter_ubuf(&it, ITER_SOURCE, const_cast<void*>(payload), rq.length);
  blk_request br{.op = REQ_OP_WRITE, .flags = rq.flags & NBD_CMD_FLAG_FUA ? REQ_FUA : 0u,
                 .sector = rq.offset >> SECTOR_SHIFT, .iter = &it};
  if (submit_or_reply(rq, br, "write failed"))
    reply_ok(rq);
}

// Native on both drivers: brd frees or clears pages, null_blk unstores or
// stores zeros; NO_HOLE asks to keep the storage (REQ_NOUNMAP). So
// FAST_ZERO is always honoured.
void connection::handle_write_zeroes(const request& rq) {
  blk_request br{.op = REQ_OP_WRITE_ZEROES,
                 .flags = (rq.flags & NBD_CMD_FLAG_NO_HOLE ? REQ_NOUNMAP : 0u) |
                          (rq.flags & NBD_CMD_FLAG_FUA ? REQ_FUA : 0u),
                 .sector = rq.offset >> SECTOR_SHIFT,
                 .nr_sectors = rq.length >> SECTOR_SHIFT};
  if (submit_or_reply(rq, br, "write zeroes failed"))
    reply_ok(rq);
}

void connection::reply_ok(const request& rq) {
  unsigned char head[kStructuredReplySize];
  if (!structured_) {
    encode_simple_reply(head, 0, rq.cookie);
    return queue_bytes(head, kSimpleReplySize);
  }
  encode_structured_reply(head, {.flags = NBD_REPLY_FLAG_DONE, .type = NBD_REPLY_TYPE_NONE, .cookie = rq.cookie,
                                 .length = 0});
  queue_bytes(head, kStructuredReplySize);
}

void connection::reply_error(const request& rq, uint32_t error, const char* message) {
  unsigned char head[kStructuredReplySize + kErrorSize];
  if (!structured_) {
    encode_simple_reply(head, error, rq.cookie);
    return queue_bytes(head, kSimpleReplySize);
  }
  const auto length = static_cast<uint16_t>(std::min(std::strlen(message), kMaxErrorMessage));
  encode_structured_reply(head, {.flags = NBD_REPLY_FLAG_DONE, .type = NBD_REPLY_TYPE_ERROR, .cookie = rq.cookie,
                                 .length = static_cast<uint32_t>(kErrorSize + length)});
  encode_error(head + kStructuredReplySize, error, length);
  queue_bytes(head, sizeof head);
  queue_bytes(message, length);
}

// The header now; the data when it is sent (connection::flush), so a READ
// holds nothing while it waits: one OFFSET_DATA chunk, or a simple reply.
void connection::queue_read(const request& rq) {
  if (rq.length == 0)
    return reply_ok(rq);  // no data chunk: an empty OFFSET_DATA is not allowed
  if (!ctx_.lends && !window_) {
    window_.reset(new (std::nothrow) unsigned char[kReadWindow]);
    if (!window_) {
      log_event(event::no_memory, "out of memory for a connection's read window: READ refused with ENOMEM");
      return reply_error(rq, NBD_ENOMEM, "out of memory for the read window");
    }
  }
  unsigned char head[kStructuredReplySize + kOffsetDataSize];
  if (structured_) {
    encode_structured_reply(head, {.flags = NBD_REPLY_FLAG_DONE, .type = NBD_REPLY_TYPE_OFFSET_DATA,
                                   .cookie = rq.cookie, .length = static_cast<uint32_t>(kOffsetDataSize + rq.length)});
    encode_offset_data(head + kStructuredReplySize, rq.offset);
    queue_bytes(head, sizeof head);
  } else {
    encode_simple_reply(head, 0, rq.cookie);
    queue_bytes(head, kSimpleReplySize);
  }
  queue_device(rq.offset, rq.length);
}

// base:allocation from the driver's extent map, a slice at a time so that
// neither the map nor the reply grows with the request: at most
// kMaxDescriptors descriptors from the start of the range (the protocol lets
// a reply cover less than was asked), runs of one kind merged.
void connection::reply_block_status(const request& rq) {
  const uint64_t lbs = ctx_.dev.limits().logical_block_size;
  const uint64_t req_end = rq.offset + rq.length;
  std::vector<unsigned char> payload(kBlockStatusSize);
  put32(payload.data(), kMetaContextAllocation);
  std::vector<blk_extent> extents;
  uint64_t run_length = 0;
  uint32_t run_flags = 0;
  size_t descriptors = 0;
  auto emit = [&] {
    unsigned char d[kExtentSize];
    encode_extent(d, static_cast<uint32_t>(run_length), run_flags);
    payload.insert(payload.end(), d, d + sizeof d);
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
      const uint32_t flags = (e.flags & BLK_EXTENT_HOLE ? NBD_STATE_HOLE : 0) |
                             (e.flags & BLK_EXTENT_ZERO ? NBD_STATE_ZERO : 0);
      if (run_length && flags != run_flags) {
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
  unsigned char head[kStructuredReplySize];
  encode_structured_reply(head, {.flags = NBD_REPLY_FLAG_DONE, .type = NBD_REPLY_TYPE_BLOCK_STATUS,
                                 .cookie = rq.cookie, .length = static_cast<uint32_t>(payload.size())});
  queue_bytes(head, sizeof head);
  queue_bytes(payload.data(), payload.size());
}

}  // namespace iov::nbd
