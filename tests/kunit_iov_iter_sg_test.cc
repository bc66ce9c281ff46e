// kunit_iov_iter_sg_test.cc: the kernel's extract_iter_to_sg() kunit cases on
// iov, case for case with the kernel's buffer size, calls and checks:
// iov_kunit_iter_to_sg_{kvec,bvec,folioq,xarray,ubuf} of mainline's
// lib/tests/kunit_iov_iter.c, and the same cases but folioq of the netfs
// branch queued for 7.4 (vfs-7.4.netfs), where they are unchanged.
//
//   build/tests/kunit_iov_iter_sg_test --gtest_filter='*bvec*'
//
// Each case extracts a 2 MiB buffer patterned with pattern(i) into a table of
// one entry a page, in four calls: sg_max 0 (nothing), sg_max 1 for all but
// the last 16 pages, the rest of that with the entries left, then the last
// 16 pages; then copies the list out with sg_copy_to_buffer() and checks
// every byte. The kernel's user buffer is an mmap() in a borrowed mm; here
// it is an mmap() of this process. The *_scattered cases are ours: the frames allocated
// one by one and the first quarter swapped with the third, as the kernel's
// iov_kunit_create_buffer() now does before vmap()ping them.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>

#include <iov/iov.hpp>
#include <iov/scatterlist.hpp>

#include "support/kunit_layouts.hpp"

namespace {

using namespace iov;       // NOLINT: the kernel's names, as the kernel test uses them
using namespace iov_test;  // NOLINT

using IovKunitSg = kunit_fixture;  // support/kunit_layouts.hpp

struct iov_kunit_iter_to_sg_data {
  sg_table* sgt;
  u8 *buffer, *scratch;
  u8* ubuf;
  page** pages;
  size_t npages;
};

void iov_kunit_iter_to_sg_init(kunit* test, size_t bufsize, bool user,
                               iov_kunit_iter_to_sg_data* data, frames how = frames::contiguous) {
  page** spages;

  data->npages = bufsize / PAGE_SIZE;
  auto* sg = static_cast<scatterlist*>(kunit_kcalloc(test, data->npages, sizeof(scatterlist)));
  sg_init_table(sg, static_cast<unsigned>(data->npages));
  data->sgt = static_cast<sg_table*>(kunit_kcalloc(test, 1, sizeof(*data->sgt)));
  data->sgt->orig_nents = 0;
  data->sgt->sgl = sg;

  data->buffer = nullptr;
  data->ubuf = nullptr;
  data->pages = nullptr;
  if (user) {
    // Page-aligned as the kernel's kunit_vm_mmap() is: the table has one
    // entry a page, so a buffer straddling one more page would not fit.
    void* uaddr = mmap(nullptr, bufsize, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    ASSERT_NE(uaddr, MAP_FAILED);
    test->defer([uaddr, bufsize] { munmap(uaddr, bufsize); });
    data->ubuf = static_cast<u8*>(uaddr);
    for (size_t i = 0; i < bufsize; ++i) data->ubuf[i] = pattern(i);
  } else if (how != frames::scattered) {
    void* buffer = how == frames::vmapped ? iov_kunit_create_vmap_buffer(test, &data->pages, data->npages)
                                          : iov_kunit_create_buffer(test, &data->pages, data->npages);
    data->buffer = static_cast<u8*>(buffer);
    for (size_t i = 0; i < bufsize; ++i) data->buffer[i] = pattern(i);
  } else {
    iov_kunit_create_scattered_buffer(test, &data->pages, data->npages);
    iov_kunit_pages view(data->pages);
    for (size_t i = 0; i < bufsize; ++i) view[i] = pattern(i);
  }
  data->scratch = static_cast<u8*>(iov_kunit_create_buffer(test, &spages, data->npages));
  std::memset(data->scratch, 0, bufsize);
}

void iov_kunit_iter_to_sg_check(kunit*, iov_iter* iter, size_t bufsize,
                                iov_kunit_iter_to_sg_data* data) {
  static const size_t tail = 16 * PAGE_SIZE;
  size_t i;

  ASSERT_LT(tail, bufsize);

  // The kernel unpins the entries when iov_iter_extract_will_pin(); nothing
  // is pinned here (it is false for every type).
  ASSERT_FALSE(iov_iter_extract_will_pin(iter));

  i = static_cast<size_t>(extract_iter_to_sg(iter, bufsize, data->sgt, 0, 0));
  ASSERT_EQ(i, 0u);
  ASSERT_EQ(data->sgt->nents, 0u);

  i = static_cast<size_t>(extract_iter_to_sg(iter, bufsize - tail, data->sgt, 1, 0));
  ASSERT_LE(i, bufsize - tail);
  ASSERT_EQ(data->sgt->nents, 1u);

  i += static_cast<size_t>(extract_iter_to_sg(iter, bufsize - tail - i, data->sgt,
                                              static_cast<unsigned>(data->npages - data->sgt->nents), 0));
  ASSERT_EQ(i, bufsize - tail);
  ASSERT_LE(data->sgt->nents, data->npages);

  i += static_cast<size_t>(extract_iter_to_sg(iter, tail, data->sgt,
                                              static_cast<unsigned>(data->npages - data->sgt->nents), 0));
  ASSERT_EQ(i, bufsize);
  ASSERT_LE(data->sgt->nents, data->npages);

  sg_mark_end(&data->sgt->sgl[data->sgt->nents - 1]);

  i = sg_copy_to_buffer(data->sgt->sgl, data->sgt->nents, data->scratch, bufsize);
  ASSERT_EQ(i, bufsize);

  for (i = 0; i < bufsize; ++i) {
    EXPECT_EQ(data->scratch[i], pattern(i)) << "at i=0x" << std::hex << i;
    if (data->scratch[i] != pattern(i)) break;
  }

  EXPECT_EQ(i, bufsize);
}

void iov_kunit_iter_to_sg_kvec(kunit* test, frames how) {
  iov_kunit_iter_to_sg_data data;
  iov_iter iter;
  kvec kv;
  size_t bufsize;

  bufsize = 0x200000;
  ASSERT_NO_FATAL_FAILURE(iov_kunit_iter_to_sg_init(test, bufsize, false, &data, how));

  kv.iov_base = data.buffer;
  kv.iov_len = bufsize;
  iov_iter_kvec(&iter, READ, &kv, 1, bufsize);

  iov_kunit_iter_to_sg_check(test, &iter, bufsize, &data);
}

TEST_F(IovKunitSg, iter_to_sg_kvec) { iov_kunit_iter_to_sg_kvec(test, frames::contiguous); }
// The kernel's buffer: vmap() of swapped pages, whose entries must name them.
TEST_F(IovKunitSg, iter_to_sg_kvec_vmapped) { iov_kunit_iter_to_sg_kvec(test, frames::vmapped); }

void iov_kunit_iter_to_sg_bvec(kunit* test, frames how) {
  iov_kunit_iter_to_sg_data data;
  page *p, *can_merge = nullptr;
  size_t i, k, bufsize;
  bio_vec* bvec;
  iov_iter iter;

  bufsize = 0x200000;
  ASSERT_NO_FATAL_FAILURE(iov_kunit_iter_to_sg_init(test, bufsize, false, &data, how));

  bvec = static_cast<bio_vec*>(kunit_kcalloc(test, data.npages, sizeof(*bvec)));
  k = 0;
  for (i = 0; i < data.npages; ++i) {
    p = data.pages[i];
    if (p == can_merge)
      bvec[k - 1].bv_len += PAGE_SIZE;
    else
      bvec_set_page(&bvec[k++], p, PAGE_SIZE, 0);
    can_merge = p + 1;
  }
  iov_iter_bvec(&iter, READ, bvec, k, bufsize);

  iov_kunit_iter_to_sg_check(test, &iter, bufsize, &data);
}

void iov_kunit_iter_to_sg_folioq(kunit* test, frames how) {
  iov_kunit_iter_to_sg_data data;
  folio_queue* folioq;
  iov_iter iter;
  size_t bufsize;

  bufsize = 0x200000;
  ASSERT_NO_FATAL_FAILURE(iov_kunit_iter_to_sg_init(test, bufsize, false, &data, how));

  folioq = iov_kunit_create_folioq(test);
  iov_kunit_load_folioq(test, &iter, READ, folioq, data.pages, data.npages);

  iov_kunit_iter_to_sg_check(test, &iter, bufsize, &data);
}

void iov_kunit_iter_to_sg_xarray(kunit* test, frames how) {
  iov_kunit_iter_to_sg_data data;
  xarray* xa;
  iov_iter iter;
  size_t bufsize;

  bufsize = 0x200000;
  ASSERT_NO_FATAL_FAILURE(iov_kunit_iter_to_sg_init(test, bufsize, false, &data, how));

  xa = iov_kunit_create_xarray(test);
  ASSERT_NO_FATAL_FAILURE(iov_kunit_load_xarray(test, &iter, READ, xa, data.pages, data.npages));

  iov_kunit_iter_to_sg_check(test, &iter, bufsize, &data);
}

TEST_F(IovKunitSg, iter_to_sg_ubuf) {
  iov_kunit_iter_to_sg_data data;
  iov_iter iter;
  size_t bufsize;

  bufsize = 0x200000;
  ASSERT_NO_FATAL_FAILURE(iov_kunit_iter_to_sg_init(test, bufsize, true, &data));

  iov_iter_ubuf(&iter, READ, data.ubuf, bufsize);

  iov_kunit_iter_to_sg_check(test, &iter, bufsize, &data);
}

TEST_F(IovKunitSg, iter_to_sg_bvec) { iov_kunit_iter_to_sg_bvec(test, frames::contiguous); }
TEST_F(IovKunitSg, iter_to_sg_folioq) { iov_kunit_iter_to_sg_folioq(test, frames::contiguous); }
TEST_F(IovKunitSg, iter_to_sg_xarray) { iov_kunit_iter_to_sg_xarray(test, frames::contiguous); }
TEST_F(IovKunitSg, iter_to_sg_bvec_scattered) { iov_kunit_iter_to_sg_bvec(test, frames::scattered); }
TEST_F(IovKunitSg, iter_to_sg_folioq_scattered) {
  iov_kunit_iter_to_sg_folioq(test, frames::scattered);
}
TEST_F(IovKunitSg, iter_to_sg_xarray_scattered) {
  iov_kunit_iter_to_sg_xarray(test, frames::scattered);
}

}  // namespace
