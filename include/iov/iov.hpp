// iov.hpp: the whole library: the kernel-compatible layer of
// docs/api-contract.md and the C++ layer over it.
//
//   #include <iov/iov.hpp>
//   iov::iov_iter it;
//   iov::iov_iter_ubuf(&it, iov::ITER_DEST, buf, len);
//   iov::copy_to_iter(src, len, &it);
//
// Data flows one way through the headers: pages and segments -> iterator ->
// walk -> position and operations -> the C++ layer. Nothing lower includes
// anything higher. README.md lists which kernel header each one mirrors and
// which work without the compiled library.
#pragma once

// Built against iov::headers (IOV_HEADER_ONLY): say what to link, once, instead
// of a link error on an internal name.
#ifdef IOV_HEADER_ONLY
#error "iov/iov.hpp is the whole library, the compiled part included: link iov::iov (pkg-config iov), not iov::headers (iov-headers)"
#include "iov: link iov::iov"
#endif

#include "iov/config.hpp"
#include "iov/void_ptr.hpp"
#include "iov/err.hpp"
#include "iov/page.hpp"
#include "iov/page_alloc.hpp"
#include "iov/folio.hpp"
#include "iov/highmem.hpp"
#include "iov/prefetch.hpp"
#include "iov/vmalloc.hpp"
#include "iov/bvec.hpp"
#include "iov/bvecq.hpp"
#include "iov/folio_batch.hpp"
#include "iov/folio_queue.hpp"
#include "iov/rcu.hpp"
#include "iov/xarray.hpp"
#include "iov/iov_iter.hpp"
#include "iov/iterate.hpp"
#include "iov/position.hpp"
#include "iov/extract.hpp"
#include "iov/copy.hpp"
#include "iov/copy_nocache.hpp"
#include "iov/crc32c.hpp"
#include "iov/zero_scan.hpp"
#include "iov/walk.hpp"
#include "iov/registered_buffers.hpp"
#include "iov/cxx/pieces.hpp"
#include "iov/cxx/iter.hpp"
#include "iov/cxx/pages.hpp"
