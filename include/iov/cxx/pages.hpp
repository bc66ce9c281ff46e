// pages.hpp: owners for the allocator's memory, so that C++ code needs no
// deleter for alloc_pages() and no put on every path out.
//
//   iov::unique_pages buf = iov::unique_pages::alloc(iov::GFP_KERNEL, 2);  // 4 frames
//   if (!buf) return -ENOMEM;
//   iov::bio_vec bv{buf.get(), 5000, 100};                                // free_pages() at scope end
//   iov::folio_ref f = iov::folio_ref::alloc(iov::GFP_KERNEL, 0);
//   iov::folio_ref lent = f;                                              // folio_get()
//                                                                         // folio_put() by each
//
// unique_pages owns one alloc_pages() allocation (move-only); folio_ref holds
// one reference to a folio (copy = folio_get(), destruction = folio_put(), the
// last put frees it). Both may be empty (an allocation failed, or moved from).
#pragma once

#include <cstddef>
#include <span>
#include <utility>

#include "iov/folio.hpp"
#include "iov/page.hpp"

namespace iov {

class unique_pages {
 public:
  unique_pages() = default;
  // Owns p, which alloc_pages(..., order) returned.
  unique_pages(page* p, unsigned order) : p_(p), order_(order) {}
  static unique_pages alloc(gfp_t gfp, unsigned order = 0) { return {alloc_pages(gfp, order), order}; }

  unique_pages(unique_pages&& o) noexcept : p_(std::exchange(o.p_, nullptr)), order_(o.order_) {}
  unique_pages& operator=(unique_pages&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      order_ = o.order_;
    }
    return *this;
  }
  unique_pages(const unique_pages&) = delete;
  unique_pages& operator=(const unique_pages&) = delete;
  ~unique_pages() { reset(); }

  void reset() {
    if (p_)
      free_pages(std::exchange(p_, nullptr), order_);
  }
  // Hands the frames to the caller, who frees them with free_pages(p, order()).
  [[nodiscard]] page* release() { return std::exchange(p_, nullptr); }

  page* get() const { return p_; }
  unsigned order() const { return order_; }
  size_t size() const { return p_ ? PAGE_SIZE << order_ : 0; }
  std::span<std::byte> bytes() const { return {static_cast<std::byte*>(page_address(p_)), size()}; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  page* p_ = nullptr;
  unsigned order_ = 0;
};

class folio_ref {
 public:
  folio_ref() = default;
  static folio_ref alloc(gfp_t gfp, unsigned order = 0) { return adopt(folio_alloc(gfp, order)); }
  // Takes over a reference the caller holds (folio_alloc()'s, or a get's).
  static folio_ref adopt(folio* f) {
    folio_ref r;
    r.f_ = f;
    return r;
  }
  // Takes a new reference (folio_get()).
  static folio_ref get(folio* f) {
    if (f)
      folio_get(f);
    return adopt(f);
  }

  folio_ref(const folio_ref& o) : f_(o.f_) {
    if (f_)
      folio_get(f_);
  }
  folio_ref& operator=(const folio_ref& o) {
    folio_ref copy(o);
    std::swap(f_, copy.f_);
    return *this;
  }
  folio_ref(folio_ref&& o) noexcept : f_(std::exchange(o.f_, nullptr)) {}
  folio_ref& operator=(folio_ref&& o) noexcept {
    folio_ref moved(std::move(o));
    std::swap(f_, moved.f_);
    return *this;
  }
  ~folio_ref() { reset(); }

  void reset() {
    if (f_)
      folio_put(std::exchange(f_, nullptr));
  }
  // Hands the reference to the caller, who puts it with folio_put().
  [[nodiscard]] folio* release() { return std::exchange(f_, nullptr); }

  folio* get() const { return f_; }
  size_t size() const { return f_ ? folio_size(f_) : 0; }
  std::span<std::byte> bytes() const {
    return f_ ? std::span<std::byte>(static_cast<std::byte*>(folio_address(f_)), folio_size(f_))
              : std::span<std::byte>();
  }
  explicit operator bool() const { return f_ != nullptr; }

 private:
  folio* f_ = nullptr;
};

}  // namespace iov
