// loop_style_read_test.cc: a read path in the style of drivers/block/loop.c
// and the crypto/NVMe-oF users of extract_iter_to_sg(), written in the
// kernel's C style against iov's names (iov:: in front) and the generic
// vocabulary of iov/linux/kernel.hpp: a backing store of pages is read into
// a bvec iterator with copy_page_to_iter(), into a user buffer through
// iov_iter_extract_pages() (with the kernel's will_pin -> unpin branch) and
// memcpy_from_page(), and described to a "device" with extract_iter_to_sg().
// Every byte is checked against the backing store.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "iov/linux/kernel.hpp"
#include "iov/scatterlist.hpp"

namespace {

using iov::u8;

struct backing {
	iov::page **pages;
	unsigned int nr_pages;
};

static int backing_init(struct backing *b, unsigned int nr_pages)
{
	b->pages = static_cast<iov::page **>(iov::kcalloc(nr_pages, sizeof(*b->pages), iov::GFP_KERNEL));
	if (!b->pages)
		return -ENOMEM;
	if (iov::alloc_pages_bulk(iov::GFP_KERNEL, nr_pages, b->pages) != nr_pages)
		return -ENOMEM;
	b->nr_pages = nr_pages;
	for (unsigned int i = 0; i < nr_pages; i++) {
		u8 *p = iov::kmap_local_page(b->pages[i]);
		for (size_t k = 0; k < iov::PAGE_SIZE; k++)
			p[k] = (u8)(i * 131 + k * 7);
		iov::kunmap_local(p);
	}
	return 0;
}

static void backing_free(struct backing *b)
{
	iov::release_pages(b->pages, b->nr_pages);
	iov::kfree(b->pages);
}

/* loop_read_bvec()'s shape: copy from the store at pos into the iterator. */
static ssize_t loop_read(struct backing *b, loff_t pos, struct iov::iov_iter *to)
{
	ssize_t done = 0;

	while (iov::iov_iter_count(to)) {
		unsigned int idx = pos >> iov::PAGE_SHIFT, off = iov::offset_in_page(pos);
		size_t len = min_t(size_t, iov::iov_iter_count(to), iov::PAGE_SIZE - off);

		if (unlikely(idx >= b->nr_pages))
			break;
		if (iov::copy_page_to_iter(b->pages[idx], off, len, to) != len)
			return -EFAULT;
		pos += len;
		done += len;
	}
	return done;
}

/* A read into memory named by its pages, as a direct-I/O path does. */
static ssize_t read_to_extracted(struct backing *b, loff_t pos, struct iov::iov_iter *iter)
{
	iov::page *pages[16], **pp = pages;
	size_t off0;
	ssize_t n = iov::iov_iter_extract_pages(iter, &pp, SIZE_MAX, ARRAY_SIZE(pages), 0, &off0);
	size_t left = n, off = off0;

	if (n <= 0)
		return n;
	for (int i = 0; left; i++) {
		size_t len = min_t(size_t, left, iov::PAGE_SIZE - off);
		size_t done = 0;

		while (done < len) {
			unsigned int idx = (pos + done) >> iov::PAGE_SHIFT;
			unsigned int soff = iov::offset_in_page(pos + done);
			size_t part = min_t(size_t, len - done, iov::PAGE_SIZE - soff);

			iov::memcpy_from_page((char *)iov::page_address(pages[i]) + off + done,
					      b->pages[idx], soff, part);
			done += part;
		}
		pos += len;
		left -= len;
		off = 0;
	}
	if (iov::iov_iter_extract_will_pin(iter))
		iov::unpin_user_pages(pages, DIV_ROUND_UP(off0 + n, iov::PAGE_SIZE));
	return n;
}

TEST(LoopStyleRead, BvecUserAndScatterlistPathsReadTheStore)
{
	struct backing b;
	ASSERT_EQ(backing_init(&b, 8), 0);
	std::vector<u8> want(8 * iov::PAGE_SIZE);
	for (unsigned int i = 0; i < 8; i++)
		std::memcpy(&want[i * iov::PAGE_SIZE], iov::page_address(b.pages[i]), iov::PAGE_SIZE);

	/* Into two bvecs of a destination page pair. */
	iov::page *dst = iov::alloc_pages(iov::GFP_KERNEL, 1);
	struct iov::bio_vec bv[2];
	iov::bvec_set_page(&bv[0], dst, 3000, 100);
	iov::bvec_set_page(&bv[1], dst, 4000, 4000);
	struct iov::iov_iter it;
	iov::iov_iter_bvec(&it, iov::ITER_DEST, bv, 2, 7000);
	ASSERT_EQ(loop_read(&b, 5000, &it), 7000);
	EXPECT_EQ(std::memcmp((u8 *)iov::page_address(dst) + 100, &want[5000], 3000), 0);
	EXPECT_EQ(std::memcmp((u8 *)iov::page_address(dst) + 4000, &want[8000], 4000), 0);

	/* Into a user buffer through its pages. */
	std::vector<u8> user(20000);
	iov::iov_iter_ubuf(&it, iov::ITER_DEST, user.data() + 3, 15000);
	loff_t pos = 1234;
	while (iov::iov_iter_count(&it)) {
		ssize_t n = read_to_extracted(&b, pos, &it);
		ASSERT_GT(n, 0);
		pos += n;
	}
	EXPECT_EQ(std::memcmp(user.data() + 3, &want[1234], 15000), 0);

	/* Describe the user buffer to a device with a scatterlist, then fill it. */
	struct iov::scatterlist sgl[8];
	struct iov::sg_table sgt = { sgl, 0, 0 };
	std::vector<u8> user2(9000);
	iov::sg_init_table(sgl, ARRAY_SIZE(sgl));
	iov::iov_iter_ubuf(&it, iov::ITER_DEST, user2.data() + 10, 8000);
	ssize_t n = iov::extract_iter_to_sg(&it, 8000, &sgt, ARRAY_SIZE(sgl), 0);
	ASSERT_EQ(n, 8000);
	iov::sg_mark_end(&sgl[sgt.nents - 1]);
	EXPECT_EQ(iov::sg_nents(sgl), (int)sgt.nents);
	EXPECT_EQ(iov::sg_copy_from_buffer(sgl, sgt.nents, &want[300], 8000), 8000u);
	EXPECT_EQ(std::memcmp(user2.data() + 10, &want[300], 8000), 0);

	iov::__free_pages(dst, 1);
	backing_free(&b);
}

}  // namespace
