// void_ptr.hpp: a void* that converts implicitly to any object pointer, as
// C's does, for the kernel functions whose void* result kernel callers
// assign straight to a typed pointer (ERR_PTR(), the xarray's loads, the
// page mappings):
//
//   struct page* page = iov::xa_load(&pages, idx);   // C: implicit; C++: void_ptr
//   return iov::ERR_PTR(-ENOMEM);                    // from a function returning page*
//   char* p = iov::kmap_local_page(pg);
//   memcpy(iov::kmap_local_page(pg) + off, src, len);   // GNU C: void* + n is byte arithmetic
//
// Arithmetic is GNU C's on void*, which the kernel is written in: `+`, `-`,
// `+=`, `-=`, `++` and `--` move by bytes, and the difference of two is in
// bytes. It compares with pointers and nullptr and tests as a bool, so code
// written for a plain void* result keeps compiling; `auto` holds a void_ptr,
// static_cast<T*>() still works, and so does a cast to an integer
// (`(unsigned long)page_address(pg)`, static_cast<uintptr_t>()). Two things do
// not: reinterpret_cast<uintptr_t>() of a void_ptr (use static_cast or .get()),
// and `c ? a_void_ptr : a_void_star`, which is ambiguous (each converts to the
// other); name the type on one side.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

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
  // C's cast of a pointer to an integer type; explicit, as C++ wants for a pointer.
  template <std::integral I>
    requires(!std::same_as<I, bool> && sizeof(I) >= sizeof(void*))
  explicit operator I() const noexcept {
    return static_cast<I>(reinterpret_cast<uintptr_t>(p_));
  }
  constexpr void* get() const noexcept { return p_; }

  // GNU C's void* arithmetic: by bytes.
  template <std::integral N>
  friend void_ptr operator+(void_ptr a, N n) noexcept {
    return void_ptr(static_cast<char*>(a.p_) + n);
  }
  template <std::integral N>
  friend void_ptr operator+(N n, void_ptr a) noexcept {
    return void_ptr(static_cast<char*>(a.p_) + n);
  }
  template <std::integral N>
  friend void_ptr operator-(void_ptr a, N n) noexcept {
    return void_ptr(static_cast<char*>(a.p_) - n);
  }
  friend std::ptrdiff_t operator-(void_ptr a, void_ptr b) noexcept {
    return static_cast<char*>(a.p_) - static_cast<char*>(b.p_);
  }
  template <std::integral N>
  void_ptr& operator+=(N n) noexcept {
    p_ = static_cast<char*>(p_) + n;
    return *this;
  }
  template <std::integral N>
  void_ptr& operator-=(N n) noexcept {
    p_ = static_cast<char*>(p_) - n;
    return *this;
  }
  void_ptr& operator++() noexcept { return *this += 1; }
  void_ptr& operator--() noexcept { return *this -= 1; }
  void_ptr operator++(int) noexcept {
    void_ptr old = *this;
    ++*this;
    return old;
  }
  void_ptr operator--(int) noexcept {
    void_ptr old = *this;
    --*this;
    return old;
  }

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
