// kernel_style_ramdisk_test.cc: a RAM disk request path written in the
// kernel's C style against iov's kernel names, the way a port of a block
// driver such as brd.c would use them, run against a flat model of the disk
// (random writes, reads and discards).
//
// What it proves: code shaped like a kernel block driver compiles with only
// iov:: in front of the names iov provides and no casts (private_data,
// xas_load() and __xa_cmpxchg() convert as C's void * does), and the names
// keep the kernel's semantics: the RCU lookup with get_page_unless_zero() and
// the xas_reload() recheck, inserts with __xa_cmpxchg() under xa_lock(),
// discards with __xa_erase(), page references, copies with
// memcpy_to_page()/memcpy_from_page() through bvec_kmap_local(), and
// bio_for_each_segment() over single-page segments.
// The driver below is this project's own; the kernel's code is not kept here.
// block_shim.hpp has the bio, the disk and the request flags.
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "port/bio_harness.hpp"
#include "port/block_shim.hpp"

namespace {

// ---- the RAM disk, in the kernel's C style -----------------------------------

/*
 * A RAM disk keeps one page per PAGE_SIZE of the device, indexed by page
 * number in an xarray. A page missing from the xarray reads as zeroes.
 */
struct ramdisk {
	struct gendisk		*disk;
	iov::sector_t		capacity;	/* in sectors */
	struct iov::xarray	pages;
	u64			nr_pages;	/* entries in pages */
};

/*
 * Find the page at idx and take a reference on it, or return NULL.
 * The xarray holds one reference per page; a discard erases the entry
 * under xa_lock and then drops that reference, so a lookup that sees a
 * zero count, or finds the slot changed after taking its reference,
 * starts over.
 */
static struct iov::page *rd_find_page(struct ramdisk *rd, iov::pgoff_t idx)
{
	XA_STATE(xas, &rd->pages, idx);
	struct iov::page *page;

	iov::rcu_read_lock();
	for (;;) {
		iov::xas_reset(&xas);
		page = iov::xas_load(&xas);
		if (iov::xas_retry(&xas, page))
			continue;
		if (!page)
			break;
		if (!iov::get_page_unless_zero(page))
			continue;
		if (likely(iov::xas_reload(&xas) == page))
			break;
		iov::put_page(page);
	}
	iov::rcu_read_unlock();
	return page;
}

/*
 * Give idx a zeroed page and return it with a reference for the caller.
 * Two writers may race to fill the same slot: the loser frees its page
 * (never published, so nobody else can hold it) and uses the winner's.
 */
static struct iov::page *rd_add_page(struct ramdisk *rd, iov::pgoff_t idx, iov::gfp_t gfp)
{
	struct iov::page *fresh, *cur;

	fresh = iov::alloc_page(gfp | iov::__GFP_ZERO | iov::__GFP_HIGHMEM);
	if (!fresh)
		return iov::ERR_PTR(-ENOMEM);

	iov::xa_lock(&rd->pages);
	cur = iov::__xa_cmpxchg(&rd->pages, idx, NULL, fresh, gfp);
	if (iov::xa_is_err(cur)) {
		iov::xa_unlock(&rd->pages);
		iov::__free_page(fresh);
		return iov::ERR_PTR(iov::xa_err(cur));
	}
	if (cur) {
		iov::get_page(cur);
		iov::xa_unlock(&rd->pages);
		iov::__free_page(fresh);
		return cur;
	}
	rd->nr_pages++;
	iov::get_page(fresh);		/* the caller's; the xarray keeps the first */
	iov::xa_unlock(&rd->pages);
	return fresh;
}

/*
 * Copy one bio segment to or from the disk starting at byte pos. A segment
 * lies within one page of the bio's memory but may straddle two disk pages,
 * so it is copied in pieces that end at disk page boundaries; each piece is
 * a bio_vec of its own, so that the mapped address needs no arithmetic.
 */
static int rd_copy_segment(struct ramdisk *rd, const struct iov::bio_vec *bv, u64 pos, blk_opf_t opf)
{
	bool write = op_is_write(opf);
	/* a REQ_NOWAIT caller gets BLK_STS_AGAIN rather than waiting for memory */
	iov::gfp_t gfp = opf & REQ_NOWAIT ? iov::GFP_NOWAIT : iov::GFP_NOIO;
	struct iov::bio_vec piece;
	struct iov::page *page;
	u32 done, off, len;
	void *kaddr;

	for (done = 0; done < bv->bv_len; done += len, pos += len) {
		off = pos & (iov::PAGE_SIZE - 1);
		len = min_t(u32, bv->bv_len - done, iov::PAGE_SIZE - off);
		iov::bvec_set_page(&piece, bv->bv_page, len, bv->bv_offset + done);

		page = rd_find_page(rd, pos >> iov::PAGE_SHIFT);
		if (!page && write) {
			page = rd_add_page(rd, pos >> iov::PAGE_SHIFT, gfp);
			if (iov::IS_ERR(page))
				return iov::PTR_ERR(page);
		}

		kaddr = iov::bvec_kmap_local(&piece);
		if (!page)
			memset(kaddr, 0, len);	/* a hole reads as zeroes */
		else if (write)
			iov::memcpy_to_page(page, off, kaddr, len);
		else
			iov::memcpy_from_page(kaddr, page, off, len);
		iov::kunmap_local(kaddr);

		if (page)
			iov::put_page(page);
	}
	return 0;
}

/*
 * Free the pages wholly inside [sector, sector + nr_bytes / 512); partial
 * pages at either end keep their data, as discard only promises that the
 * range may read back as zeroes. The lock is taken per page so that a long
 * discard does not hold off writers for its whole length.
 */
static void rd_discard_range(struct ramdisk *rd, iov::sector_t sector, u32 nr_bytes)
{
	iov::sector_t end = sector + (nr_bytes >> iov::SECTOR_SHIFT);
	iov::pgoff_t idx = (sector + PAGE_SECTORS - 1) >> PAGE_SECTORS_SHIFT;
	iov::pgoff_t last = min_t(iov::sector_t, end, rd->capacity) >> PAGE_SECTORS_SHIFT;
	struct iov::page *page;

	for (; idx < last; idx++) {
		iov::xa_lock(&rd->pages);
		page = iov::__xa_erase(&rd->pages, idx);
		if (page)
			rd->nr_pages--;
		iov::xa_unlock(&rd->pages);
		if (page)
			iov::put_page(page);
	}
}

/* The disk's submit_bio: every request completes before it returns. */
static void rd_handle_bio(struct bio *bio)
{
	struct ramdisk *rd = bio->bi_bdev->bd_disk->private_data;
	iov::sector_t sector = bio->bi_iter.bi_sector;
	u64 pos = (u64)sector << iov::SECTOR_SHIFT;
	struct iov::bvec_iter iter;
	struct iov::bio_vec bv;
	int err;

	if (sector + (bio->bi_iter.bi_size >> iov::SECTOR_SHIFT) > rd->capacity) {
		bio_io_error(bio);
		return;
	}

	if (op_is_discard(bio->bi_opf)) {
		rd_discard_range(rd, sector, bio->bi_iter.bi_size);
		bio_endio(bio);
		return;
	}

	bio_for_each_segment(bv, bio, iter) {
		err = rd_copy_segment(rd, &bv, pos, bio->bi_opf);
		if (unlikely(err)) {
			if (err == -ENOMEM && (bio->bi_opf & REQ_NOWAIT))
				bio_wouldblock_error(bio);
			else
				bio_io_error(bio);
			return;
		}
		pos += bv.bv_len;
	}
	bio_endio(bio);
}

/* Drop the xarray's reference on every page; no bio may be in flight. */
static void rd_release(struct ramdisk *rd)
{
	struct iov::page *page;
	unsigned long idx;

	xa_for_each(&rd->pages, idx, page) {
		iov::put_page(page);
		cond_resched();
	}
	iov::xa_destroy(&rd->pages);
	rd->nr_pages = 0;
}

// ---- end of the RAM disk -----------------------------------------------------

using iov::PAGE_SIZE;
using iov::SECTOR_SIZE;
using port_test::bytes;

using disk_under_test = port_test::ramdisk_under_test<ramdisk, rd_handle_bio, rd_release>;

TEST(KernelStyleRamdisk, RandomWritesReadsAndDiscardsFollowTheFlatModel) {
  using port_test::req;
  const size_t frames_before = iov::page_alloc_read_stats().frames_in_use;
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    disk_under_test d(512);  // 512 KiB: 1024 sectors, 128 pages
    port_test::random_requests(d.harness, d.model, rng, 600, {req::write, req::write, req::read, req::read, req::discard},
                               [&] { ASSERT_EQ(d.rd.nr_pages, d.pages_present()) << "nr_pages counts the xarray's pages"; });
  }
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, frames_before) << "rd_release() put every page";
}

TEST(KernelStyleRamdisk, ADiscardShorterThanAPageKeepsTheData) {
  std::mt19937_64 rng(9);
  disk_under_test d(64);
  bytes data = port_test::random_bytes(rng, PAGE_SIZE);
  d.submit(REQ_OP_WRITE, 8, &data, rng);
  d.harness.submit_range(REQ_OP_DISCARD, 9, 7 * SECTOR_SIZE);  // inside page 1 but not all of it
  EXPECT_EQ(d.rd.nr_pages, 1u);
  bytes back(PAGE_SIZE);
  d.submit(REQ_OP_READ, 8, &back, rng);
  EXPECT_EQ(back, data);
  d.harness.submit_range(REQ_OP_DISCARD, 8, 8 * SECTOR_SIZE);  // all of it
  EXPECT_EQ(d.rd.nr_pages, 0u);
  d.submit(REQ_OP_READ, 8, &back, rng);
  EXPECT_EQ(back, bytes(PAGE_SIZE, 0));
}

TEST(KernelStyleRamdisk, ABioPastTheEndFailsAndAllocatesNothing) {
  disk_under_test d(64);
  port_test::bio_past_the_end_fails(d, [&] { return d.rd.nr_pages; });
}

}  // namespace
