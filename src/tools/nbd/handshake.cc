// handshake.cc: the fixed newstyle negotiation (see connection.hpp): the
// client's flags, then its options one at a time, each answered before the
// next is taken. Every option either gets a reply, ends the negotiation
// (GO, EXPORT_NAME, ABORT) or, malformed beyond repair, ends the connection.
#include <algorithm>
#include <cstring>
#include <string>

#include "nbd/connection.hpp"

namespace iov::nbd {

connection::step connection::on_client_flags() {
  const uint32_t flags = get32(input());
  consume(4);
  // Unknown client flags, or a client that cannot read option replies: drop it.
  if (flags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES) || !(flags & NBD_FLAG_C_FIXED_NEWSTYLE))
    return step::fail;
  no_zeroes_ = flags & NBD_FLAG_C_NO_ZEROES;
  phase_ = phase::options;
  return step::done;
}

connection::step connection::on_option(uint32_t option, const unsigned char* data, uint32_t len) {
  phase_ = handle_option(option, data, len);
  if (phase_ == phase::requests)
    progress();  // transmission begins: the idle and request timeouts count from here
  return step::done;
}

uint16_t connection::transmission_flags() const {
  uint16_t f = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA | NBD_FLAG_CAN_MULTI_CONN;
  if (structured_)
    f |= NBD_FLAG_SEND_DF;  // DF means something only to structured replies
  if (ctx_.exp.read_only)
    return f | NBD_FLAG_READ_ONLY;
  f |= NBD_FLAG_SEND_TRIM;
  if (ctx_.dev.limits().max_write_zeroes_sectors)
    f |= NBD_FLAG_SEND_WRITE_ZEROES | NBD_FLAG_SEND_FAST_ZERO;
  return f;
}

void connection::reply_option(uint32_t option, uint32_t type, const void* data, uint32_t len) {
  unsigned char head[kOptionReplySize];
  encode_option_reply(head, {.option = option, .type = type, .length = len});
  queue_bytes(head, sizeof head);
  queue_bytes(data, len);
}

connection::phase connection::handle_option(uint32_t option, const unsigned char* data, uint32_t len) {
  if (ctx_.tls == tls_mode::require && !tls_ && option != NBD_OPT_STARTTLS && option != NBD_OPT_ABORT) {
    if (option == NBD_OPT_EXPORT_NAME)
      return phase::closing;  // it has no error reply
    reply_option(option, NBD_REP_ERR_TLS_REQD);
    return phase::options;
  }
  switch (option) {
    case NBD_OPT_EXPORT_NAME: {  // any name: the one export
      if (extended_)
        return phase::closing;  // forbidden after extended headers, and it has no error reply
      unsigned char reply[kExportNameReplySize];
      encode_export_name_reply(reply, ctx_.dev.get_capacity() << SECTOR_SHIFT, transmission_flags());
      queue_bytes(reply, sizeof reply);
      if (!no_zeroes_) {
        static const unsigned char zeroes[kExportNameZeroes] = {};
        queue_bytes(zeroes, sizeof zeroes);
      }
      any_offset_ = true;  // it was told no block size
      return phase::requests;
    }
    case NBD_OPT_ABORT:
      reply_option(option, NBD_REP_ACK);
      return phase::closing;
    case NBD_OPT_LIST: {
      if (len)
        return reply_option(option, NBD_REP_ERR_INVALID), phase::options;
      const std::string& name = ctx_.exp.name;  // then its description, as the reply's details
      std::string entry(4 + name.size(), '\0');
      put32(reinterpret_cast<unsigned char*>(entry.data()), static_cast<uint32_t>(name.size()));
      entry.replace(4, name.size(), name);
      entry += ctx_.exp.description;
      reply_option(option, NBD_REP_SERVER, entry.data(), static_cast<uint32_t>(entry.size()));
      reply_option(option, NBD_REP_ACK);
      return phase::options;
    }
    case NBD_OPT_INFO:
    case NBD_OPT_GO:
      return handle_info_or_go(option, data, len);
    case NBD_OPT_STRUCTURED_REPLY:
      if (len)
        return reply_option(option, NBD_REP_ERR_INVALID), phase::options;
      if (extended_)  // extended headers take precedence
        return reply_option(option, NBD_REP_ERR_EXT_HEADER_REQD), phase::options;
      structured_ = true;
      reply_option(option, NBD_REP_ACK);
      return phase::options;
    case NBD_OPT_EXTENDED_HEADERS:
      if (len)
        return reply_option(option, NBD_REP_ERR_INVALID), phase::options;
      structured_ = extended_ = true;  // every reply a chunk, with the 32-byte header
      reply_option(option, NBD_REP_ACK);
      return phase::options;
    case NBD_OPT_LIST_META_CONTEXT:
    case NBD_OPT_SET_META_CONTEXT:
      return handle_meta_context(option, data, len);
    case NBD_OPT_STARTTLS:
      return handle_starttls(option, len);
    default:
      reply_option(option, NBD_REP_ERR_UNSUP);
      return phase::options;
  }
}

// STARTTLS: the ACK goes out in plain text, then the TLS handshake
// (connection.cc, drive_tls_handshake). What was negotiated before is
// forgotten, as the protocol requires. A client that sent anything after
// STARTTLS before our ACK is dropped: those bytes would be plaintext
// injected into the session.
connection::phase connection::handle_starttls(uint32_t option, uint32_t len) {
  if (ctx_.tls == tls_mode::off)
    return reply_option(option, NBD_REP_ERR_POLICY), phase::options;
  if (len || tls_)
    return reply_option(option, NBD_REP_ERR_INVALID), phase::options;
  if (available())
    return phase::closing;
  reply_option(option, NBD_REP_ACK);
  structured_ = extended_ = meta_allocation_ = false;
  return phase::tls_handshake;
}

void connection::reply_export_info(uint32_t option) {
  unsigned char info[12];
  put16(info, NBD_INFO_EXPORT);
  put64(info + 2, ctx_.dev.get_capacity() << SECTOR_SHIFT);
  put16(info + 10, transmission_flags());
  reply_option(option, NBD_REP_INFO, info, sizeof info);
}

connection::phase connection::handle_info_or_go(uint32_t option, const unsigned char* data, uint32_t len) {
  auto invalid = [&] { return reply_option(option, NBD_REP_ERR_INVALID), phase::options; };
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
    return phase::options;
  any_offset_ = !want_block_size;
  return phase::requests;
}

connection::phase connection::handle_meta_context(uint32_t option, const unsigned char* data, uint32_t len) {
  auto invalid = [&] { return reply_option(option, NBD_REP_ERR_INVALID), phase::options; };
  if (!structured_)  // contexts are reported through structured replies only
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
    meta_allocation_ = match;
  if (match) {
    unsigned char reply[4 + sizeof kAllocation - 1];
    put32(reply, option == NBD_OPT_SET_META_CONTEXT ? kMetaContextAllocation : 0);
    std::memcpy(reply + 4, kAllocation, sizeof kAllocation - 1);
    reply_option(option, NBD_REP_META_CONTEXT, reply, sizeof reply);
  }
  reply_option(option, NBD_REP_ACK);
  return phase::options;
}

}  // namespace iov::nbd
