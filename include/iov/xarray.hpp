// xarray.hpp: the kernel's XArray, a sparse array of pointers indexed by
// unsigned long: a radix tree of 64-slot nodes whose height follows the
// largest index stored (any index, ULONG_MAX included).
//
// Loads and finds take no lock: they run in an RCU read-side section (their
// own, or nested in the caller's) against nodes that writers publish with
// release stores and free only after a grace period. Stores and erases are
// serialized by the xarray's own mutex. What the entries point to is the
// caller's to keep alive for readers: free it with rcu.hpp's deferred frees.
//
//   iov::xarray pages;
//   void* old = iov::xa_store(&pages, idx, page);     // old entry, or an error entry
//   if (iov::xa_is_err(old)) return iov::xa_err(old);  // -ENOMEM; pages unchanged
//   unsigned long i; void* e;
//   xa_for_each(&pages, i, e) use(i, e);
//
// Functions that return an entry return a void_ptr, which converts to any
// pointer as C's void* does: `struct page *page = iov::xa_load(&xa, i);`.
//
// Differences from the kernel: no marks, no multi-index entries and no
// reserved (zero) entries. Entries are pointers with their two low bits
// clear or value entries (xa_mk_value); an internal entry (low bits 10) is
// refused with -EINVAL, so what a store returns is never ambiguous.
#pragma once

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "iov/config.hpp"
#include "iov/err.hpp"
#include "iov/page.hpp"
#include "iov/rcu.hpp"
#include "iov/void_ptr.hpp"

namespace iov {

inline constexpr unsigned XA_CHUNK_SHIFT = 6;
inline constexpr unsigned XA_CHUNK_SIZE = 1U << XA_CHUNK_SHIFT;
inline constexpr unsigned long XA_CHUNK_MASK = XA_CHUNK_SIZE - 1;

// The filter of xa_find: only XA_PRESENT (every entry) is supported.
using xa_mark_t = unsigned;
inline constexpr xa_mark_t XA_PRESENT = 8;

// Entry encodings, as the kernel's: value entries carry an integer (low bit
// 1), internal entries (low bits 10) are the xarray's own, errors among them.
inline void* xa_mk_value(unsigned long v) { return reinterpret_cast<void*>((v << 1) | 1); }
inline unsigned long xa_to_value(const void* entry) { return reinterpret_cast<uintptr_t>(entry) >> 1; }
inline bool xa_is_value(const void* entry) { return reinterpret_cast<uintptr_t>(entry) & 1; }
inline void* xa_mk_internal(unsigned long v) { return reinterpret_cast<void*>((v << 2) | 2); }
inline unsigned long xa_to_internal(const void* entry) { return reinterpret_cast<uintptr_t>(entry) >> 2; }
inline bool xa_is_internal(const void* entry) { return (reinterpret_cast<uintptr_t>(entry) & 3) == 2; }

// Is this an error entry (what a store returns when it fails)?
inline bool xa_is_err(const void* entry) {
  return IOV_UNLIKELY(xa_is_internal(entry) &&
                      reinterpret_cast<uintptr_t>(entry) >=
                          reinterpret_cast<uintptr_t>(xa_mk_internal(-MAX_ERRNO)));
}
// The errno of an error entry (-ENOMEM, -EINVAL), or 0 for any other entry.
inline int xa_err(const void* entry) {
  return xa_is_err(entry) ? static_cast<int>(reinterpret_cast<intptr_t>(entry) >> 2) : 0;
}

namespace internal {

// A node: 64 slots holding child nodes (shift > 0) or entries (shift == 0).
// Readers touch only `shift` (set before the node is published, never changed)
// and `slots`; the rest belongs to the writer holding xa_lock.
struct xa_node {
  rcu_head rcu;        // retirement
  xa_node* parent;     // nullptr for the top node
  unsigned char shift;   // index bits below this node's slots: 0, 6, ..., 60
  unsigned char offset;  // this node's slot in its parent
  unsigned char count;   // non-null slots
  std::atomic<void*> slots[XA_CHUNK_SIZE];
};
static_assert(std::is_standard_layout_v<xa_node>);

inline constexpr unsigned XA_MAX_SHIFT = 60;  // a top node at 60 reaches all 64 bits

inline void* xa_error(int err) { return xa_mk_internal(static_cast<unsigned long>(static_cast<long>(err))); }

// Test hook: after `skip` node allocations succeed, the next `n` fail.
void xa_fail_next_alloc(unsigned n, unsigned skip = 0);
// Nodes currently allocated by all xarrays (freed ones deducted when freed).
long xa_nodes_allocated();

}  // namespace internal

struct xarray {
  xarray() = default;
  ~xarray();
  xarray(const xarray&) = delete;
  xarray& operator=(const xarray&) = delete;

  std::atomic<internal::xa_node*> xa_head{nullptr};  // the top node; nullptr when empty
  std::atomic<unsigned long> nr_entries{0};          // for xa_count(); written under xa_lock
  std::mutex xa_lock;                                // serializes stores and erases

  // C++ layer: the same operations as the free functions below.
  void_ptr load(unsigned long index) const;
  void_ptr store(unsigned long index, void* entry);  // old entry, or an error entry
  void_ptr erase(unsigned long index);               // old entry
  bool empty() const { return xa_head.load(std::memory_order_acquire) == nullptr; }
  unsigned long size() const { return nr_entries.load(std::memory_order_relaxed); }
  // f(unsigned long index, void* entry) for each entry in [first, last] in
  // index order; an f that returns bool stops the walk by returning false.
  // f runs outside any read-side section, so it may store and erase.
  template <class F>
  void for_each_range(unsigned long first, unsigned long last, F&& f);
  template <class F>
  void for_each(F&& f) { for_each_range(0, ULONG_MAX, static_cast<F&&>(f)); }
};

namespace internal {
// The leaf that holds index, or nullptr when there is none; the caller is in
// a read-side section.
IOV_ALWAYS_INLINE const xa_node* xa_leaf(const xarray* xa, unsigned long index) {
  const xa_node* node = xa->xa_head.load(std::memory_order_acquire);
  if (!node) return nullptr;
  unsigned shift = node->shift;
  if (shift + XA_CHUNK_SHIFT < 64 && (index >> (shift + XA_CHUNK_SHIFT)) != 0)
    return nullptr;  // beyond the tree's reach
  for (; shift > 0; shift -= XA_CHUNK_SHIFT) {
    node = static_cast<const xa_node*>(
        node->slots[(index >> shift) & XA_CHUNK_MASK].load(std::memory_order_acquire));
    if (!node) return nullptr;
  }
  return node;
}

// The lookup itself; the caller is in a read-side section. *leaf is set to
// the leaf that holds index when there is one.
IOV_ALWAYS_INLINE void* xa_walk(const xarray* xa, unsigned long index, const xa_node** leaf) {
  const xa_node* node = xa_leaf(xa, index);
  if (!node) return nullptr;
  *leaf = node;
  return node->slots[index & XA_CHUNK_MASK].load(std::memory_order_acquire);
}

// Starts fetching the cache line of index's slot and returns without waiting
// for it (the upper levels are loaded: they are few and stay cached). A
// caller with many lookups ahead issues this for each first, so that their
// misses on the leaves overlap instead of coming one after another. Not in
// the kernel. The caller is in a read-side section.
IOV_ALWAYS_INLINE void xa_prefetch_slot(const xarray* xa, unsigned long index) {
  if (const xa_node* node = xa_leaf(xa, index))
    __builtin_prefetch(&node->slots[index & XA_CHUNK_MASK]);
}

IOV_ALWAYS_INLINE void* xa_load_rcu(const xarray* xa, unsigned long index) {
  const xa_node* leaf;
  return xa_walk(xa, index, &leaf);
}
}  // namespace internal

// xa_init: a constructed xarray is already initialized; on a used one this
// empties it, as xa_destroy.
void xa_destroy(xarray* xa);
inline void xa_init(xarray* xa) { xa_destroy(xa); }

// The entry at index, or nullptr. Never allocates, never blocks.
IOV_ALWAYS_INLINE void_ptr xa_load(xarray* xa, unsigned long index) {
  rcu_read_guard guard;
  return internal::xa_load_rcu(xa, index);
}

// Stores entry at index and returns the old entry; storing nullptr erases.
// On failure returns an error entry (xa_err: -ENOMEM when a node cannot be
// allocated, -EINVAL for an internal entry) and leaves the array unchanged.
void_ptr xa_store(xarray* xa, unsigned long index, void* entry, gfp_t gfp = GFP_KERNEL);
// Removes the entry at index and returns it (nullptr if there was none).
void_ptr xa_erase(xarray* xa, unsigned long index);
// Stores entry only if the current entry is old; returns the current entry
// (== old on success) or an error entry.
void_ptr xa_cmpxchg(xarray* xa, unsigned long index, void* old, void* entry, gfp_t gfp = GFP_KERNEL);
// Stores entry only where there is none: 0, -EBUSY if occupied, -ENOMEM, -EINVAL.
int xa_insert(xarray* xa, unsigned long index, void* entry, gfp_t gfp = GFP_KERNEL);

inline bool xa_empty(const xarray* xa) { return xa->empty(); }
// Entries present now (a snapshot under concurrent stores). Not in the kernel.
inline unsigned long xa_count(const xarray* xa) { return xa->size(); }

// The present entry with the lowest index in [*indexp, max]: stores its index
// in *indexp and returns it, or returns nullptr and leaves *indexp alone.
void_ptr xa_find(xarray* xa, unsigned long* indexp, unsigned long max, xa_mark_t filter = XA_PRESENT);
// As xa_find, for indices in (*indexp, max].
void_ptr xa_find_after(xarray* xa, unsigned long* indexp, unsigned long max, xa_mark_t filter = XA_PRESENT);

// The kernel's advanced API, for walks over consecutive indices: an xa_state
// remembers the leaf of its index, so xas_next() within a leaf is one load.
// The caller holds a read-side section for as long as it uses the state (the
// remembered leaf is protected by it): after leaving the section, xas_reset()
// or xas_set() before the next load. A walk may miss entries stored while it
// runs; it never returns an entry stored at another index.
//
//   iov::rcu_read_guard guard;
//   XA_STATE(xas, &pages, first);
//   for (void* e = iov::xas_load(&xas); e; e = iov::xas_next(&xas)) use(xas.xa_index, e);
struct xa_state {
  xarray* xa;
  unsigned long xa_index;
  const internal::xa_node* xa_node;  // the leaf of xa_index, once a load has found it
};
#define XA_STATE(name, array, index) ::iov::xa_state name = {(array), (index), nullptr}

IOV_ALWAYS_INLINE void_ptr xas_load(xa_state* xas) {
  if (xas->xa_node)
    return xas->xa_node->slots[xas->xa_index & XA_CHUNK_MASK].load(std::memory_order_acquire);
  return internal::xa_walk(xas->xa, xas->xa_index, &xas->xa_node);
}
// Moves to the next index (ULONG_MAX wraps to 0, as the kernel's) and loads it.
IOV_ALWAYS_INLINE void_ptr xas_next(xa_state* xas) {
  if ((++xas->xa_index & XA_CHUNK_MASK) == 0) xas->xa_node = nullptr;  // into the next leaf
  return xas_load(xas);
}
inline void xas_set(xa_state* xas, unsigned long index) {
  xas->xa_index = index;
  xas->xa_node = nullptr;
}
inline void xas_reset(xa_state* xas) { xas->xa_node = nullptr; }
// No retry entries here: a walk never has to restart.
inline bool xas_retry(xa_state*, const void*) { return false; }

// --- The locked API: xa_lock() and the __xa_*() calls made under it --------------

// The kernel's xa_lock is a spinlock taken with the xa_lock()/xa_unlock()
// macros; here it is the xarray's mutex (the xa_lock member), and there are no
// interrupts or softirqs to exclude, so the _irq and _bh forms are the same.
inline void xa_lock(xarray* xa) { xa->xa_lock.lock(); }
inline void xa_unlock(xarray* xa) { xa->xa_lock.unlock(); }
inline void xa_lock_irq(xarray* xa) { xa_lock(xa); }
inline void xa_unlock_irq(xarray* xa) { xa_unlock(xa); }
inline void xa_lock_bh(xarray* xa) { xa_lock(xa); }
inline void xa_unlock_bh(xarray* xa) { xa_unlock(xa); }

// xa_store(), xa_erase(), xa_cmpxchg() and xa_insert() for a caller that
// holds xa_lock (which they never drop: nodes are allocated under it). The
// kernel's names: "__" identifiers are reserved in C++, accepted here for
// source compatibility (docs/api-contract.md).
void_ptr __xa_store(xarray* xa, unsigned long index, void* entry, gfp_t gfp);
void_ptr __xa_erase(xarray* xa, unsigned long index);
void_ptr __xa_cmpxchg(xarray* xa, unsigned long index, void* old, void* entry, gfp_t gfp);
int __xa_insert(xarray* xa, unsigned long index, void* entry, gfp_t gfp);

// The entry at the state's index again (after an xas_load() that found its
// leaf, one load), for a caller that must check an entry has not changed.
IOV_ALWAYS_INLINE void_ptr xas_reload(xa_state* xas) { return xas_load(xas); }

inline void_ptr xarray::load(unsigned long index) const {
  rcu_read_guard guard;
  return internal::xa_load_rcu(this, index);
}
inline void_ptr xarray::store(unsigned long index, void* entry) { return xa_store(this, index, entry); }
inline void_ptr xarray::erase(unsigned long index) { return xa_erase(this, index); }

template <class F>
void xarray::for_each_range(unsigned long first, unsigned long last, F&& f) {
  unsigned long index = first;
  for (void* entry = xa_find(this, &index, last); entry; entry = xa_find_after(this, &index, last)) {
    if constexpr (std::is_same_v<decltype(f(index, entry)), bool>) {
      if (!f(index, entry)) return;
    } else {
      f(index, entry);
    }
  }
}

}  // namespace iov

// The kernel's walks: `index` (unsigned long) and `entry` (void*, or any
// pointer to what the entries are, as C allows: `struct page *page;`) are the
// caller's variables. Each step is an xa_find_after, in its own read-side
// section, so the body may store and erase.
#define xa_for_each_range(xa, index, entry, start, last)                              \
  for ((index) = (start), (entry) = ::iov::xa_find((xa), &(index), (last), ::iov::XA_PRESENT); \
       (entry); (entry) = ::iov::xa_find_after((xa), &(index), (last), ::iov::XA_PRESENT))
#define xa_for_each_start(xa, index, entry, start) xa_for_each_range(xa, index, entry, start, ULONG_MAX)
#define xa_for_each(xa, index, entry) xa_for_each_start(xa, index, entry, 0)
#define DEFINE_XARRAY(name) ::iov::xarray name
