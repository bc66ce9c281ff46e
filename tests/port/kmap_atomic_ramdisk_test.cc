// kmap_atomic_ramdisk_test.cc: a RAM disk request path in the shape block
// drivers had before kmap_local_page() and memcpy_to_page() (brd.c of the
// 4.x and 5.x kernels): each bio page mapped with kmap_atomic(), the disk's
// pages mapped again inside it, flush_dcache_page() around the copies, the
// one or two pages a write touches allocated before the copy starts, and
// zeroing with clear_highpage() and zero_user_segment(). Run against a flat
// model of the disk (random writes, reads, discards and write-zeroes).
//
// What it proves, beside kernel_style_ramdisk_test.cc: the older names
// compile with iov:: in front and keep the kernel's meaning. The only
// change from C is a mapped address held as `char *` (C does arithmetic on
// void *; a void_ptr would do it too). The driver below is this project's
// own; the kernel's code is not kept here.
#include <algorithm>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "port/bio_harness.hpp"
#include "port/block_shim.hpp"

namespace {

/*
 * The disk keeps a page per PAGE_SIZE once written, in an xarray (the
 * radix tree of its day). Pages stay until the disk goes: a discard zeroes
 * them, so a lookup needs no reference, only the RCU read section that
 * keeps the tree's nodes alive.
 */
struct old_ramdisk {
	struct gendisk		*disk;
	iov::sector_t		capacity;	/* in sectors */
	struct iov::xarray	pages;
};

static struct iov::page *ord_lookup_page(struct old_ramdisk *rd, iov::sector_t sector)
{
	struct iov::page *page;

	iov::rcu_read_lock();
	page = iov::xa_load(&rd->pages, sector >> PAGE_SECTORS_SHIFT);
	iov::rcu_read_unlock();
	return page;
}

/* Give the page holding sector a zeroed frame unless it has one. */
static int ord_insert_page(struct old_ramdisk *rd, iov::sector_t sector)
{
	struct iov::page *page;
	int err;

	if (ord_lookup_page(rd, sector))
		return 0;
	page = iov::alloc_page(iov::GFP_NOIO | iov::__GFP_ZERO | iov::__GFP_HIGHMEM);
	if (!page)
		return -ENOMEM;
	err = iov::xa_insert(&rd->pages, sector >> PAGE_SECTORS_SHIFT, page, iov::GFP_NOIO);
	if (err) {
		iov::__free_page(page);
		if (err == -EBUSY)	/* another writer got there first */
			err = 0;
	}
	return err;
}

/* Before a write of n bytes at sector: the one or two pages it falls into. */
static int ord_copy_setup(struct old_ramdisk *rd, iov::sector_t sector, size_t n)
{
	unsigned int offset = (sector & (PAGE_SECTORS - 1)) << iov::SECTOR_SHIFT;
	size_t copy = min_t(size_t, n, iov::PAGE_SIZE - offset);
	int err;

	err = ord_insert_page(rd, sector);
	if (!err && copy < n)
		err = ord_insert_page(rd, sector + (copy >> iov::SECTOR_SHIFT));
	return err;
}

static void ord_copy_to(struct old_ramdisk *rd, const void *src, iov::sector_t sector, size_t n)
{
	unsigned int offset = (sector & (PAGE_SECTORS - 1)) << iov::SECTOR_SHIFT;
	size_t copy = min_t(size_t, n, iov::PAGE_SIZE - offset);
	struct iov::page *page;
	char *dst;

	page = ord_lookup_page(rd, sector);
	dst = iov::kmap_atomic(page);
	memcpy(dst + offset, src, copy);
	iov::kunmap_atomic(dst);

	if (copy < n) {
		src = (const char *)src + copy;
		sector += copy >> iov::SECTOR_SHIFT;
		copy = n - copy;
		page = ord_lookup_page(rd, sector);
		dst = iov::kmap_atomic(page);
		memcpy(dst, src, copy);
		iov::kunmap_atomic(dst);
	}
}

/* A page never written reads as zeroes. */
static void ord_copy_from(void *dst, struct old_ramdisk *rd, iov::sector_t sector, size_t n)
{
	unsigned int offset = (sector & (PAGE_SECTORS - 1)) << iov::SECTOR_SHIFT;
	size_t copy = min_t(size_t, n, iov::PAGE_SIZE - offset);
	struct iov::page *page;
	char *src;

	page = ord_lookup_page(rd, sector);
	if (page) {
		src = iov::kmap_atomic(page);
		memcpy(dst, src + offset, copy);
		iov::kunmap_atomic(src);
	} else {
		memset(dst, 0, copy);
	}

	if (copy < n) {
		dst = (char *)dst + copy;
		sector += copy >> iov::SECTOR_SHIFT;
		copy = n - copy;
		page = ord_lookup_page(rd, sector);
		if (page) {
			src = iov::kmap_atomic(page);
			memcpy(dst, src, copy);
			iov::kunmap_atomic(src);
		} else {
			memset(dst, 0, copy);
		}
	}
}

static int ord_do_bvec(struct old_ramdisk *rd, struct iov::page *page, unsigned int len,
		       unsigned int off, blk_opf_t op, iov::sector_t sector)
{
	char *mem;
	int err;

	if (op_is_write(op)) {
		err = ord_copy_setup(rd, sector, len);
		if (err)
			return err;
	}

	mem = iov::kmap_atomic(page);
	if (!op_is_write(op)) {
		ord_copy_from(mem + off, rd, sector, len);
		iov::flush_dcache_page(page);
	} else {
		iov::flush_dcache_page(page);
		ord_copy_to(rd, mem + off, sector, len);
	}
	iov::kunmap_atomic(mem);
	return 0;
}

/*
 * Zero nr_bytes at sector in the pages that exist (the others read as
 * zeroes already). With whole_only, as a discard, only whole pages are
 * zeroed and the partial pages at either end keep their data.
 */
static void ord_zero_range(struct old_ramdisk *rd, iov::sector_t sector, u32 nr_bytes, bool whole_only)
{
	u64 pos = (u64)sector << iov::SECTOR_SHIFT;
	u64 end = pos + nr_bytes;
	struct iov::page *page;
	unsigned int start, stop;

	while (pos < end) {
		start = pos & (iov::PAGE_SIZE - 1);
		stop = min_t(u64, iov::PAGE_SIZE, start + (end - pos));
		page = ord_lookup_page(rd, pos >> iov::SECTOR_SHIFT);
		if (page) {
			if (start == 0 && stop == iov::PAGE_SIZE)
				iov::clear_highpage(page);
			else if (!whole_only)
				iov::zero_user_segment(page, start, stop);
		}
		pos += stop - start;
	}
}

static void ord_submit_bio(struct bio *bio)
{
	struct old_ramdisk *rd = bio->bi_bdev->bd_disk->private_data;
	iov::sector_t sector = bio->bi_iter.bi_sector;
	struct iov::bvec_iter iter;
	struct iov::bio_vec bvec;
	int err;

	if (sector + (bio->bi_iter.bi_size >> iov::SECTOR_SHIFT) > rd->capacity) {
		bio_io_error(bio);
		return;
	}

	switch (bio_op(bio)) {
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
		ord_zero_range(rd, sector, bio->bi_iter.bi_size, bio_op(bio) == REQ_OP_DISCARD);
		bio_endio(bio);
		return;
	}

	bio_for_each_segment(bvec, bio, iter) {
		unsigned int len = bvec.bv_len;

		err = ord_do_bvec(rd, bvec.bv_page, len, bvec.bv_offset, bio->bi_opf, sector);
		if (err) {
			bio_io_error(bio);
			return;
		}
		sector += len >> iov::SECTOR_SHIFT;
	}
	bio_endio(bio);
}

static void ord_free_pages(struct old_ramdisk *rd)
{
	struct iov::page *page;
	unsigned long idx;

	xa_for_each(&rd->pages, idx, page) {
		iov::__free_page(page);
		cond_resched();
	}
	iov::xa_destroy(&rd->pages);
}

// ---- end of the RAM disk -----------------------------------------------------

using iov::PAGE_SIZE;
using iov::SECTOR_SIZE;
using port_test::bytes;

using disk_under_test = port_test::ramdisk_under_test<old_ramdisk, ord_submit_bio, ord_free_pages>;

TEST(KmapAtomicRamdisk, RandomWritesReadsDiscardsAndWriteZeroesFollowTheFlatModel) {
  using port_test::req;
  const size_t frames_before = iov::page_alloc_read_stats().frames_in_use;
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    disk_under_test d(512);  // 512 KiB: 1024 sectors, 128 pages
    port_test::random_requests(d.harness, d.model, rng, 600,
                               {req::write, req::write, req::read, req::read, req::discard, req::write_zeroes});
    // Every page ever written keeps its frame (discard and write-zeroes
    // zero it): as many frames as pages with a byte other than zero, or more.
    size_t nonzero_pages = 0;
    for (size_t off = 0; off < d.model.data.size(); off += PAGE_SIZE)
      nonzero_pages += !std::all_of(d.model.data.begin() + off, d.model.data.begin() + off + PAGE_SIZE,
                                    [](unsigned char c) { return c == 0; });
    EXPECT_GE(d.pages_present(), nonzero_pages);
    EXPECT_GT(nonzero_pages, 0u);
  }
  EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, frames_before) << "ord_free_pages() freed every page";
}

TEST(KmapAtomicRamdisk, AWriteAcrossTwoDiskPagesAllocatesBothBeforeCopying) {
  std::mt19937_64 rng(5);
  disk_under_test d(64);
  bytes data = port_test::random_bytes(rng, 2 * SECTOR_SIZE);
  // Sectors 7 and 8: the last of disk page 0 and the first of page 1, in one bvec or two.
  bio b = d.submit(REQ_OP_WRITE, 7, &data, rng);
  ASSERT_EQ(b.bi_status, BLK_STS_OK);
  EXPECT_EQ(d.pages_present(), 2u);
  bytes back(3 * SECTOR_SIZE);
  d.submit(REQ_OP_READ, 6, &back, rng);
  EXPECT_EQ(bytes(back.begin(), back.begin() + SECTOR_SIZE), bytes(SECTOR_SIZE, 0));
  EXPECT_EQ(bytes(back.begin() + SECTOR_SIZE, back.end()), data);
}

TEST(KmapAtomicRamdisk, ABioPastTheEndFailsAndAllocatesNothing) {
  disk_under_test d(64);
  port_test::bio_past_the_end_fails(d, [&] { return d.pages_present(); });
}

}  // namespace
