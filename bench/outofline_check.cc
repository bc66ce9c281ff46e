// outofline_check.cc: the suite's proof that generic_iterate is a real
// out-of-line call: a counting step passed through a function pointer must be
// called once per piece from the library's own code, never from a copy the
// compiler inlined into the suite.
//
//   std::string detail;
//   bool ok = iov::bench::check_generic_iterate_out_of_line(&detail);
#include <cstdint>
#include <cstdio>
#include <string>

#include "bench_common.hpp"
#include "symbols.hpp"

namespace iov::bench {

namespace {

struct step_probe {
  size_t calls;
  const void* caller;  // where the last call came from
};

IOV_NOINLINE size_t counting_step(void*, size_t, size_t, void* priv, void*) {
  auto* probe = static_cast<step_probe*>(priv);
  probe->calls++;
  probe->caller = __builtin_extract_return_addr(__builtin_return_address(0));
  return 0;
}

}  // namespace

bool check_generic_iterate_out_of_line(std::string* detail) {
  constexpr size_t n_pages = 4;
  page* frames = alloc_pages(GFP_KERNEL, 2);
  if (!frames) {
    *detail = "alloc_pages failed";
    return false;
  }
  bio_vec bv[n_pages];
  for (size_t j = 0; j < n_pages; j++)
    bvec_set_page(&bv[j], frames + j, PAGE_SIZE, 0);
  iov_iter it;
  iov_iter_bvec(&it, ITER_SOURCE, bv, n_pages, n_pages * PAGE_SIZE);
  step_probe probe{};
  size_t n = generic_iterate(&it, n_pages * PAGE_SIZE, &probe, nullptr, counting_step, counting_step);
  free_pages(frames, 2);

  std::string object;
  const void* start = nullptr;
  size_t size = 0;
  const void* entry = reinterpret_cast<const void*>(&generic_iterate);
  std::string fn = symbol_at(entry, &object, &start, &size);
  std::string caller = symbol_at(probe.caller);
  bool resolved = fn.rfind("iov::generic_iterate(", 0) == 0 && start == entry;
  auto c = reinterpret_cast<uintptr_t>(probe.caller), s = reinterpret_cast<uintptr_t>(start);
  // Called from the library's walk: inside generic_iterate itself, or a
  // helper of the library it calls (never code of the suite).
  bool from_library = (resolved && c >= s && c < s + size) ||
                      (caller.rfind("iov::", 0) == 0 && caller.rfind("iov::bench::", 0) != 0);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "iov::generic_iterate at %p (%zu bytes) in %s; %zu bytes walked, counting step called %zu times "
                "(want %zu), last from %s",
                entry, size, object.empty() ? "?" : object.c_str(), n, probe.calls, n_pages,
                caller.empty() ? "an unknown function" : caller.c_str());
  *detail = buf;
  if (!resolved)
    *detail += "; the symbol was not found (stripped binary?)";
  return n == n_pages * PAGE_SIZE && probe.calls == n_pages && resolved && from_library;
}

}  // namespace iov::bench
