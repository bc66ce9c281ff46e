// bvecq.cc: the out-of-line helpers of a bvec queue (bvecq.hpp): allocation,
// the last put, buffers of allocated pages, and positions walked over the
// queue (the kernel's fs/netfs/bvecq.c, with the v5 series' fixes: the walks
// read the slot count with acquire, step over empty segments and never leave
// pos at nullptr, so that a producer may still extend the queue).
#include "iov/bvecq.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "iov/highmem.hpp"
#include "iov/page.hpp"

namespace iov {

namespace {

// Pages of up to order 9 (2 MiB, the allocator's chunk) for a buffer, as the
// kernel's MAX_PAGECACHE_ORDER on x86-64.
constexpr unsigned kMaxBufferOrder = 9;

// Frees what one slot names, as the segment's mem_type says.
void bvecq_free_slot(bvecq* bq, unsigned slot) {
  page* pg = bq->bv[slot].bv_page;
  if (!pg)
    return;
  switch (bq->mem_type) {
    case BVECQ_MEM_EXTERNAL:
      break;
    case BVECQ_MEM_PAGECACHE:
      put_page(pg);
      break;
    case BVECQ_MEM_GUP:
      // Nothing is pinned in user space (iov_iter_extract_will_pin() is false).
      break;
    case BVECQ_MEM_ALLOCED:
      __free_pages(pg, compound_order(pg));
      break;
  }
}

// Zeroes len bytes of a bio_vec from offset, a page at a time.
void bvec_zero(const bio_vec* bv, size_t offset, size_t len) {
  page* pg = bv->bv_page;
  offset += bv->bv_offset;
  pg += offset / PAGE_SIZE;
  offset %= PAGE_SIZE;
  while (len) {
    size_t part = std::min(len, PAGE_SIZE - offset);
    char* p = kmap_local_page(pg);
    std::memset(p + offset, 0, part);
    kunmap_local(p);
    len -= part;
    offset = 0;
    pg++;
  }
}

// The next segment, read after what its producer stored in it.
bvecq* next_of(const bvecq* bq) {
  return std::atomic_ref<bvecq*>(const_cast<bvecq*>(bq)->next).load(std::memory_order_acquire);
}

// Where a walk that stopped at (bq, slot) leaves its position: past the end
// of a segment means the start of the next one, if there is one.
void settle(bvecq_pos* pos, bvecq* bq, unsigned slot, size_t offset) {
  if (slot >= bvecq_nr_slots_acquire(bq)) {
    if (bvecq* next = next_of(bq)) {
      bq = next;
      slot = 0;
      offset = 0;
    }
  }
  bvecq_pos_move(pos, bq);
  pos->slot = static_cast<uint16_t>(slot);
  pos->offset = static_cast<unsigned>(offset);
}

}  // namespace

void bvecq_dump(const bvecq* bq) {
  for (int b = 0; bq; bq = bq->next, b++) {
    int skipz = 0;
    std::fprintf(stderr, "BQ[%u] %u/%u fp=%llx%s\n", b, bq->nr_slots, bq->max_slots, bq->fpos,
                 bq->discontig ? " discontig" : "");
    for (int s = 0; s < bq->nr_slots; s++) {
      const bio_vec* bv = &bq->bv[s];
      if (!bv->bv_page && !bv->bv_len && skipz < 2) {
        skipz = 1;
        continue;
      }
      if (skipz == 1)
        std::fprintf(stderr, "BQ[%u:00-%02u] ...\n", b, s - 1);
      skipz = 2;
      std::fprintf(stderr, "BQ[%u:%02u] %p %04x %04x %d\n", b, s, static_cast<void*>(bv->bv_page),
                   bv->bv_offset, bv->bv_len, bv->bv_page ? page_ref_count(bv->bv_page) : 0);
    }
  }
}

bvecq* bvecq_alloc_one(size_t nr_slots, gfp_t /*gfp*/) {
  constexpr size_t max_size = 512;
  constexpr size_t max_slots = (max_size - sizeof(bvecq)) / sizeof(bio_vec);
  size_t part = std::min(nr_slots, max_slots);
  size_t size = std::bit_ceil(sizeof(bvecq) + part * sizeof(bio_vec));
  void* mem = std::malloc(size);
  if (!mem)
    return nullptr;
  auto* bq = new (mem) bvecq{};
  bq->ref.store(1, std::memory_order_relaxed);
  bq->bv = bq->__bv;
  bq->inline_bv = true;
  bq->max_slots = static_cast<uint16_t>((size - sizeof(bvecq)) / sizeof(bio_vec));
  return bq;
}

bvecq* bvecq_alloc_chain(size_t nr_slots, gfp_t gfp) {
  bvecq *head = nullptr, *tail = nullptr;
  for (;;) {
    bvecq* bq = bvecq_alloc_one(nr_slots, gfp);
    if (!bq) {
      bvecq_put(head);
      return nullptr;
    }
    if (tail) {
      tail->next = bq;
      bq->prev = tail;
    } else {
      head = bq;
    }
    tail = bq;
    if (tail->max_slots >= nr_slots)
      return head;
    nr_slots -= tail->max_slots;
  }
}

bvecq* bvecq_alloc_buffer2(size_t size, unsigned pre_slots, gfp_t gfp) {
  bvecq *head = nullptr, *tail = nullptr;
  size_t count = (size + PAGE_SIZE - 1) / PAGE_SIZE;
  if (pre_slots > BVECQ_STD_SLOTS)
    return nullptr;  // the kernel's WARN_ON_ONCE
  do {
    bvecq* p = bvecq_alloc_one(std::min<size_t>(pre_slots + count, BVECQ_STD_SLOTS), gfp);
    if (!p) {
      bvecq_put(head);
      return nullptr;
    }
    p->mem_type = BVECQ_MEM_ALLOCED;
    if (tail) {
      tail->next = p;
      p->prev = tail;
    } else {
      head = p;
    }
    tail = p;
    if (!count)
      break;
    std::memset(p->bv, 0, p->max_slots * sizeof(p->bv[0]));
    // The pages are gathered in the slots' own memory first (as the kernel's
    // does), in an array of their own here, then spread into the slots.
    page* pages[BVECQ_STD_SLOTS] = {};
    unsigned long want = std::min<size_t>(count, p->max_slots - pre_slots);
    unsigned long got = alloc_pages_bulk(gfp, want, pages);
    if (got < want) {
      release_pages(pages, static_cast<int>(got));
      bvecq_put(head);
      return nullptr;
    }
    for (unsigned long k = 0; k < got; k++)
      bvec_set_page(&p->bv[pre_slots + k], pages[k], PAGE_SIZE, 0);
    p->nr_slots = static_cast<uint16_t>(pre_slots + got);
    count -= got;
    pre_slots = 0;
  } while (count > 0);
  return head;
}

void bvecq_put(bvecq* bq) {
  for (bvecq* next; bq; bq = next) {
    if (bq->ref.fetch_sub(1, std::memory_order_acq_rel) != 1)
      break;
    for (unsigned slot = 0; slot < bq->nr_slots; slot++)
      bvecq_free_slot(bq, slot);
    next = bq->next;
    bq->~bvecq();
    std::free(bq);
  }
}

int bvecq_expand_buffer(bvecq** _buffer, size_t* _cur_size, size_t size, gfp_t gfp) {
  bvecq* tail = *_buffer;
  size = (size + PAGE_SIZE - 1) & PAGE_MASK;
  if (*_cur_size >= size)
    return 0;
  if (tail)
    while (tail->next)
      tail = tail->next;
  do {
    // v5: pages the buffer allocates go in segments that free them, never
    // into a segment of another kind.
    if (!tail || bvecq_is_full(tail) || tail->mem_type != BVECQ_MEM_ALLOCED) {
      bvecq* p = bvecq_alloc_one(BVECQ_STD_SLOTS, gfp);
      if (!p)
        return -ENOMEM;
      p->mem_type = BVECQ_MEM_ALLOCED;
      if (tail) {
        tail->next = p;
        p->prev = tail;
      } else {
        *_buffer = p;
      }
      tail = p;
    }
    unsigned order = 0;
    if (size - *_cur_size > PAGE_SIZE)
      order = std::min<unsigned>(std::bit_width(size - *_cur_size) - 1 - PAGE_SHIFT, kMaxBufferOrder);
    page* pg = alloc_pages(gfp | __GFP_COMP, order);
    if (!pg && order > 0) {
      order = 0;
      pg = alloc_pages(gfp | __GFP_COMP, 0);
    }
    if (!pg)
      return -ENOMEM;
    bvec_set_page(&tail->bv[tail->nr_slots++], pg, static_cast<unsigned>(PAGE_SIZE << order), 0);
    *_cur_size += PAGE_SIZE << order;
  } while (*_cur_size < size);
  return 0;
}

int bvecq_shorten_buffer(bvecq* bq, unsigned slot, size_t size) {
  size_t retain = size;
  // v5: the cut falls at the end of the slot that completes size, so that
  // no zero-length slot is kept (size 0 keeps nothing from slot on).
  for (; bq; bq = bq->next, slot = 0) {
    for (; slot < bq->nr_slots; slot++) {
      if (!retain)
        goto found;
      size_t len = bq->bv[slot].bv_len;
      if (len >= retain) {
        bq->bv[slot].bv_len = static_cast<unsigned>(retain);
        retain = 0;
        slot++;
        goto found;
      }
      retain -= len;
    }
    if (!bq->next)
      break;
  }
  if (retain > 0)
    return -EMSGSIZE;  // the kernel's WARN_ON_ONCE: the chain holds less
  return 0;
found:
  for (unsigned k = slot; k < bq->nr_slots; k++)
    bvecq_free_slot(bq, k);
  bq->nr_slots = static_cast<uint16_t>(slot);
  bvecq_put(bq->next);
  bq->next = nullptr;
  return 0;
}

int bvecq_buffer_init(bvecq_pos* pos, gfp_t gfp) {
  bvecq* bq = bvecq_alloc_one(BVECQ_STD_SLOTS, gfp);
  if (!bq)
    return -ENOMEM;
  pos->bvecq = bq;  // with its reference
  pos->slot = 0;
  pos->offset = 0;
  return 0;
}

void bvecq_buffer_append(bvecq_pos* pos, bvecq* bq) {
  bvecq* head = pos->bvecq;
  bq->prev = head;
  pos->bvecq = bvecq_get(bq);
  pos->slot = 0;
  pos->offset = 0;
  // bq's initialisation before the pointer to it; once it is set, the
  // consumer may delete head at once.
  std::atomic_ref<bvecq*>(head->next).store(bq, std::memory_order_release);
  bvecq_put(head);
}

void bvecq_pos_advance(bvecq_pos* pos, size_t amount) {
  bvecq* bq = pos->bvecq;
  unsigned slot = pos->slot;
  size_t offset = pos->offset;
  while (amount) {
    if (!bvecq_acquire_slot(bq, slot)) {
      bvecq* next = next_of(bq);
      if (!next)
        break;  // the kernel's WARN_ON_ONCE(amount > 0)
      bq = next;
      slot = 0;
      offset = 0;
      continue;
    }
    size_t part = bq->bv[slot].bv_len - offset;
    if (part > amount) {
      offset += amount;
      break;
    }
    amount -= part;
    offset = 0;
    slot++;
  }
  pos->slot = static_cast<uint16_t>(slot);
  pos->offset = static_cast<unsigned>(offset);
  bvecq_pos_move(pos, bq);
}

ssize_t bvecq_zero(bvecq_pos* pos, size_t amount) {
  bvecq* bq = pos->bvecq;
  unsigned slot = pos->slot;
  size_t cleared = 0, offset = pos->offset;
  while (amount) {
    if (!bvecq_acquire_slot(bq, slot)) {
      bvecq* next = next_of(bq);
      if (!next)
        break;
      bq = next;
      slot = 0;
      offset = 0;
      continue;
    }
    const bio_vec* bv = &bq->bv[slot];
    if (offset < bv->bv_len && bv->bv_page) {
      size_t part = std::min(bv->bv_len - offset, amount);
      bvec_zero(bv, offset, part);
      cleared += part;
      offset += part;
      amount -= part;
      if (offset < bv->bv_len)
        break;
    }
    offset = 0;
    slot++;
  }
  settle(pos, bq, slot, offset);
  return static_cast<ssize_t>(cleared);
}

size_t bvecq_slice(bvecq_pos* pos, size_t max_size, unsigned max_slots, unsigned* _nr_slots) {
  bvecq* bq = pos->bvecq;
  unsigned slot = pos->slot, nslots = 0;
  size_t size = 0, offset = pos->offset;
  for (;;) {
    unsigned nr = bvecq_nr_slots_acquire(bq);
    for (; slot < nr; slot++) {
      const bio_vec* bv = &bq->bv[slot];
      if (offset < bv->bv_len && bv->bv_page) {
        size_t part = std::min(bv->bv_len - offset, max_size);
        size += part;
        offset += part;
        max_size -= part;
        nslots++;
        if (!max_size || nslots >= max_slots)
          goto out;
      }
      offset = 0;
    }
    // pos->bvecq may not become nullptr: the queue may yet grow.
    bvecq* next = next_of(bq);
    if (!next || (next->discontig && size > 0))
      break;
    slot = 0;
    bq = next;
  }
out:
  *_nr_slots = nslots;
  if (offset && offset >= bq->bv[slot].bv_len) {
    slot++;
    offset = 0;
  }
  settle(pos, bq, slot, offset);
  return size;
}

ssize_t bvecq_extract(bvecq_pos* pos, size_t max_size, unsigned max_slots, bvecq** to) {
  *to = nullptr;
  if (!max_slots)
    max_slots = INT_MAX;  // the kernel's WARN_ON_ONCE
  bvecq_pos tmp;
  bvecq_pos_set(&tmp, pos);
  unsigned nslots = 0;
  size_t amount = bvecq_slice(&tmp, max_size, max_slots, &nslots);
  bvecq_pos_unset(&tmp);
  if (nslots == 0)
    return -EIO;
  bvecq* dst = bvecq_alloc_chain(nslots, GFP_KERNEL);
  if (!dst)
    return -ENOMEM;
  *to = dst;
  // The same walk as the slice's, copying each piece's bio_vec.
  bvecq* src = pos->bvecq;
  unsigned slot = pos->slot, dslot = 0, taken = 0;
  size_t offset = pos->offset, extracted = 0;
  for (;;) {
    unsigned nr = bvecq_nr_slots_acquire(src);
    for (; slot < nr; slot++) {
      const bio_vec* sv = &src->bv[slot];
      if (offset < sv->bv_len && sv->bv_page) {
        size_t part = std::min(sv->bv_len - offset, amount);
        bvec_set_page(&dst->bv[dslot], sv->bv_page, static_cast<unsigned>(part),
                      static_cast<unsigned>(sv->bv_offset + offset));
        extracted += part;
        amount -= part;
        offset += part;
        dslot++;
        taken++;
        if (dslot >= dst->max_slots && taken < nslots) {
          bvecq_filled_to(dst, dslot);
          dst = dst->next;
          dslot = 0;
        }
        if (taken >= nslots || !amount)
          goto out;
      }
      offset = 0;
    }
    bvecq* next = next_of(src);
    if (!next || (next->discontig && extracted > 0))
      break;
    slot = 0;
    src = next;
  }
out:
  bvecq_filled_to(dst, dslot);
  if (offset && offset >= src->bv[slot].bv_len) {
    slot++;
    offset = 0;
  }
  settle(pos, src, slot, offset);
  return static_cast<ssize_t>(extracted);
}

}  // namespace iov
