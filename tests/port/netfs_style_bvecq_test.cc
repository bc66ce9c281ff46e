// netfs_style_bvecq_test.cc: a write path in the style of netfs as queued
// for 7.4, in the kernel's C style against iov's names (iov:: in front) and
// iov/linux/kernel.hpp: a buffer from bvecq_alloc_buffer() is filled through
// an ITER_BVECQ iterator, cut into subrequests with bvecq_slice() (sizes)
// and bvecq_extract() (each subrequest's own chain), and each subrequest is
// "sent" by copying out of its chain; the bytes sent, in order, are the
// bytes written, and bvecq_put() returns every page.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "iov/iov.hpp"
#include "iov/linux/kernel.hpp"
#include "iov/page_alloc.hpp"

namespace {

using iov::u8;

struct subreq {
	struct iov::bvecq *content;
	size_t len;
};

/* Cut the buffer from pos into subrequests of at most wsize bytes and
 * max_segs segments, as netfs_prepare_write() bounds an RPC. */
static int issue_writes(struct iov::bvecq_pos *pos, size_t len, size_t wsize,
			unsigned int max_segs, std::vector<struct subreq> *out)
{
	while (len) {
		struct iov::bvecq_pos probe;
		unsigned int nr_slots;
		size_t part;
		ssize_t got;
		struct subreq sr = {};

		iov::bvecq_pos_set(&probe, pos);
		part = iov::bvecq_slice(&probe, min_t(size_t, len, wsize), max_segs, &nr_slots);
		iov::bvecq_pos_unset(&probe);
		if (WARN_ON(part == 0))
			return -EIO;
		got = iov::bvecq_extract(pos, part, max_segs, &sr.content);
		if (got < 0)
			return got;
		if (WARN_ON((size_t)got != part))
			return -EIO;
		sr.len = got;
		out->push_back(sr);
		len -= got;
	}
	return 0;
}

TEST(NetfsStyleBvecq, FillSliceExtractAndSend)
{
	iov::page_alloc_drain_thread_cache();
	size_t before = iov::page_alloc_read_stats().frames_in_use;
	const size_t size = 300 * 1024 + 123;
	std::vector<u8> data(size), sent;
	for (size_t k = 0; k < size; k++)
		data[k] = (u8)(k * 29 + (k >> 10));

	struct iov::bvecq *buf = iov::bvecq_alloc_buffer(size, iov::GFP_KERNEL);
	ASSERT_NE(buf, nullptr);
	struct iov::iov_iter iter;
	iov::iov_iter_bvec_queue(&iter, iov::ITER_DEST, buf, 0, 0, size);
	ASSERT_EQ(iov::copy_to_iter(data.data(), size, &iter), size);

	std::vector<struct subreq> subreqs;
	struct iov::bvecq_pos pos = { iov::bvecq_get(buf), 0, 0 };
	iov::bvecq_pos_advance(&pos, 1000);	/* a write that starts part-way in */
	ASSERT_EQ(issue_writes(&pos, size - 1000, 20000, 4, &subreqs), 0);
	iov::bvecq_pos_unset(&pos);

	for (struct subreq &sr : subreqs) {
		std::vector<u8> wire(sr.len);
		struct iov::iov_iter src;

		EXPECT_LE(sr.len, 20000u);
		iov::iov_iter_bvec_queue(&src, iov::ITER_SOURCE, sr.content, 0, 0, sr.len);
		ASSERT_EQ(iov::copy_from_iter(wire.data(), sr.len, &src), sr.len);
		sent.insert(sent.end(), wire.begin(), wire.end());
		iov::bvecq_put(sr.content);	/* external pages: the buffer keeps them */
	}
	EXPECT_EQ(sent.size(), size - 1000);
	EXPECT_TRUE(std::equal(sent.begin(), sent.end(), data.begin() + 1000));

	iov::bvecq_put(buf);
	iov::page_alloc_drain_thread_cache();
	EXPECT_EQ(iov::page_alloc_read_stats().frames_in_use, before);
}

}  // namespace
