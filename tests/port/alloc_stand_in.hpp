// alloc_stand_in.hpp: TEMPORARY. The page names brd.c needs that branch
// `alloc` adds to page.hpp (reference counts, __GFP_ZERO, pgoff_t), as the
// smallest stand-in, so that brd_port_test can run before that branch is
// merged (cmake -DIOV_PORT_TESTS=ON -DIOV_PORT_TESTS_STAND_IN=ON). Delete it
// once page.hpp has them: the port then builds against the real ones.
#pragma once

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "iov/page.hpp"

namespace iov {

using pgoff_t = unsigned long;
inline constexpr gfp_t GFP_NOWAIT = 0, __GFP_HIGHMEM = 0, __GFP_ZERO = 1u << 8;

namespace port_stand_in {
inline std::mutex refs_lock;
inline std::unordered_map<page*, int> refs;  // pages from alloc_page_zeroing() only
inline page* alloc_page_zeroing(gfp_t gfp) {
  page* p = ::iov::alloc_page(gfp);
  if (p && (gfp & __GFP_ZERO))
    std::memset(p, 0, PAGE_SIZE);
  std::lock_guard lock(refs_lock);
  refs[p] = 1;
  return p;
}
inline size_t live_pages() {
  std::lock_guard lock(refs_lock);
  return refs.size();
}
}  // namespace port_stand_in

inline void get_page(page* p) {
  std::lock_guard lock(port_stand_in::refs_lock);
  port_stand_in::refs[p]++;
}
inline bool get_page_unless_zero(page* p) {
  std::lock_guard lock(port_stand_in::refs_lock);
  auto it = port_stand_in::refs.find(p);
  if (it == port_stand_in::refs.end() || it->second == 0)
    return false;
  it->second++;
  return true;
}
inline void put_page(page* p) {
  std::unique_lock lock(port_stand_in::refs_lock);
  if (--port_stand_in::refs[p] == 0) {
    port_stand_in::refs.erase(p);
    lock.unlock();
    free_page(p);
  }
}

}  // namespace iov

// The port calls iov::alloc_page(gfp | __GFP_ZERO ...): route it to the
// zeroing, counted allocation. (A macro: page.hpp's alloc_page ignores gfp.)
#define alloc_page(gfp) port_stand_in::alloc_page_zeroing(gfp)
