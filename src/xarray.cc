// xarray.cc: the writer side of the xarray (store, erase, destroy) and its
// ordered search (xa_find).
//
// A writer holds xa_lock and changes the tree so that a reader, whatever it
// has loaded so far, always sees a well-formed tree: a new node is filled
// before a release store publishes it, a node leaves the tree before it is
// retired, and retired nodes are freed after a grace period (call_rcu). A store
// allocates every node it needs before it changes anything, so running out of
// memory leaves the array as it was.
#include "iov/xarray.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <new>

namespace iov {
namespace internal {
namespace {

std::atomic<unsigned> fail_skip{0}, fail_count{0};
std::atomic<long> nodes_allocated{0};

bool alloc_should_fail() {
  if (IOV_LIKELY(fail_count.load(std::memory_order_relaxed) == 0)) return false;
  if (fail_skip.load(std::memory_order_relaxed) != 0) {
    fail_skip.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  fail_count.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

void xa_fail_next_alloc(unsigned n, unsigned skip) {
  fail_skip.store(skip, std::memory_order_relaxed);
  fail_count.store(n, std::memory_order_relaxed);
}

long xa_nodes_allocated() { return nodes_allocated.load(std::memory_order_relaxed); }

}  // namespace internal

namespace {

using internal::xa_node;
constexpr auto relaxed = std::memory_order_relaxed;
constexpr auto release = std::memory_order_release;
constexpr auto acquire = std::memory_order_acquire;
// The most nodes one store adds: a full path (11 levels) under a new top, and
// the levels between the old top and the new one.
constexpr unsigned kMaxLevels = internal::XA_MAX_SHIFT / XA_CHUNK_SHIFT + 1;
constexpr unsigned kMaxNewNodes = 2 * kMaxLevels;

xa_node* node_alloc() {
  if (internal::alloc_should_fail()) return nullptr;
  auto* node = new (std::nothrow) xa_node;
  if (!node) return nullptr;
  node->parent = nullptr;
  node->shift = node->offset = node->count = 0;
  for (auto& slot : node->slots) slot.store(nullptr, relaxed);
  internal::nodes_allocated.fetch_add(1, relaxed);
  return node;
}

void node_free(xa_node* node) {
  internal::nodes_allocated.fetch_sub(1, relaxed);
  delete node;
}

xa_node* node_of(rcu_head* head) {
  return reinterpret_cast<xa_node*>(reinterpret_cast<unsigned char*>(head) - offsetof(xa_node, rcu));
}

// Frees a node after the readers that may hold it have left.
void node_retire(xa_node* node) {
  call_rcu(&node->rcu, [](rcu_head* head) { node_free(node_of(head)); });
}

// Frees a detached subtree (the nodes only: entries are the caller's).
void subtree_free(xa_node* node) {
  if (node->shift > 0)
    for (auto& slot : node->slots)
      if (auto* child = static_cast<xa_node*>(slot.load(relaxed))) subtree_free(child);
  node_free(node);
}

unsigned offset_of(unsigned long index, unsigned shift) {
  return static_cast<unsigned>((index >> shift) & XA_CHUNK_MASK);
}

// The smallest top-node shift whose subtree reaches index.
unsigned shift_for(unsigned long index) {
  unsigned shift = 0;
  while (shift < internal::XA_MAX_SHIFT && (index >> (shift + XA_CHUNK_SHIFT)) != 0)
    shift += XA_CHUNK_SHIFT;
  return shift;
}

// The writer's view; the caller holds xa_lock.
xa_node* child_at(const xa_node* node, unsigned offset) {
  return static_cast<xa_node*>(node->slots[offset].load(relaxed));
}

// The leaf that holds index, or nullptr if the tree has none yet.
xa_node* leaf_for(const xarray* xa, unsigned long index) {
  xa_node* node = xa->xa_head.load(relaxed);
  if (!node || node->shift < shift_for(index)) return nullptr;
  for (unsigned shift = node->shift; node && shift > 0; shift -= XA_CHUNK_SHIFT)
    node = child_at(node, offset_of(index, shift));
  return node;
}

// How many nodes a store at index adds (no leaf holds index yet).
unsigned nodes_needed(const xarray* xa, unsigned long index) {
  const xa_node* node = xa->xa_head.load(relaxed);
  unsigned want = shift_for(index);
  if (!node) return want / XA_CHUNK_SHIFT + 1;
  // New levels above the top, then index's whole path below the new top:
  // index's slot in the new top is not slot 0, where the old tree goes.
  if (node->shift < want) return (want - node->shift) / XA_CHUNK_SHIFT + want / XA_CHUNK_SHIFT;
  for (unsigned shift = node->shift; shift > 0; shift -= XA_CHUNK_SHIFT) {
    node = child_at(node, offset_of(index, shift));
    if (!node) return shift / XA_CHUNK_SHIFT;
  }
  return 0;
}

// Nodes allocated up front for one store.
struct node_pool {
  xa_node* nodes[kMaxNewNodes];
  unsigned size = 0;

  bool fill(unsigned n) {
    for (; size < n; size++)
      if (!(nodes[size] = node_alloc())) return false;
    return true;
  }
  xa_node* take(unsigned shift, xa_node* parent, unsigned offset) {
    xa_node* node = nodes[--size];
    node->shift = static_cast<unsigned char>(shift);
    node->parent = parent;
    node->offset = static_cast<unsigned char>(offset);
    return node;
  }
  ~node_pool() {
    while (size) node_free(nodes[--size]);
  }
};

// Grows the tree until it reaches index and adds the missing nodes on its
// path, all from the pool; returns the leaf. A new top holds the old one in
// slot 0 and is published whole by the head store.
xa_node* create_path(xarray* xa, unsigned long index, node_pool& pool) {
  unsigned want = shift_for(index);
  xa_node* top = xa->xa_head.load(relaxed);
  if (!top) {
    top = pool.take(want, nullptr, 0);
    xa->xa_head.store(top, release);
  } else if (top->shift < want) {
    while (top->shift < want) {
      xa_node* up = pool.take(top->shift + XA_CHUNK_SHIFT, nullptr, 0);
      up->slots[0].store(top, relaxed);
      up->count = 1;
      top->parent = up;
      top->offset = 0;
      top = up;
    }
    xa->xa_head.store(top, release);
  }
  xa_node* node = top;
  for (unsigned shift = top->shift; shift > 0; shift -= XA_CHUNK_SHIFT) {
    unsigned offset = offset_of(index, shift);
    xa_node* child = child_at(node, offset);
    if (!child) {
      child = pool.take(shift - XA_CHUNK_SHIFT, node, offset);
      node->slots[offset].store(child, release);
      node->count++;
    }
    node = child;
  }
  return node;
}

// While the top has only its first slot, its child becomes the top, as the
// kernel's xas_shrink(). A reader still on the old top reaches the same child.
void shrink(xarray* xa) {
  for (;;) {
    xa_node* top = xa->xa_head.load(relaxed);
    if (!top || top->shift == 0 || top->count != 1) return;
    xa_node* child = child_at(top, 0);
    if (!child) return;
    child->parent = nullptr;
    xa->xa_head.store(child, release);
    node_retire(top);
  }
}

// Clears a present slot of a leaf, then retires the nodes left empty.
void erase_at(xarray* xa, xa_node* leaf, unsigned offset) {
  leaf->slots[offset].store(nullptr, release);
  leaf->count--;
  xa->nr_entries.store(xa->nr_entries.load(relaxed) - 1, relaxed);
  for (xa_node* node = leaf; node->count == 0;) {
    xa_node* parent = node->parent;
    if (parent) {
      parent->slots[node->offset].store(nullptr, release);
      parent->count--;
    } else {
      xa->xa_head.store(nullptr, release);
    }
    node_retire(node);
    if (!parent) return;
    node = parent;
  }
  shrink(xa);
}

// Every store: when `cmp`, only if the current entry is `old`. Returns the
// current entry or an error entry.
void* store_locked(xarray* xa, unsigned long index, void* entry, bool cmp, void* old) {
  xa_node* leaf = leaf_for(xa, index);
  unsigned offset = offset_of(index, 0);
  void* curr = leaf ? leaf->slots[offset].load(relaxed) : nullptr;
  if (cmp && curr != old) return curr;
  if (!entry) {
    if (curr) erase_at(xa, leaf, offset);
    return curr;
  }
  if (!leaf) {
    node_pool pool;
    if (!pool.fill(nodes_needed(xa, index))) return internal::xa_error(-ENOMEM);
    leaf = create_path(xa, index, pool);
  }
  leaf->slots[offset].store(entry, release);
  if (!curr) {
    leaf->count++;
    xa->nr_entries.store(xa->nr_entries.load(relaxed) + 1, relaxed);
  }
  return curr;
}

// The first entry at an index in [from, max] under node, which covers the
// indices from base on; the caller is in a read-side section.
void* find_in(const xa_node* node, unsigned long base, unsigned long from, unsigned long max,
              unsigned long* found) {
  unsigned shift = node->shift;
  // A top node at shift 60 has 16 slots' worth of indices; the rest reach past 2^64.
  unsigned last = shift + XA_CHUNK_SHIFT > 64 ? (1U << (64 - shift)) - 1 : XA_CHUNK_MASK;
  for (unsigned offset = offset_of(from, shift); offset <= last; offset++) {
    unsigned long child_base = base + (static_cast<unsigned long>(offset) << shift);
    if (child_base > max) return nullptr;
    void* p = node->slots[offset].load(acquire);
    if (!p) continue;
    if (shift == 0) {
      *found = child_base;
      return p;
    }
    if (void* e = find_in(static_cast<const xa_node*>(p), child_base, std::max(from, child_base), max, found))
      return e;
  }
  return nullptr;
}

}  // namespace

xarray::~xarray() {
  // No reader may use an xarray that is being destroyed: free at once.
  if (xa_node* top = xa_head.load(relaxed)) subtree_free(top);
}

void xa_destroy(xarray* xa) {
  xa_node* top;
  {
    std::lock_guard lock(xa->xa_lock);
    top = xa->xa_head.load(relaxed);
    xa->xa_head.store(nullptr, release);
    xa->nr_entries.store(0, relaxed);
  }
  // One callback frees the whole detached tree.
  if (top) call_rcu(&top->rcu, [](rcu_head* head) { subtree_free(node_of(head)); });
}

void_ptr xa_store(xarray* xa, unsigned long index, void* entry, gfp_t) {
  if (xa_is_internal(entry)) return internal::xa_error(-EINVAL);
  std::lock_guard lock(xa->xa_lock);
  return store_locked(xa, index, entry, false, nullptr);
}

void_ptr xa_erase(xarray* xa, unsigned long index) {
  std::lock_guard lock(xa->xa_lock);
  return store_locked(xa, index, nullptr, false, nullptr);
}

void_ptr xa_cmpxchg(xarray* xa, unsigned long index, void* old, void* entry, gfp_t) {
  if (xa_is_internal(entry)) return internal::xa_error(-EINVAL);
  std::lock_guard lock(xa->xa_lock);
  return store_locked(xa, index, entry, true, old);
}

int xa_insert(xarray* xa, unsigned long index, void* entry, gfp_t gfp) {
  if (!entry) return xa_load(xa, index) ? -EBUSY : 0;  // no reserved entries
  void* curr = xa_cmpxchg(xa, index, nullptr, entry, gfp);
  if (xa_is_err(curr)) return xa_err(curr);
  return curr ? -EBUSY : 0;
}

void_ptr xa_find(xarray* xa, unsigned long* indexp, unsigned long max, xa_mark_t filter) {
  if (filter != XA_PRESENT || *indexp > max) return nullptr;  // no entry carries a mark
  rcu_read_guard guard;
  const xa_node* top = xa->xa_head.load(acquire);
  if (!top) return nullptr;
  unsigned shift = top->shift;
  if (shift + XA_CHUNK_SHIFT < 64 && (*indexp >> (shift + XA_CHUNK_SHIFT)) != 0) return nullptr;
  return find_in(top, 0, *indexp, max, indexp);
}

void_ptr xa_find_after(xarray* xa, unsigned long* indexp, unsigned long max, xa_mark_t filter) {
  if (*indexp == ULONG_MAX) return nullptr;
  unsigned long index = *indexp + 1;
  void* entry = xa_find(xa, &index, max, filter);
  if (entry) *indexp = index;
  return entry;
}

// The locked API: as the functions above, the caller holding xa_lock.
void_ptr __xa_store(xarray* xa, unsigned long index, void* entry, gfp_t) {
  if (xa_is_internal(entry)) return internal::xa_error(-EINVAL);
  return store_locked(xa, index, entry, false, nullptr);
}

void_ptr __xa_erase(xarray* xa, unsigned long index) { return store_locked(xa, index, nullptr, false, nullptr); }

void_ptr __xa_cmpxchg(xarray* xa, unsigned long index, void* old, void* entry, gfp_t) {
  if (xa_is_internal(entry)) return internal::xa_error(-EINVAL);
  return store_locked(xa, index, entry, true, old);
}

int __xa_insert(xarray* xa, unsigned long index, void* entry, gfp_t gfp) {
  if (!entry) return internal::xa_load_rcu(xa, index) ? -EBUSY : 0;  // no reserved entries
  void* curr = __xa_cmpxchg(xa, index, nullptr, entry, gfp);
  if (xa_is_err(curr)) return xa_err(curr);
  return curr ? -EBUSY : 0;
}

}  // namespace iov
