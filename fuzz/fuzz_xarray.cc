// fuzz_xarray: a random sequence of xa_store, xa_erase, xa_load, xa_cmpxchg,
// xa_insert, xa_find, xa_find_after, xa_for_each(_range), xa_destroy and the
// C++ members on one xarray, against a std::map. Indices cluster where the
// tree changes shape (node boundaries 64^k, ULONG_MAX, the keys already in);
// entries are pointers, value entries, internal entries (refused with
// -EINVAL) and nullptr (an erase). Node allocations are failed on purpose
// (the store must fail with -ENOMEM and change nothing), and an audit compares
// the nodes alive after an RCU barrier with the canonical tree for the keys
// (no leaked node, no missed shrink).
//
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_xarray
//   build/fuzz/fuzz/fuzz_xarray -max_total_time=60 fuzz/corpus/fuzz_xarray
//   IOV_FUZZ_TRACE=1 build/fuzz/fuzz/fuzz_xarray crash-...    # replay one input
#include <cerrno>
#include <climits>
#include <cstdint>
#include <map>

#include "fuzz_model.hpp"
#include "iov/rcu.hpp"
#include "iov/xarray.hpp"

namespace {

using fuzz::input;
using model_t = std::map<unsigned long, void*>;

// An index where things happen: small, either side of a node boundary, at
// the top of the range, anywhere, or one already stored (and its neighbours).
unsigned long pick_index(input& in, const model_t& m) {
  uint8_t mode = in.u8();
  switch (mode % 6) {
    case 0: return in.u8();
    case 1: return (1UL << (6 * (1 + in.below(10)))) + static_cast<long>(in.below(5)) - 2;
    case 2: return ULONG_MAX - in.below(4);
    case 3: return in.u64();
    default: {
      if (m.empty()) return in.u16();
      auto it = m.begin();
      std::advance(it, in.below(m.size()));
      return it->first + static_cast<long>(mode >> 6) - 1;  // the key, or one either side
    }
  }
}

void* pick_entry(input& in) {
  switch (in.u8() % 5) {
    case 0: return iov::xa_mk_value(in.u64() >> 1);
    case 1: return iov::xa_mk_internal(in.u8() & 1 ? in.u8() : -static_cast<long>(1 + in.below(4095)));
    case 2: return nullptr;
    default: return reinterpret_cast<void*>(static_cast<uintptr_t>(in.u64() | 4) & ~uintptr_t{3});
  }
}

void* model_get(const model_t& m, unsigned long index) {
  auto it = m.find(index);
  return it == m.end() ? nullptr : it->second;
}

void model_set(model_t& m, unsigned long index, void* entry) {
  if (entry)
    m[index] = entry;
  else
    m.erase(index);
}

// The nodes of the canonical tree for these keys: a top just tall enough for
// the largest key and, at each level, one node per 64-slot run in use.
long canonical_nodes(const model_t& m) {
  if (m.empty()) return 0;
  unsigned top = 0;
  while (top < 60 && (m.rbegin()->first >> (top + 6)) != 0) top += 6;
  long nodes = 0;
  for (unsigned shift = 0; shift <= top; shift += 6) {
    if (shift + 6 >= 64) {
      nodes++;
      continue;
    }
    bool first = true;
    unsigned long last = 0;
    for (const auto& kv : m) {
      unsigned long prefix = kv.first >> (shift + 6);
      if (first || prefix != last) nodes++;
      first = false;
      last = prefix;
    }
  }
  return nodes;
}

// The first key in [from, max], as xa_find must find it.
const model_t::value_type* model_find(const model_t& m, unsigned long from, unsigned long max) {
  if (from > max) return nullptr;
  auto it = m.lower_bound(from);
  return it == m.end() || it->first > max ? nullptr : &*it;
}

void check_find(iov::xarray* xa, const model_t& m, input& in) {
  unsigned long index = pick_index(in, m), max = in.u8() & 1 ? ULONG_MAX : pick_index(in, m);
  bool after = in.u8() & 1;
  unsigned long from = after ? (index == ULONG_MAX ? 1 : index + 1) : index;
  const auto* want = (after && index == ULONG_MAX) ? nullptr : model_find(m, from, max);
  unsigned long got_index = index;
  void* got = after ? iov::xa_find_after(xa, &got_index, max) : iov::xa_find(xa, &got_index, max);
  fuzz::trace("xa_find%s(%lu, %lu) -> %p", after ? "_after" : "", index, max, got);
  FUZZ_CHECK(got == (want ? want->second : nullptr));
  FUZZ_CHECK(got_index == (want ? want->first : index));
}

// xa_for_each_range over [start, last] and the member walk with an early stop.
void check_walks(iov::xarray* xa, const model_t& m, input& in) {
  unsigned long start = pick_index(in, m), last = in.u8() & 1 ? ULONG_MAX : pick_index(in, m);
  fuzz::trace("xa_for_each_range(%lu, %lu)", start, last);
  auto it = start <= last ? m.lower_bound(start) : m.end();
  unsigned long index;
  void* entry;
  xa_for_each_range(xa, index, entry, start, last) {
    FUZZ_CHECK(it != m.end() && it->first <= last && index == it->first && entry == it->second);
    ++it;
  }
  FUZZ_CHECK(it == m.end() || it->first > last || start > last);
  size_t stop = in.below(m.size() + 1), seen = 0;
  auto mi = m.begin();
  xa->for_each([&](unsigned long i, void* e) {
    FUZZ_CHECK(mi != m.end() && i == mi->first && e == mi->second);
    ++mi;
    return ++seen < stop;
  });
  FUZZ_CHECK(seen == (stop ? stop : (m.empty() ? 0 : 1)));
}

void run_op(iov::xarray* xa, model_t& m, input& in) {
  uint8_t op = in.u8();
  bool member = op & 0x80;  // the C++ layer instead of the free function
  unsigned long index = pick_index(in, m);
  switch ((op & 0x7f) % 10) {
    case 0: {
      void* entry = pick_entry(in);
      void* got = member ? xa->store(index, entry) : iov::xa_store(xa, index, entry);
      fuzz::trace("xa_store(%lu, %p) -> %p", index, entry, got);
      if (iov::xa_is_internal(entry)) {
        FUZZ_CHECK(iov::xa_err(got) == -EINVAL);
        break;
      }
      FUZZ_CHECK(got == model_get(m, index));
      model_set(m, index, entry);
      break;
    }
    case 1: {
      void* got = member ? xa->erase(index) : iov::xa_erase(xa, index);
      fuzz::trace("xa_erase(%lu) -> %p", index, got);
      FUZZ_CHECK(got == model_get(m, index));
      m.erase(index);
      break;
    }
    case 2: {
      void* got = member ? xa->load(index) : iov::xa_load(xa, index);
      fuzz::trace("xa_load(%lu) -> %p", index, got);
      FUZZ_CHECK(got == model_get(m, index));
      break;
    }
    case 3: {
      void* curr = model_get(m, index);
      void* old = in.u8() & 1 ? curr : pick_entry(in);
      void* entry = pick_entry(in);
      void* got = iov::xa_cmpxchg(xa, index, old, entry);
      fuzz::trace("xa_cmpxchg(%lu, %p, %p) -> %p", index, old, entry, got);
      if (iov::xa_is_internal(entry)) {
        FUZZ_CHECK(iov::xa_err(got) == -EINVAL);
        break;
      }
      FUZZ_CHECK(got == curr);
      if (curr == old) model_set(m, index, entry);
      break;
    }
    case 4: {
      void* entry = pick_entry(in);
      int got = iov::xa_insert(xa, index, entry);
      fuzz::trace("xa_insert(%lu, %p) -> %d", index, entry, got);
      if (entry && iov::xa_is_internal(entry)) {
        FUZZ_CHECK(got == -EINVAL);
      } else if (model_get(m, index)) {
        FUZZ_CHECK(got == -EBUSY);
      } else {
        FUZZ_CHECK(got == 0);
        model_set(m, index, entry);
      }
      break;
    }
    case 5: check_find(xa, m, in); break;
    case 6: check_walks(xa, m, in); break;
    case 7: {  // a store whose node allocations fail after `skip` succeed
      void* entry = reinterpret_cast<void*>(static_cast<uintptr_t>(in.u16() + 1) << 3);
      unsigned skip = static_cast<unsigned>(in.below(12));
      model_t after = m;
      after[index] = entry;
      long needed = canonical_nodes(after) - canonical_nodes(m);
      iov::internal::xa_fail_next_alloc(1 + static_cast<unsigned>(in.below(3)), skip);
      void* got = iov::xa_store(xa, index, entry);
      iov::internal::xa_fail_next_alloc(0, 0);
      fuzz::trace("xa_store(%lu) failing after %u of %ld nodes -> %p", index, skip, needed, got);
      if (needed > static_cast<long>(skip)) {
        FUZZ_CHECK(iov::xa_err(got) == -ENOMEM);
      } else {
        FUZZ_CHECK(got == model_get(m, index));
        m = std::move(after);
      }
      break;
    }
    case 8:
      if (in.u8() % 4) {  // an audit (a destroy is rarer)
        // Retired nodes are freed a grace period later: wait for them (a slow
        // call) only when the count is off.
        if (iov::internal::xa_nodes_allocated() != canonical_nodes(m)) iov::rcu_barrier();
        fuzz::trace("audit: %ld nodes, canonical %ld", iov::internal::xa_nodes_allocated(), canonical_nodes(m));
        FUZZ_CHECK(iov::internal::xa_nodes_allocated() == canonical_nodes(m));
        break;
      }
      fuzz::trace("xa_destroy");
      iov::xa_destroy(xa);
      m.clear();
      break;
    default:
      check_find(xa, m, in);
      break;
  }
  FUZZ_CHECK(iov::xa_count(xa) == m.size() && xa->size() == m.size());
  FUZZ_CHECK(iov::xa_empty(xa) == m.empty() && xa->empty() == m.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  input in(data, size);
  iov::xarray xa;
  model_t m;
  for (int n = 0; n < 256 && !in.empty(); n++) run_op(&xa, m, in);
  // Everything must still be there, and nothing else.
  unsigned long index = 0;
  void* entry;
  auto it = m.begin();
  xa_for_each(&xa, index, entry) {
    FUZZ_CHECK(it != m.end() && index == it->first && entry == it->second);
    ++it;
  }
  FUZZ_CHECK(it == m.end());
  return 0;
}
