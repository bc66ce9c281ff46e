// void_ptr.hpp: a void* that converts implicitly to any object pointer, as
// C's does, for the kernel functions whose void* result kernel callers
// assign straight to a typed pointer (ERR_PTR(), the xarray's loads):
//
//   struct page* page = iov::xa_load(&pages, idx);   // C: implicit; C++: void_ptr
//   return iov::ERR_PTR(-ENOMEM);                    // from a function returning page*
//
// It compares with pointers and nullptr and tests as a bool, so code written
// for a plain void* result keeps compiling; `auto` holds a void_ptr, and
// static_cast<T*>() still works. One thing does not: `c ? a_void_ptr : a_void_star`
// is ambiguous (each converts to the other); name the type on one side.
#pragma once

#include <cstddef>

#include "iov/config.hpp"

namespace iov {

class void_ptr {
 public:
  constexpr void_ptr(void* p = nullptr) noexcept : p_(p) {}
  template <class T>
  constexpr operator T*() const noexcept {
    return static_cast<T*>(p_);
  }
  constexpr explicit operator bool() const noexcept { return p_ != nullptr; }
  constexpr void* get() const noexcept { return p_; }

  friend constexpr bool operator==(void_ptr a, void_ptr b) noexcept { return a.p_ == b.p_; }
  friend constexpr bool operator==(void_ptr a, std::nullptr_t) noexcept { return a.p_ == nullptr; }
  template <class T>
  friend constexpr bool operator==(void_ptr a, T* b) noexcept {
    return a.p_ == static_cast<const void*>(b);
  }

 private:
  void* p_;
};

}  // namespace iov
