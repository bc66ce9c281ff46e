// handshake.cc: the fixed newstyle negotiation (see handshake.hpp). Every
// option either gets a reply, ends the negotiation (GO, EXPORT_NAME, ABORT)
// or, malformed beyond repair, ends the connection.
#include "nbd/handshake.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "nbd/protocol.hpp"

namespace iov::nbd {

handshake::handshake(const context& ctx, output_queue& out) : ctx_(ctx), out_(out) {
  unsigned char hello[kGreetingSize];
  encode_greeting(hello, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
  out_.queue_bytes(hello, sizeof hello);
}

step handshake::take(input_buffer& in) {
  if (state_ == state::client_flags)
    return in.available() < 4 ? in.need(4) : on_client_flags(in);
  if (in.available() < kOptionHeaderSize)
    return in.need(kOptionHeaderSize);
  option_header h;
  if (!decode_option_header(in.data(), &h) || h.length > kMaxOptionLength)
    return step::fail;  // a bad magic; or data no option needs, which may never come
  if (in.available() < kOptionHeaderSize + h.length)
    return in.need(kOptionHeaderSize + h.length);
  in.consume(kOptionHeaderSize);
  const unsigned char* data = in.data();
  in.consume(h.length);
  return handle_option(h.option, data, h.length, in);
}

step handshake::on_client_flags(input_buffer& in) {
  const uint32_t flags = get32(in.data());
  in.consume(4);
  // Unknown client flags, or a client that cannot read option replies: drop it.
  if (flags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES) || !(flags & NBD_FLAG_C_FIXED_NEWSTYLE))
    return step::fail;
  neg_.no_zeroes = flags & NBD_FLAG_C_NO_ZEROES;
  state_ = state::options;
  return step::done;
}

uint16_t handshake::transmission_flags() const {
  uint16_t f = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA | NBD_FLAG_CAN_MULTI_CONN;
  if (neg_.structured)
    f |= NBD_FLAG_SEND_DF;  // DF means something only to structured replies
  if (ctx_.exp.read_only)
    return f | NBD_FLAG_READ_ONLY;
  f |= NBD_FLAG_SEND_TRIM;
  if (ctx_.dev.limits().max_write_zeroes_sectors)
    f |= NBD_FLAG_SEND_WRITE_ZEROES | NBD_FLAG_SEND_FAST_ZERO;
  return f;
}

void handshake::reply_option(uint32_t option, uint32_t type, const void* data, uint32_t len) {
  unsigned char head[kOptionReplySize];
  encode_option_reply(head, {.option = option, .type = type, .length = len});
  out_.queue_bytes(head, sizeof head);
  out_.queue_bytes(data, len);
}

step handshake::handle_option(uint32_t option, const unsigned char* data, uint32_t len, const input_buffer& in) {
  if (ctx_.tls == tls_mode::require && !tls_ && option != NBD_OPT_STARTTLS && option != NBD_OPT_ABORT) {
    if (option == NBD_OPT_EXPORT_NAME)
      return step::close;  // it has no error reply
    reply_option(option, NBD_REP_ERR_TLS_REQD);
    return step::done;
  }
  switch (option) {
    case NBD_OPT_EXPORT_NAME: {  // any name: the one export
      if (neg_.extended)
        return step::close;  // forbidden after extended headers, and it has no error reply
      unsigned char reply[kExportNameReplySize];
      encode_export_name_reply(reply, ctx_.dev.get_capacity() << SECTOR_SHIFT, transmission_flags());
      out_.queue_bytes(reply, sizeof reply);
      if (!neg_.no_zeroes) {
        static const unsigned char zeroes[kExportNameZeroes] = {};
        out_.queue_bytes(zeroes, sizeof zeroes);
      }
      neg_.any_offset = true;  // it was told no block size
      state_ = state::transmission;
      return step::done;
    }
    case NBD_OPT_ABORT:
      reply_option(option, NBD_REP_ACK);
      return step::close;
    case NBD_OPT_LIST: {
      if (len)
        return reply_option(option, NBD_REP_ERR_INVALID), step::done;
      const std::string& name = ctx_.exp.name;  // then its description, as the reply's details
      std::string entry(4 + name.size(), '\0');
      put32(reinterpret_cast<unsigned char*>(entry.data()), static_cast<uint32_t>(name.size()));
      entry.replace(4, name.size(), name);
      entry += ctx_.exp.description;
      reply_option(option, NBD_REP_SERVER, entry.data(), static_cast<uint32_t>(entry.size()));
      reply_option(option, NBD_REP_ACK);
      return step::done;
    }
    case NBD_OPT_INFO:
    case NBD_OPT_GO:
      return handle_info_or_go(option, data, len);
    case NBD_OPT_STRUCTURED_REPLY:
      if (len)
        return reply_option(option, NBD_REP_ERR_INVALID), step::done;
      if (neg_.extended)  // extended headers take precedence
        return reply_option(option, NBD_REP_ERR_EXT_HEADER_REQD), step::done;
      neg_.structured = true;
      reply_option(option, NBD_REP_ACK);
      return step::done;
    case NBD_OPT_EXTENDED_HEADERS:
      if (len)
        return reply_option(option, NBD_REP_ERR_INVALID), step::done;
      neg_.structured = neg_.extended = true;  // every reply a chunk, with the 32-byte header
      reply_option(option, NBD_REP_ACK);
      return step::done;
    case NBD_OPT_LIST_META_CONTEXT:
    case NBD_OPT_SET_META_CONTEXT:
      return handle_meta_context(option, data, len);
    case NBD_OPT_STARTTLS:
      return handle_starttls(option, len, in);
    default:
      reply_option(option, NBD_REP_ERR_UNSUP);
      return step::done;
  }
}

// STARTTLS: the ACK goes out in plain text, then the TLS handshake
// (connection.cc). What was negotiated before is forgotten, as the protocol
// requires. A client that sent anything after STARTTLS before our ACK is
// dropped: those bytes would be plaintext injected into the session.
step handshake::handle_starttls(uint32_t option, uint32_t len, const input_buffer& in) {
  if (ctx_.tls == tls_mode::off)
    return reply_option(option, NBD_REP_ERR_POLICY), step::done;
  if (len || tls_)
    return reply_option(option, NBD_REP_ERR_INVALID), step::done;
  if (in.available())
    return step::close;
  reply_option(option, NBD_REP_ACK);
  neg_.structured = neg_.extended = neg_.meta_allocation = false;
  state_ = state::starttls;
  return step::done;
}

void handshake::reply_export_info(uint32_t option) {
  unsigned char info[12];
  put16(info, NBD_INFO_EXPORT);
  put64(info + 2, ctx_.dev.get_capacity() << SECTOR_SHIFT);
  put16(info + 10, transmission_flags());
  reply_option(option, NBD_REP_INFO, info, sizeof info);
}

step handshake::handle_info_or_go(uint32_t option, const unsigned char* data, uint32_t len) {
  auto invalid = [&] { return reply_option(option, NBD_REP_ERR_INVALID), step::done; };
  if (len < 6)
    return invalid();
  const uint32_t namelen = get32(data);
  if (namelen > len - 6)
    return invalid();
  const uint16_t nreq = get16(data + 4 + namelen);
  if (len != 6 + namelen + 2 * size_t{nreq})
    return invalid();
  bool want_name = false, want_description = false, want_block_size = false;
  for (uint16_t k = 0; k < nreq; k++) {
    const uint16_t what = get16(data + 6 + namelen + 2 * k);
    want_name |= what == NBD_INFO_NAME;
    want_description |= what == NBD_INFO_DESCRIPTION;
    want_block_size |= what == NBD_INFO_BLOCK_SIZE;
  }
  reply_export_info(option);
  if (want_name) {  // the canonical name, whatever name the client used
    std::string name(2, '\0');
    put16(reinterpret_cast<unsigned char*>(name.data()), NBD_INFO_NAME);
    name += ctx_.exp.name;
    reply_option(option, NBD_REP_INFO, name.data(), static_cast<uint32_t>(name.size()));
  }
  if (want_description) {
    std::string text(2, '\0');
    put16(reinterpret_cast<unsigned char*>(text.data()), NBD_INFO_DESCRIPTION);
    text += ctx_.exp.description;
    reply_option(option, NBD_REP_INFO, text.data(), static_cast<uint32_t>(text.size()));
  }
  // Block sizes: requests must be whole logical blocks, and at most the
  // largest payload this server's limits allow. A client that did not ask
  // for them may not read them: as the protocol's "Size constraints" ask,
  // it may then use any offset and length (minimum block size 1), which
  // the server serves from, and writes over, the covering blocks.
  unsigned char bs[14];
  put16(bs, NBD_INFO_BLOCK_SIZE);
  put32(bs + 2, ctx_.dev.limits().logical_block_size);
  put32(bs + 6, std::max<uint32_t>(4096, ctx_.dev.limits().logical_block_size));
  put32(bs + 10, ctx_.max_payload);
  reply_option(option, NBD_REP_INFO, bs, sizeof bs);
  reply_option(option, NBD_REP_ACK);
  if (option != NBD_OPT_GO)
    return step::done;
  neg_.any_offset = !want_block_size;
  state_ = state::transmission;
  return step::done;
}

step handshake::handle_meta_context(uint32_t option, const unsigned char* data, uint32_t len) {
  auto invalid = [&] { return reply_option(option, NBD_REP_ERR_INVALID), step::done; };
  if (!neg_.structured)  // contexts are reported through structured replies only
    return invalid();
  size_t pos = 0;
  auto take32 = [&](uint32_t* v) {
    if (len - pos < 4)
      return false;
    *v = get32(data + pos);
    pos += 4;
    return true;
  };
  uint32_t namelen, nqueries;
  if (!take32(&namelen) || namelen > len - pos)
    return invalid();
  pos += namelen;
  if (!take32(&nqueries))
    return invalid();
  static constexpr char kAllocation[] = "base:allocation";
  bool match = option == NBD_OPT_LIST_META_CONTEXT && nqueries == 0;  // list everything
  for (uint32_t q = 0; q < nqueries; q++) {
    uint32_t qlen;
    if (!take32(&qlen) || qlen > len - pos)
      return invalid();
    const std::string_view query(reinterpret_cast<const char*>(data + pos), qlen);
    pos += qlen;
    match |= query == kAllocation || (option == NBD_OPT_LIST_META_CONTEXT && query == "base:");
  }
  if (pos != len)
    return invalid();
  if (option == NBD_OPT_SET_META_CONTEXT)
    neg_.meta_allocation = match;
  if (match) {
    unsigned char reply[4 + sizeof kAllocation - 1];
    put32(reply, option == NBD_OPT_SET_META_CONTEXT ? kMetaContextAllocation : 0);
    std::memcpy(reply + 4, kAllocation, sizeof kAllocation - 1);
    reply_option(option, NBD_REP_META_CONTEXT, reply, sizeof reply);
  }
  reply_option(option, NBD_REP_ACK);
  return step::done;
}

}  // namespace iov::nbd
