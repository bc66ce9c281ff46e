// connection.cc: the NBD handshake and transmission phases (see connection.hpp).
// Every message a client can send is either answered with the protocol's
// error or ends the connection; nothing a client sends reaches the device
// unchecked. A WRITE's payload lands in this connection's buffer first, so a
// client that disconnects mid-payload never touches the disk; a READ goes out
// in one sendmsg() of the reply header and the data.
#include "nbd/connection.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "iov/iov.hpp"

namespace iov::nbd {

connection::connection(int fd, blkdev& dev, const export_options& opts) : fd_(fd), dev_(dev), opts_(opts) {}

bool connection::recv_full(void* buf, size_t len) {
  char* p = static_cast<char*>(buf);
  while (len) {
    ssize_t n = ::recv(fd_, p, len, 0);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
    } else if (n == 0 || errno != EINTR) {
      return false;
    }
  }
  return true;
}

// sendmsg() of what is left in `it`, resuming partial sends through the
// iterator. Blocking until all is out, or with MSG_DONTWAIT until the socket
// is full; false on an error.
bool connection::send_iter(iov_iter* it, int flags) {
  while (iov_iter_count(it)) {
    ::iovec vec[64];
    unsigned nv = 0;
    size_t skip = it->iov_offset;
    for (unsigned long k = 0; k < it->nr_segs && nv < 64; k++, skip = 0) {
      if (it->iov[k].iov_len == skip)
        continue;
      vec[nv++] = {static_cast<char*>(it->iov[k].iov_base) + skip, it->iov[k].iov_len - skip};
    }
    msghdr msg{};
    msg.msg_iov = vec;
    msg.msg_iovlen = nv;
    ssize_t w = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | flags);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (flags & MSG_DONTWAIT) && (errno == EAGAIN || errno == EWOULDBLOCK))
      return true;
    if (w <= 0)
      return false;
    iov_iter_advance(it, static_cast<size_t>(w));
  }
  return true;
}

bool connection::send_all(const ::iovec* iov, unsigned n) {
  size_t total = 0;
  for (unsigned k = 0; k < n; k++)
    total += iov[k].iov_len;
  iov_iter it;
  iov_iter_init(&it, ITER_SOURCE, iov, n, total);
  return send_iter(&it, 0);
}

uint16_t connection::transmission_flags() const {
  uint16_t f = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA | NBD_FLAG_CAN_MULTI_CONN;
  if (structured_)
    f |= NBD_FLAG_SEND_DF;  // DF means something only to structured replies
  if (opts_.read_only)
    return f | NBD_FLAG_READ_ONLY;
  f |= NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES;
  if (dev_.limits().max_write_zeroes_sectors)
    f |= NBD_FLAG_SEND_FAST_ZERO;
  return f;
}

void connection::serve() {
  if (handshake() == phase::transmission)
    transmission();
}

// --- Handshake --------------------------------------------------------------

connection::phase connection::handshake() {
  unsigned char hello[18];
  put64(hello, NBDMAGIC);
  put64(hello + 8, IHAVEOPT);
  put16(hello + 16, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
  ::iovec v{hello, sizeof hello};
  if (!send_all(&v, 1))
    return phase::closed;
  unsigned char cflags[4];
  if (!recv_full(cflags, 4))
    return phase::closed;
  uint32_t client_flags = get32(cflags);
  // Unknown client flags, or a client that cannot read option replies: drop it.
  if (client_flags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES) ||
      !(client_flags & NBD_FLAG_C_FIXED_NEWSTYLE))
    return phase::closed;
  no_zeroes_ = client_flags & NBD_FLAG_C_NO_ZEROES;
  for (;;) {
    unsigned char head[16];
    if (!recv_full(head, sizeof head) || get64(head) != IHAVEOPT)
      return phase::closed;
    uint32_t option = get32(head + 8), len = get32(head + 12);
    if (len > kMaxOptionLength)
      return phase::closed;  // no legitimate option is that long
    std::vector<unsigned char> data(len);
    if (len && !recv_full(data.data(), len))
      return phase::closed;
    phase next = handle_option(option, data);
    if (next != phase::options)
      return next;
  }
}

bool connection::reply_option(uint32_t option, uint32_t type, const void* data, uint32_t len) {
  unsigned char head[20];
  put64(head, NBD_REP_MAGIC);
  put32(head + 8, option);
  put32(head + 12, type);
  put32(head + 16, len);
  ::iovec v[2] = {{head, sizeof head}, {const_cast<void*>(data), len}};
  return send_all(v, len ? 2 : 1);
}

connection::phase connection::handle_option(uint32_t option, const std::vector<unsigned char>& data) {
  auto keep = [](bool sent) { return sent ? phase::options : phase::closed; };
  switch (option) {
    case NBD_OPT_EXPORT_NAME: {  // any name: the one export
      unsigned char reply[10 + 124] = {};
      put64(reply, dev_.get_capacity() << SECTOR_SHIFT);
      put16(reply + 8, transmission_flags());
      ::iovec v{reply, no_zeroes_ ? size_t{10} : sizeof reply};
      return send_all(&v, 1) ? phase::transmission : phase::closed;
    }
    case NBD_OPT_ABORT:
      reply_option(option, NBD_REP_ACK);
      return phase::closed;
    case NBD_OPT_LIST: {
      if (!data.empty())
        return keep(reply_option(option, NBD_REP_ERR_INVALID));
      std::vector<unsigned char> entry(4 + opts_.name.size());
      put32(entry.data(), static_cast<uint32_t>(opts_.name.size()));
      std::memcpy(entry.data() + 4, opts_.name.data(), opts_.name.size());
      if (!reply_option(option, NBD_REP_SERVER, entry.data(), static_cast<uint32_t>(entry.size())))
        return phase::closed;
      return keep(reply_option(option, NBD_REP_ACK));
    }
    case NBD_OPT_INFO:
    case NBD_OPT_GO:
      return handle_info_or_go(option, data);
    case NBD_OPT_STRUCTURED_REPLY:
      if (!data.empty())
        return keep(reply_option(option, NBD_REP_ERR_INVALID));
      structured_ = true;
      return keep(reply_option(option, NBD_REP_ACK));
    case NBD_OPT_LIST_META_CONTEXT:
    case NBD_OPT_SET_META_CONTEXT:
      return handle_meta_context(option, data);
    case NBD_OPT_STARTTLS:
      return keep(reply_option(option, NBD_REP_ERR_POLICY));
    default:
      return keep(reply_option(option, NBD_REP_ERR_UNSUP));
  }
}

bool connection::send_export_info_reply(uint32_t option) {
  unsigned char info[12];
  put16(info, NBD_INFO_EXPORT);
  put64(info + 2, dev_.get_capacity() << SECTOR_SHIFT);
  put16(info + 10, transmission_flags());
  return reply_option(option, NBD_REP_INFO, info, sizeof info);
}

connection::phase connection::handle_info_or_go(uint32_t option, const std::vector<unsigned char>& data) {
  auto invalid = [&] { return reply_option(option, NBD_REP_ERR_INVALID) ? phase::options : phase::closed; };
  if (data.size() < 6)
    return invalid();
  uint32_t namelen = get32(data.data());
  if (namelen > data.size() - 6)
    return invalid();
  uint16_t nreq = get16(data.data() + 4 + namelen);
  if (data.size() != 6 + namelen + 2 * size_t{nreq})
    return invalid();
  bool want_name = false, want_description = false;
  for (uint16_t k = 0; k < nreq; k++) {
    uint16_t what = get16(data.data() + 6 + namelen + 2 * k);
    want_name |= what == NBD_INFO_NAME;
    want_description |= what == NBD_INFO_DESCRIPTION;
  }
  if (!send_export_info_reply(option))
    return phase::closed;
  if (want_name) {
    std::vector<unsigned char> name(2 + namelen);
    put16(name.data(), NBD_INFO_NAME);
    std::memcpy(name.data() + 2, data.data() + 4, namelen);
    if (!reply_option(option, NBD_REP_INFO, name.data(), static_cast<uint32_t>(name.size())))
      return phase::closed;
  }
  if (want_description) {
    std::vector<unsigned char> text(2 + opts_.description.size());
    put16(text.data(), NBD_INFO_DESCRIPTION);
    std::memcpy(text.data() + 2, opts_.description.data(), opts_.description.size());
    if (!reply_option(option, NBD_REP_INFO, text.data(), static_cast<uint32_t>(text.size())))
      return phase::closed;
  }
  // Block sizes: requests must be whole logical blocks, and at most kMaxPayload.
  unsigned char bs[14];
  put16(bs, NBD_INFO_BLOCK_SIZE);
  put32(bs + 2, dev_.limits().logical_block_size);
  put32(bs + 6, std::max<uint32_t>(4096, dev_.limits().logical_block_size));
  put32(bs + 10, kMaxPayload);
  if (!reply_option(option, NBD_REP_INFO, bs, sizeof bs) || !reply_option(option, NBD_REP_ACK))
    return phase::closed;
  return option == NBD_OPT_GO ? phase::transmission : phase::options;
}

connection::phase connection::handle_meta_context(uint32_t option, const std::vector<unsigned char>& data) {
  auto invalid = [&] { return reply_option(option, NBD_REP_ERR_INVALID) ? phase::options : phase::closed; };
  if (!structured_)  // contexts are reported through structured replies only
    return invalid();
  size_t pos = 0;
  auto take32 = [&](uint32_t* v) {
    if (data.size() - pos < 4)
      return false;
    *v = get32(data.data() + pos);
    pos += 4;
    return true;
  };
  uint32_t namelen, nqueries;
  if (!take32(&namelen) || namelen > data.size() - pos)
    return invalid();
  pos += namelen;
  if (!take32(&nqueries))
    return invalid();
  static constexpr char kAllocation[] = "base:allocation";
  bool match = option == NBD_OPT_LIST_META_CONTEXT && nqueries == 0;  // list everything
  for (uint32_t q = 0; q < nqueries; q++) {
    uint32_t len;
    if (!take32(&len) || len > data.size() - pos)
      return invalid();
    std::string query(reinterpret_cast<const char*>(data.data() + pos), len);
    pos += len;
    match |= query == kAllocation || (option == NBD_OPT_LIST_META_CONTEXT && query == "base:");
  }
  if (pos != data.size())
    return invalid();
  if (option == NBD_OPT_SET_META_CONTEXT)
    meta_allocation_ = match;
  if (match) {
    unsigned char reply[4 + sizeof kAllocation - 1];
    put32(reply, option == NBD_OPT_SET_META_CONTEXT ? kMetaContextAllocation : 0);
    std::memcpy(reply + 4, kAllocation, sizeof kAllocation - 1);
    if (!reply_option(option, NBD_REP_META_CONTEXT, reply, sizeof reply))
      return phase::closed;
  }
  return reply_option(option, NBD_REP_ACK) ? phase::options : phase::closed;
}

// --- Transmission -------------------------------------------------------------

bool connection::reply_ok(const request& rq) {
  unsigned char head[20];
  ::iovec v{head, 0};
  if (structured_) {
    put32(head, NBD_STRUCTURED_REPLY_MAGIC);
    put16(head + 4, NBD_REPLY_FLAG_DONE);
    put16(head + 6, NBD_REPLY_TYPE_NONE);
    put64(head + 8, rq.cookie);
    put32(head + 16, 0);
    v.iov_len = 20;
  } else {
    put32(head, NBD_SIMPLE_REPLY_MAGIC);
    put32(head + 4, 0);
    put64(head + 8, rq.cookie);
    v.iov_len = 16;
  }
  return send_all(&v, 1);
}

bool connection::reply_error(const request& rq, uint32_t error, const char* message) {
  unsigned char head[26];
  if (!structured_) {
    put32(head, NBD_SIMPLE_REPLY_MAGIC);
    put32(head + 4, error);
    put64(head + 8, rq.cookie);
    ::iovec v{head, 16};
    return send_all(&v, 1);
  }
  uint16_t msglen = static_cast<uint16_t>(std::min<size_t>(std::strlen(message), 4096));
  put32(head, NBD_STRUCTURED_REPLY_MAGIC);
  put16(head + 4, NBD_REPLY_FLAG_DONE);
  put16(head + 6, NBD_REPLY_TYPE_ERROR);
  put64(head + 8, rq.cookie);
  put32(head + 16, 6u + msglen);
  put32(head + 20, error);
  put16(head + 24, msglen);
  ::iovec v[2] = {{head, sizeof head}, {const_cast<char*>(message), msglen}};
  return send_all(v, 2);
}

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
}  // namespace

// The reply header of a successful READ, simple or structured.
size_t connection::read_reply_header(const request& rq, unsigned char (&head)[28]) const {
  if (structured_) {
    put32(head, NBD_STRUCTURED_REPLY_MAGIC);
    put16(head + 4, NBD_REPLY_FLAG_DONE);
    put16(head + 6, NBD_REPLY_TYPE_OFFSET_DATA);
    put64(head + 8, rq.cookie);
    put32(head + 16, 8 + rq.length);
    put64(head + 20, rq.offset);
    return 28;
  }
  put32(head, NBD_SIMPLE_REPLY_MAGIC);
  put32(head + 4, 0);
  put64(head + 8, rq.cookie);
  return 16;
}

// A READ goes out straight from the disk's pages when the device lends them
// (absent ones from a shared zero page), the header and the pages in one
// sendmsg() stream. The RCU section that keeps lent pages alive must not
// wait on the client: what the socket does not take at once is copied out of
// the pages, and sent after the section ends. A device that cannot lend
// READs into the connection's buffer.
bool connection::reply_read(const request& rq) {
  if (rq.length == 0)
    return reply_ok(rq);  // no data chunk: an empty OFFSET_DATA is not allowed
  unsigned char head[28];
  size_t unsent = 0;
  {
    rcu_read_guard rcu;
    lent_.resize(1);
    const char* why = nullptr;
    blk_lease lease;
    int err = dev_.lend_pages(rq.offset >> SECTOR_SHIFT, rq.length >> SECTOR_SHIFT, &lease, &why);
    lent_.insert(lent_.end(), lease.pieces().begin(), lease.pieces().end());
    if (err == 0) {
      size_t hlen = read_reply_header(rq, head);
      lent_[0] = {head, hlen};
      iov_iter it;
      iov_iter_init(&it, ITER_SOURCE, lent_.data(), lent_.size(), hlen + rq.length);
      if (!send_iter(&it, MSG_DONTWAIT))
        return false;
      unsent = iov_iter_count(&it);
      if (!unsent)
        return true;
      buffer_.resize(std::max(buffer_.size(), unsent));
      copy_from_iter(buffer_.data(), unsent, &it);
    } else if (err != -EOPNOTSUPP) {
      return reply_error(rq, nbd_errno(err), why ? why : "read failed");
    }
  }
  if (unsent) {
    ::iovec rest{buffer_.data(), unsent};
    return send_all(&rest, 1);
  }
  buffer_.resize(std::max<size_t>(buffer_.size(), rq.length));
  iov_iter it;
  iov_iter_ubuf(&it, ITER_DEST, buffer_.data(), rq.length);
  blk_request br;
  br.op = REQ_OP_READ;
  br.sector = rq.offset >> SECTOR_SHIFT;
  br.iter = &it;
  if (int err = dev_.submit(br))
    return reply_error(rq, nbd_errno(err), br.error ? br.error : "read failed");
  ::iovec v[2] = {{head, read_reply_header(rq, head)}, {buffer_.data(), rq.length}};
  return send_all(v, 2);
}

bool connection::reply_block_status(const request& rq) {
  const uint64_t lbs = dev_.limits().logical_block_size;
  uint64_t start = rq.offset / lbs * lbs;
  uint64_t end = (rq.offset + rq.length + lbs - 1) / lbs * lbs;
  std::vector<blk_extent> extents;
  const char* why = nullptr;
  if (int err = dev_.map_extents(start >> SECTOR_SHIFT, (end - start) >> SECTOR_SHIFT, &extents, &why))
    return reply_error(rq, nbd_errno(err), why ? why : "block status failed");
  std::vector<unsigned char> payload(4);
  put32(payload.data(), kMetaContextAllocation);
  uint64_t req_end = uint64_t{rq.offset} + rq.length;
  for (const blk_extent& e : extents) {
    uint64_t s = std::max<uint64_t>(e.sector << SECTOR_SHIFT, rq.offset);
    uint64_t t = std::min<uint64_t>((e.sector + e.nr_sectors) << SECTOR_SHIFT, req_end);
    if (t <= s)
      continue;
    uint32_t flags = (e.flags & BLK_EXTENT_HOLE ? NBD_STATE_HOLE : 0) | (e.flags & BLK_EXTENT_ZERO ? NBD_STATE_ZERO : 0);
    unsigned char d[8];
    put32(d, static_cast<uint32_t>(t - s));
    put32(d + 4, flags);
    payload.insert(payload.end(), d, d + 8);
    if (rq.flags & NBD_CMD_FLAG_REQ_ONE)
      break;
  }
  unsigned char head[20];
  put32(head, NBD_STRUCTURED_REPLY_MAGIC);
  put16(head + 4, NBD_REPLY_FLAG_DONE);
  put16(head + 6, NBD_REPLY_TYPE_BLOCK_STATUS);
  put64(head + 8, rq.cookie);
  put32(head + 16, static_cast<uint32_t>(payload.size()));
  ::iovec v[2] = {{head, sizeof head}, {payload.data(), payload.size()}};
  return send_all(v, 2);
}

bool connection::transmission() {
  for (;;) {
    unsigned char head[kRequestSize];
    request rq;
    if (!recv_full(head, sizeof head) || !decode_request(head, &rq))
      return false;
    if (rq.type == NBD_CMD_DISC)
      return true;
    if (!handle_request(rq))
      return false;
  }
}

// One request; false when the connection must end.
bool connection::handle_request(const request& rq) {
  const uint64_t size = dev_.get_capacity() << SECTOR_SHIFT;
  const uint64_t lbs = dev_.limits().logical_block_size;
  const bool in_range = rq.offset <= size && rq.length <= size - rq.offset;
  const bool aligned = rq.offset % lbs == 0 && rq.length % lbs == 0;
  if (rq.type == NBD_CMD_WRITE) {
    // The payload comes first, whatever becomes of the request.
    if (rq.length > kMaxPayload)
      return false;  // cannot be a client that read our block-size limits
    buffer_.resize(std::max<size_t>(buffer_.size(), rq.length));
    if (!recv_full(buffer_.data(), rq.length))
      return false;  // disconnected mid-payload: the disk was never touched
  }
  const uint16_t known = NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE | NBD_CMD_FLAG_DF | NBD_CMD_FLAG_REQ_ONE |
                         NBD_CMD_FLAG_FAST_ZERO;
  if (rq.flags & ~known)
    return reply_error(rq, NBD_EINVAL, "unknown command flags");
  const bool writes = rq.type == NBD_CMD_WRITE || rq.type == NBD_CMD_TRIM || rq.type == NBD_CMD_WRITE_ZEROES;
  if (writes && opts_.read_only)
    return reply_error(rq, NBD_EPERM, "the export is read-only");
  switch (rq.type) {
    case NBD_CMD_READ:
      if (!in_range)
        return reply_error(rq, NBD_EINVAL, "read beyond the end of the export");
      if (rq.length > kMaxPayload)
        return reply_error(rq, NBD_EINVAL, "read larger than the maximum payload");
      if (!aligned)
        return reply_error(rq, NBD_EINVAL, "read not aligned to the minimum block size");
      return reply_read(rq);
    case NBD_CMD_WRITE: {
      if (!in_range)
        return reply_error(rq, NBD_ENOSPC, "write beyond the end of the export");
      if (!aligned)
        return reply_error(rq, NBD_EINVAL, "write not aligned to the minimum block size");
      iov_iter it;
      iov_iter_ubuf(&it, ITER_SOURCE, buffer_.data(), rq.length);
      blk_request br;
      br.op = REQ_OP_WRITE;
      br.flags = rq.flags & NBD_CMD_FLAG_FUA ? REQ_FUA : 0;
      br.sector = rq.offset >> SECTOR_SHIFT;
      br.iter = &it;
      if (int err = dev_.submit(br))
        return reply_error(rq, nbd_errno(err), br.error ? br.error : "write failed");
      return reply_ok(rq);
    }
    case NBD_CMD_FLUSH: {
      blk_request br;
      br.op = REQ_OP_FLUSH;
      if (int err = dev_.submit(br); err && err != -EOPNOTSUPP)
        return reply_error(rq, nbd_errno(err), br.error ? br.error : "flush failed");
      return reply_ok(rq);
    }
    case NBD_CMD_TRIM: {
      if (!in_range)
        return reply_error(rq, NBD_ENOSPC, "trim beyond the end of the export");
      // Advisory: discard the whole blocks inside the range, if the device can.
      uint64_t s = (rq.offset + lbs - 1) / lbs * lbs, e = (rq.offset + rq.length) / lbs * lbs;
      if (e > s && dev_.limits().max_hw_discard_sectors) {
        blk_request br;
        br.op = REQ_OP_DISCARD;
        br.sector = s >> SECTOR_SHIFT;
        br.nr_sectors = (e - s) >> SECTOR_SHIFT;
        if (int err = dev_.submit(br); err && err != -EOPNOTSUPP)
          return reply_error(rq, nbd_errno(err), br.error ? br.error : "trim failed");
      }
      return reply_ok(rq);
    }
    case NBD_CMD_WRITE_ZEROES: {
      if (!in_range)
        return reply_error(rq, NBD_ENOSPC, "write zeroes beyond the end of the export");
      if (!aligned)
        return reply_error(rq, NBD_EINVAL, "write zeroes not aligned to the minimum block size");
      if (dev_.limits().max_write_zeroes_sectors) {
        blk_request br;
        br.op = REQ_OP_WRITE_ZEROES;
        br.flags = (rq.flags & NBD_CMD_FLAG_NO_HOLE ? REQ_NOUNMAP : 0) | (rq.flags & NBD_CMD_FLAG_FUA ? REQ_FUA : 0);
        br.sector = rq.offset >> SECTOR_SHIFT;
        br.nr_sectors = rq.length >> SECTOR_SHIFT;
        if (int err = dev_.submit(br))
          return reply_error(rq, nbd_errno(err), br.error ? br.error : "write zeroes failed");
        return reply_ok(rq);
      }
      if (rq.flags & NBD_CMD_FLAG_FAST_ZERO)
        return reply_error(rq, NBD_ENOTSUP, "zeroing would not be faster than writing");
      // No native zeroing: write zeroes through the copy path, a chunk at a time.
      std::vector<char> zeros(std::min<uint64_t>(rq.length, 1u << 20), 0);
      for (uint64_t done = 0; done < rq.length;) {
        uint64_t n = std::min<uint64_t>(zeros.size(), rq.length - done);
        iov_iter it;
        iov_iter_ubuf(&it, ITER_SOURCE, zeros.data(), n);
        blk_request br;
        br.op = REQ_OP_WRITE;
        br.sector = (rq.offset + done) >> SECTOR_SHIFT;
        br.iter = &it;
        if (int err = dev_.submit(br))
          return reply_error(rq, nbd_errno(err), br.error ? br.error : "write zeroes failed");
        done += n;
      }
      return reply_ok(rq);
    }
    case NBD_CMD_BLOCK_STATUS:
      if (!structured_ || !meta_allocation_)
        return reply_error(rq, NBD_EINVAL, "no metadata context was negotiated");
      if (!in_range || rq.length == 0)
        return reply_error(rq, NBD_EINVAL, "block status beyond the end of the export");
      return reply_block_status(rq);
    case NBD_CMD_CACHE:
      return in_range ? reply_ok(rq) : reply_error(rq, NBD_EINVAL, "cache beyond the end of the export");
    default:
      return reply_error(rq, NBD_EINVAL, "unknown command");
  }
}

}  // namespace iov::nbd
