// err.hpp: errors encoded in pointers (the kernel's include/linux/err.h). The
// last page of the address space (-MAX_ERRNO..-1) holds no object, so a
// function returning a pointer can return -errno in it instead:
//
//   struct page* page = brd_insert_page(brd, sector);
//   if (iov::IS_ERR(page)) return iov::PTR_ERR(page);   // -ENOMEM
#pragma once

#include <cstdint>

#include "iov/config.hpp"
#include "iov/void_ptr.hpp"

namespace iov {

inline constexpr unsigned long MAX_ERRNO = 4095;

inline bool IS_ERR_VALUE(unsigned long x) { return IOV_UNLIKELY(x >= static_cast<unsigned long>(-MAX_ERRNO)); }
// A void_ptr: C code returns ERR_PTR() from functions returning any pointer type.
inline void_ptr ERR_PTR(long error) { return void_ptr(reinterpret_cast<void*>(error)); }
inline long PTR_ERR(const void* ptr) { return reinterpret_cast<long>(ptr); }
inline bool IS_ERR(const void* ptr) { return IS_ERR_VALUE(reinterpret_cast<unsigned long>(ptr)); }
inline bool IS_ERR_OR_NULL(const void* ptr) { return !ptr || IS_ERR(ptr); }
inline void_ptr ERR_CAST(const void* ptr) { return void_ptr(const_cast<void*>(ptr)); }
inline int PTR_ERR_OR_ZERO(const void* ptr) { return IS_ERR(ptr) ? static_cast<int>(PTR_ERR(ptr)) : 0; }

}  // namespace iov
