#!/usr/bin/env python3
"""make-corpus.py: writes the seed inputs of fuzz/corpus/<target>/ (deterministic).

Each seed is a small, readable program in the byte language its target's
reader decodes (fuzz_model.hpp's fuzz::input: little-endian integers, reads
past the end give zeroes). Rerun after changing a decoder:

    fuzz/make-corpus.py            # rewrites the seed-* files, keeps the rest
"""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
PAGE = 4096


def u8(v): return bytes([v & 0xff])
def u16(v): return struct.pack("<H", v)
def u32(v): return struct.pack("<I", v)
def u64(v): return struct.pack("<Q", v)


def below(n, v):
    """fuzz::input::below(n) reading v."""
    if n <= 1: return b""
    if n <= 256: return u8(v)
    if n <= 65536: return u16(v)
    return u64(v)


def length(n=None, pages=None, delta=0):
    """fuzz::input::length: n < 64 exactly, pages * PAGE + delta, any u16, or None = the maximum."""
    if pages is not None: return u8(pages << 2 | 1) + u8(delta + 16)
    if n is None: return u8(3)
    if n < 64: return u8(n << 2)
    return u8(2) + u16(n)


# --- fuzz_iov_iter ----------------------------------------------------------
UBUF, IOVEC, KVEC, BVEC, XARRAY, DISCARD = range(6)
DEST, SOURCE = 0, 1
NOISE, ZERO, SPARSE = 1, 0, 2  # fill() seeds


def head(t, d, seed=NOISE): return u8(t | d << 3) + u8(seed)
def full_count(): return u8(0)
def vec_new(n): return u8(2) + length(n)
def vec_empty(null): return u8(0) + u8(1 if null else 0)
def bvec_new(order, off, n, split=0): return u8(1) + u8(order) + below((PAGE << order) + 1, off) + length(n) + u8(split)


OP = dict(copy_to=0, copy_from=1, full=2, zero=3, crc=4, scan=5, advance=6, revert=7, truncate=8,
          reexpand=9, save=10, restore=11, extract=12, walk=13, crc_flat=13 | 0x40)


def op(name, *args, ool=False): return u8(OP[name] | (0x80 if ool else 0)) + b"".join(args)


def iov_iter_seeds():
    ops_rw = (op("copy_to", length(pages=1, delta=3), u8(NOISE), u8(0), u32(0)) +
              op("revert", below(4100, 2000)) +
              op("copy_from", length(pages=2), u8(1), u32(0xffffffff), ool=True) +
              op("crc", length(None), u32(0), ool=True) +
              op("scan", length(700), u8(1)) + op("scan", length(700), u8(0)))
    seeds = {
        "ubuf-dest": head(UBUF, DEST) + length(pages=2, delta=-5) + full_count() + ops_rw +
                     op("zero", length(100)) + op("save") + op("advance", length(300)) + op("restore"),
        "ubuf-source-extract": head(UBUF, SOURCE, SPARSE) + length(pages=3, delta=7) + full_count() +
                               op("advance", length(33)) + op("extract", length(None), u8(2), u8(1)) +
                               op("copy_from", length(None), u8(0), u32(0)),
        "iovec-empty-segs": head(IOVEC, DEST) + u8(5) + vec_new(100) + vec_empty(True) + vec_new(200) +
                            vec_empty(False) + vec_new(100) + full_count() + ops_rw +
                            op("walk", u8(0), length(None), length(150)) + op("walk", u8(1), length(None), length(0)),
        "kvec-truncate-reexpand": head(KVEC, DEST, SPARSE) + u8(4) + vec_new(PAGE) + vec_new(1) + vec_empty(True) +
                                  vec_new(3000) + u8(1) + below(7098, 5000) + op("truncate", u8(0), length(4000)) +
                                  op("zero", length(None)) + op("reexpand", below(7098 - 4000 + 1, 3000)) +
                                  op("scan", length(3000), u8(0)) + op("walk", u8(3), length(None), length(None)),
        "bvec-multipage": head(BVEC, SOURCE) + u8(3) + bvec_new(2, 100, 3 * PAGE) + bvec_new(0, 4096, 0) +
                          bvec_new(1, 5000, 2000, 1) + full_count() + ops_rw +
                          op("extract", length(None), u8(8), u8(0)) + op("walk", u8(2), length(None), length(5000)),
        # extraction stops at an empty bio_vec, as the kernel's does
        "bvec-empty-extract": head(BVEC, SOURCE) + u8(3) + bvec_new(0, 0, 0) + bvec_new(0, 0, 0) + bvec_new(0, 0, 62) +
                              full_count() + op("extract", length(None), u8(1), u8(0)) +
                              op("walk", u8(0), length(None), length(None)),
        "bvec-dest-crc": head(BVEC, DEST, ZERO) + u8(2) + bvec_new(0, 0, PAGE) + bvec_new(0, 10, 4000) + full_count() +
                         op("copy_to", length(None), u8(SPARSE), u8(1), u32(0x12345678), ool=True) +
                         op("revert", below(8097, 8096)) + op("crc", length(None), u32(0)),
        "xarray-hole": head(XARRAY, DEST) + u8(1) + u8(1) + u8(1) + u8(4) + u16(4000) + u8(1) + u8(0) + u8(1) +
                       u8(1) + full_count() + op("copy_to", length(None), u8(NOISE), u8(0), u32(0)) +
                       op("advance", length(pages=1, delta=0)) + op("extract", length(None), u8(4), u8(1)) +
                       op("crc", length(None), u32(1)),
        "xarray-far": head(XARRAY, SOURCE, SPARSE) + u8(2) + u64(0x3ffffffffff0) + u8(3) + u16(17) + u8(1) * 3 +
                      full_count() + op("scan", length(None), u8(0)) + op("copy_from", length(None), u8(1), u32(7)),
        "discard": head(DISCARD, SOURCE) + length(pages=2) + full_count() +
                   op("copy_to", length(500), u8(1), u8(1), u32(0)) + op("revert", below(501, 400)) +
                   op("extract", length(None), u8(1), u8(1)) + op("reexpand", below(8192 - 100 + 1, 8000)) +
                   op("crc_flat", u32(0xffffffff), length(None), u8(NOISE), u64(1 << 40), u8(20)),
    }
    return seeds


# --- fuzz_xarray ------------------------------------------------------------
def xa_small(i): return u8(0) + u8(i)
def xa_edge(k, d): return u8(1) + u8(k - 1) + u8(d + 2)  # 64^k + d
def xa_top(d): return u8(2) + u8(d)                        # ULONG_MAX - d
def xa_any(i): return u8(3) + u64(i)
def xa_ptr(v): return u8(3) + u64(v)
def xa_value(v): return u8(0) + u64(v)
def xa_internal(v): return u8(1) + u8(1) + u8(v)
XA_NULL = u8(2)


def xa_op(code, index, *args, member=False): return u8(code | (0x80 if member else 0)) + index + b"".join(args)
def xa_store(index, entry, member=False): return xa_op(0, index, entry, member=member)
def xa_erase(index): return xa_op(1, index)
def xa_load(index): return xa_op(2, index)
def xa_audit(): return xa_op(8, xa_small(0), u8(1))
def xa_find(start, after=False): return xa_op(5, xa_small(0), start, u8(1), u8(1 if after else 0))


def xarray_seeds():
    return {
        "grow-shrink": xa_store(xa_small(5), xa_ptr(0x1000)) + xa_store(xa_edge(3, 1), xa_value(42)) + xa_audit() +
                       xa_erase(xa_edge(3, 1)) + xa_audit() + xa_find(xa_small(6)) + xa_load(xa_small(5), ),
        "top-of-range": xa_store(xa_top(0), xa_ptr(0x2000), member=True) + xa_store(xa_small(0), xa_value(1)) +
                        xa_op(6, xa_small(0), xa_small(0), u8(1), u8(1)) + xa_erase(xa_small(0)) + xa_audit() +
                        xa_find(xa_top(1), after=True),
        "enomem": xa_store(xa_small(1), xa_ptr(0x3000)) +
                  xa_op(7, xa_edge(10, 0), u16(9), u8(3), u8(0)) + xa_audit() +
                  xa_op(7, xa_edge(2, -1), u16(9), u8(5), u8(2)) + xa_audit(),
        "cmpxchg-insert": xa_store(xa_small(7), xa_ptr(0x4000)) + xa_op(3, xa_small(7), u8(1), XA_NULL) +
                          xa_op(4, xa_small(7), xa_value(3)) + xa_op(4, xa_small(7), xa_ptr(0x5000)) +
                          xa_store(xa_small(8), xa_internal(1)) + xa_op(8, xa_small(0), u8(0)) + xa_audit(),
    }


# --- fuzz_imports -------------------------------------------------------------
def real(n, seed=NOISE): return u8(0) + length(n) + u8(seed)
def fake(base_kind, base, len_kind, ln):
    """hostile_extent: base_kind 0 null, 1 top - base, 2 plausible (base = u32), 3 any; len_kind 3..7."""
    enc_base = [lambda: b"", lambda: u16(base), lambda: u32(base), lambda: u64(base)][base_kind]()
    enc_len = u16(ln) if len_kind == 3 else u64(ln) + u8(0) if len_kind == 7 else u8(ln)
    return u8(len_kind | base_kind << 3) + enc_base + enc_len
def imp(code, *args): return u8(code) + b"".join(args)
def imp_iovec(d, nr, *segs, null=False): return imp(0, u8(d), u8(255) + u8(nr - 1020) if nr >= 1020 else u8(0) + u8(nr),
                                                  u8(255 if null else 0), *segs)
def opts(dirbits=2, shift=0): return u8(dirbits) + u8(shift)  # dir 1 + b % 3 (2: RW), shift 12 + s % 10
def buf(extent): return u8(1) + extent
SPARSE_BUF = u8(0)


def imports_seeds():
    return {
        "iovec": u8(0) +
                 imp_iovec(SOURCE, 4, real(100), fake(0, 0, 3, 0), real(5000), fake(2, 7, 3, 300), u8(1)) +
                 imp_iovec(DEST, 2, real(3000), real(1), u8(2)) +
                 imp_iovec(DEST, 2, real(10), fake(0, 0, 3, 10)) +
                 imp_iovec(DEST, 3, null=True) + imp_iovec(251, 1, real(1)) + imp_iovec(SOURCE, 1025),
        "iovec-max-rw": u8(0) + imp_iovec(DEST, 3, real(7), fake(2, 1, 5, 2), fake(2, 9, 5, 0), u8(1)) +
                        imp_iovec(SOURCE, 1, fake(3, 2**63, 4, 0)) + imp_iovec(SOURCE, 1, fake(1, 0, 3, 1)),
        "ubuf": u8(0) + imp(1, u8(DEST), real(PAGE + 100), u8(1)) + imp(1, u8(SOURCE), fake(1, 10, 3, 100)) +
                imp(1, u8(DEST), fake(0, 0, 3, 5)) + imp(1, u8(SOURCE), fake(2, 3, 4, 1)) +
                imp(1, u8(SOURCE), fake(2, 3, 5, 4)),
        "fixed": u8(4) +
                 imp(2, u8(3), opts(2, 0), buf(real(3 * PAGE - 5)), SPARSE_BUF, buf(fake(2, 5, 6, 1))) +
                 imp(4, u8(0), u8(SOURCE), u8(1) + u16(100) + u8(1), u8(NOISE), u8(1)) +
                 imp(4, u8(2), u8(DEST), u8(1) + u64(12345) + u8(0) + u64(9000), u8(1)) +
                 imp(3, u8(0), SPARSE_BUF, opts(), u8(0)) + imp(5) +
                 imp(4, u8(0), u8(DEST), u64(0), u8(0), u64(0), u8(0)) +
                 imp(4, u8(5), u8(DEST), u64(0), u8(0), u64(0), u8(0)) +
                 imp(4, u8(2), u8(DEST), u8(0), u64(2**63), u8(0), u64(100), u8(0)),
        "fixed-folios": u8(3) +
                        imp(2, u8(1), opts(0, 9), buf(real(5 * PAGE + 3))) +
                        imp(4, u8(0), u8(DEST), u8(1) + u16(PAGE + 7) + u8(0) + u16(3 * PAGE), u8(ZERO), u8(1)) +
                        imp(3, u8(0), buf(real(700)), opts(1, 3), u8(1)) + imp(5) +
                        imp(4, u8(0), u8(SOURCE), u8(1) + u16(5) + u8(1), u8(1)),
        "register-bad": u8(2) + imp(2, u8(4)) + imp(2, u8(1), opts(2, 240), buf(real(10))) +
                        imp(2, u8(1), opts(243, 0), buf(real(10))) + imp(2, u8(2), opts(), buf(fake(0, 0, 3, 8))) +
                        imp(3, u8(5), SPARSE_BUF, opts(), u8(1)) + imp(3, u8(1), SPARSE_BUF, opts(), u8(0)) +
                        imp(2, u8(1), opts(), buf(fake(1, 100, 3, 1000))) + imp(2, u8(1), opts(), buf(fake(2, 1, 6, 2))),
    }


# --- fuzz_drivers -------------------------------------------------------------
READ, WRITE, FLUSH, DISCARD, WZEROES, APPEND, ZOPEN, ZCLOSE, ZFINISH, ZRESET, ZRESET_ALL = 0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12
FUA, PREFLUSH, NOUNMAP = 1, 2, 4


def brd(pages, dz=0, max_pages=None):
    return u8(0) + u8(pages - 1) + u8(0) + u8(dz) + (u8(0) + u8(max_pages) if max_pages is not None else u8(1))


def null(bs_shift=0, backed=True, cache=False, fua=True, discard=False, pages=None, zoned=None):
    """zoned = (zone_size_mib, capacity_mib, full_zones, partial_blocks, conv)."""
    b = u8(3 if zoned else 1) + u8(bs_shift) + u8(1 if backed else 0) + u8(0 if cache else 1) + u8(fua) + u8(discard)
    if zoned:
        size, cap, full, part, conv = zoned
        return b + u8(size - 1) + u8(cap) + (u8(full - 1) if size == 1 else b"") + u16(part) + u8(conv)
    return b + (u16 if cache else u8)(pages - 1)


def at_sector(sector):   # pick_sector mode 3 (any u64), aligned
    return u8(3) + u64(sector) + u8(1)


def zone_sector(zone, wp): return u8(2) + u8(zone) + u8(1 if wp else 0) + u8(1)


def rq(op, sector, layout=b"", flags=0, trim=None, legacy=0, outofline=0):
    body = u8(1) + u8(op) + u8(flags) + sector + layout
    if layout: body += u8(1)  # whole blocks
    if trim is not None: body += u8(0) + u8(trim)
    return body + u8(legacy) + u8(outofline)


def services(sector=u8(4) + u8(1), whole=True, crc=0xffffffff):
    return u8(0) + sector + (u8(7) if whole else u8(1) + u16(8)) + u32(crc)


def ubuf(d, n, seed=NOISE): return head(UBUF, d, seed) + length(n) + full_count()


def drivers_seeds():
    bvec3 = head(BVEC, DEST) + u8(3) + bvec_new(0, 512, 1024) + bvec_new(1, 0, 2 * PAGE) + bvec_new(0, 0, 1024) + full_count()
    return {
        "brd-rw": brd(16) + rq(WRITE, at_sector(0), ubuf(SOURCE, 8192)) + rq(READ, at_sector(2), bvec3, outofline=1) +
                  rq(WRITE, at_sector(7), ubuf(SOURCE, 1536), legacy=1) + rq(READ, at_sector(120), ubuf(DEST, 8192)) +
                  services(),
        "brd-zeroes-budget": brd(8, dz=2, max_pages=2) + rq(WRITE, at_sector(8), ubuf(SOURCE, 3 * PAGE, ZERO)) +
                             rq(WRITE, at_sector(1), ubuf(SOURCE, 2 * PAGE)) + rq(WRITE, at_sector(40), ubuf(SOURCE, PAGE)) +
                             rq(WZEROES, at_sector(3), trim=20, flags=NOUNMAP) + rq(DISCARD, at_sector(1), trim=40) +
                             services(),
        "brd-discard-partial": brd(4) + rq(WRITE, at_sector(0), ubuf(SOURCE, 2 * PAGE)) + rq(DISCARD, at_sector(3), trim=20) +
                               rq(WZEROES, at_sector(9), trim=2) + rq(READ, at_sector(0), ubuf(DEST, 2 * PAGE)),
        "brd-xarray-hole": brd(8, dz=1) + rq(WRITE, at_sector(0), head(XARRAY, SOURCE, SPARSE) + u8(0) + u8(0) + u8(3) +
                                             u16(0) + u8(1) + u8(0) + u8(1) + full_count()) + services(),
        "null-cache": null(bs_shift=3, cache=True, discard=True, pages=300) +
                      rq(WRITE, at_sector(0), ubuf(SOURCE, 16384), flags=FUA) +
                      rq(WRITE, at_sector(64), ubuf(SOURCE, 8192), flags=PREFLUSH) + rq(FLUSH, u8(4) + u8(1)) +
                      rq(DISCARD, at_sector(8), trim=16) + rq(READ, at_sector(0), ubuf(DEST, 24576)) + services(),
        "null-cache-fua-over": null(bs_shift=0, cache=True, pages=16) + rq(WRITE, at_sector(0), ubuf(SOURCE, 8192)) +
                               rq(WRITE, at_sector(4), ubuf(SOURCE, 4096, SPARSE), flags=FUA) +
                               rq(READ, at_sector(0), ubuf(DEST, 8192)),
        "null-plain": null(bs_shift=1, pages=8) + rq(WRITE, at_sector(4), ubuf(SOURCE, 2048)) +
                      rq(WRITE, at_sector(3), ubuf(SOURCE, 1024)) + rq(READ, at_sector(0), ubuf(DEST, 4096)) +
                      rq(DISCARD, at_sector(0), trim=8) + services(),
        "null-zoned": null(zoned=(1, 0, 2, 100, 1)) +
                      rq(WRITE, zone_sector(1, True), ubuf(SOURCE, 8192)) + rq(APPEND, zone_sector(1, False), ubuf(SOURCE, 4096)) +
                      rq(WRITE, zone_sector(0, False), ubuf(SOURCE, 4096)) + rq(READ, zone_sector(1, False), ubuf(DEST, 20480)) +
                      rq(ZCLOSE, zone_sector(1, False)) + rq(ZOPEN, zone_sector(2, False)) + services() +
                      rq(ZFINISH, zone_sector(2, False)) + rq(ZRESET, zone_sector(1, False)) + rq(ZRESET_ALL, u8(4) + u8(1)) +
                      services(),
        "null-zoned-capacity": null(zoned=(2, 1, 1, 8, 0)) + rq(APPEND, zone_sector(0, False), ubuf(SOURCE, 8192)) +
                               rq(ZFINISH, zone_sector(0, False)) + rq(READ, at_sector(2040), ubuf(DEST, 8192)) + services(),
    }


# fuzz_nbd_session: device (0 brd, 1 null_blk, 2 null_blk 4k, 3 and 4 with
# the cache), how (bit 0 TLS, (how >> 1 & 3) % 3 the replies, bit 3 block sizes
# negotiated), io_per_call - 1, then requests: type (0 WRITE, 1 READ, 2 TRIM,
# 3 WRITE_ZEROES), flags, where (0: the offset below 256 KiB follows), length
# - 1 below min(96 KiB, 128 * io_per_call), a WRITE's bytes (or `data`).
SESSION_SIZE = 256 * 1024


def session(device, tls, replies, blocks, per_call, *requests):
    how = (1 if tls else 0) | replies << 1 | (8 if blocks else 0)
    return u8(device) + u8(how) + u16(per_call - 1) + b"".join(requests)


def nbd_rq(kind, off, n, per_call, flags=0, data=None, lbs=512):
    most = max(min(96 * 1024, per_call * 128), lbs)
    if kind == 0 and data is None:
        data = bytes((k * 7 + 1) & 0xff for k in range(n))
    return u8(kind) + u8(flags) + u8(0) + below(SESSION_SIZE, off) + below(most, n - 1) + (data or b"")


def nbd_session_seeds():
    seeds = {}
    for device, name in ((0, "brd"), (2, "null-4k")):
        for tls in (False, True):
            for replies in (0, 1, 2):
                pc = 4097 if tls else 1000
                seeds[f"{name}-{'tls' if tls else 'plain'}-{replies}"] = session(
                    device, tls, replies, False, pc, nbd_rq(0, 0, 12288, pc), nbd_rq(1, 0, 4096, pc),
                    nbd_rq(3, 5000, 3000, pc, flags=2), nbd_rq(2, 4096, 8192, pc), nbd_rq(1, 100, 16000, pc))
    seeds["null-blocks-1byte"] = session(1, False, 1, True, 1, nbd_rq(0, 512, 512, 1), nbd_rq(1, 0, 1024, 1))
    return seeds


TARGETS = {"fuzz_iov_iter": iov_iter_seeds, "fuzz_xarray": xarray_seeds, "fuzz_imports": imports_seeds,
           "fuzz_drivers": drivers_seeds, "fuzz_nbd_session": nbd_session_seeds}


def main():
    for target, make in TARGETS.items():
        d = os.path.join(ROOT, target)
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            if name.startswith("seed-"): os.remove(os.path.join(d, name))
        for name, data in make().items():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
