// vmalloc.hpp: virtually contiguous mappings of pages that need not be
// contiguous (the kernel's vmalloc.h): vmap() of a page array, vmalloc(),
// and the way back from an address to its page, which kvec extraction takes
// for such addresses as the kernel's iov_iter_extract_kvec_pages() does.
//
//   iov::page* pages[4];   // each from alloc_page(GFP_KERNEL | __GFP_VMAPPABLE)
//   char* buf = static_cast<char*>(iov::vmap(pages, 4, iov::VM_MAP, iov::PAGE_KERNEL));
//   buf[5000] = 1;         // writes page_address(pages[1])[904]
//   iov::vmalloc_to_page(buf + 5000) == pages[1];
//   iov::vunmap(buf);
//
// Only frames of the shared pool can be mapped a second time (page.hpp's
// __GFP_VMAPPABLE; private anonymous memory has no name a second mapping
// could use): vmap() of any other page fails with NULL. The mappings live in
// a reserved 16 GiB of address space, each followed by an unmapped guard
// page. vmap, vunmap, vmalloc and vfree need the compiled library;
// is_vmalloc_addr and vmalloc_to_page are inline, and without the library
// (nothing was ever mapped) is_vmalloc_addr is false for every address.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstdint>

#include "iov/page.hpp"

namespace iov {

// vm_struct's flags (vmalloc.h, with its values). VM_MAP_PUT_PAGES: vfree()
// puts each page and kvfree()s the array, which the area then owns; vunmap()
// does neither, as the kernel's. The others are accepted and change nothing.
inline constexpr unsigned long VM_IOREMAP = 0x1, VM_ALLOC = 0x2, VM_MAP = 0x4, VM_USERMAP = 0x8,
                               VM_MAP_PUT_PAGES = 0x200;

// A mapping's protection: POSIX PROT_* bits in the kernel's wrapper.
struct pgprot_t {
  unsigned long pgprot;
};
inline constexpr pgprot_t __pgprot(unsigned long prot) { return {prot}; }
inline constexpr unsigned long pgprot_val(pgprot_t prot) { return prot.pgprot; }
inline constexpr pgprot_t PAGE_KERNEL = {PROT_READ | PROT_WRITE}, PAGE_KERNEL_RO = {PROT_READ};

// Maps count pages one after another and returns the address of the first,
// or NULL: count 0, a page not from the shared pool (or NULL), or no room.
void* vmap(page** pages, unsigned int count, unsigned long flags, pgprot_t prot) noexcept;
// Removes the mapping that starts at addr; the pages stay the caller's.
// NULL is ignored; an address vmap() did not return is ignored (the kernel
// warns), and aborts under IOV_CHECKS.
void vunmap(const void* addr) noexcept;
// size bytes of new pages from the shared pool, mapped (vzalloc: zeroed);
// NULL for size 0 or when memory runs out.
void* vmalloc(unsigned long size) noexcept;
void* vzalloc(unsigned long size) noexcept;
// vunmap(), then the pages of a vmalloc() or of a vmap() with
// VM_MAP_PUT_PAGES go back as vm_struct's do in the kernel.
void vfree(const void* addr) noexcept;

namespace internal {
// The reserved range: VMALLOC_BYTES from vmalloc_start, set once at the first
// vmap(), after the table (release). Before that the start is 2^63, where
// no pointer lies (non-canonical on x86-64 and arm64, and below the
// ERR_PTR() values), so the test every extraction makes is one load and a
// compare with a constant.
inline constexpr uintptr_t VMALLOC_BYTES = uintptr_t{16} << 30;
inline std::atomic<uintptr_t> vmalloc_start{uintptr_t{1} << 63};
inline std::atomic<page**> vmalloc_pages{nullptr};  // (addr - start) >> PAGE_SHIFT: the page, NULL for none
}  // namespace internal

inline bool is_vmalloc_addr(const void* x) {
  return reinterpret_cast<uintptr_t>(x) - internal::vmalloc_start.load(std::memory_order_acquire) <
         internal::VMALLOC_BYTES;
}
// There are no modules: the same test.
inline bool is_vmalloc_or_module_addr(const void* x) { return is_vmalloc_addr(x); }

// The page mapped at addr; NULL for a guard page, an address no mapping
// holds, or one outside the vmalloc range.
inline page* vmalloc_to_page(const void* addr) {
  uintptr_t offset = reinterpret_cast<uintptr_t>(addr) - internal::vmalloc_start.load(std::memory_order_acquire);
  if (offset >= internal::VMALLOC_BYTES)
    return nullptr;
  page** table = internal::vmalloc_pages.load(std::memory_order_relaxed);
  return table ? table[offset >> PAGE_SHIFT] : nullptr;
}
inline unsigned long vmalloc_to_pfn(const void* addr) { return page_to_pfn(vmalloc_to_page(addr)); }

}  // namespace iov
