// histogram.hpp: a latency histogram with log-linear buckets (32 per power of
// two: under 3% error), mergeable across jobs, for fio's clat figures.
//
//   latency_histogram h;  h.add(1234);        // nanoseconds
//   uint64_t p99 = h.percentile(99.0);
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace iov::fio {

class latency_histogram {
 public:
  static constexpr unsigned kSubBits = 5, kSub = 1u << kSubBits;

  void add(uint64_t ns) {
    counts_[bucket(ns)]++;
    n_++;
    sum_ += static_cast<double>(ns);
    sumsq_ += static_cast<double>(ns) * static_cast<double>(ns);
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
  }
  void merge(const latency_histogram& o) {
    for (size_t k = 0; k < counts_.size(); k++)
      counts_[k] += o.counts_[k];
    n_ += o.n_;
    sum_ += o.sum_;
    sumsq_ += o.sumsq_;
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
  }
  uint64_t count() const { return n_; }
  uint64_t min() const { return n_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return n_ ? sum_ / static_cast<double>(n_) : 0; }
  double stddev() const {
    if (n_ < 2)
      return 0;
    double m = mean();
    return std::sqrt(std::max(0.0, (sumsq_ - m * m * static_cast<double>(n_)) / static_cast<double>(n_ - 1)));
  }
  // The value below which p percent of the samples fall (a bucket's midpoint).
  uint64_t percentile(double p) const {
    if (!n_)
      return 0;
    uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(n_)));
    rank = std::max<uint64_t>(rank, 1);
    uint64_t seen = 0;
    for (size_t k = 0; k < counts_.size(); k++) {
      seen += counts_[k];
      if (seen >= rank)
        return std::clamp(midpoint(k), min(), max_);
    }
    return max_;
  }

 private:
  static size_t bucket(uint64_t v) {
    if (v < kSub)
      return static_cast<size_t>(v);
    unsigned msb = 63 - static_cast<unsigned>(std::countl_zero(v));
    unsigned shift = msb - kSubBits;
    return (shift + 1) * kSub + static_cast<size_t>((v >> shift) - kSub);
  }
  static uint64_t midpoint(size_t k) {
    if (k < kSub)
      return k;
    unsigned shift = static_cast<unsigned>(k / kSub) - 1;
    uint64_t low = (uint64_t{kSub} + k % kSub) << shift;
    return low + ((uint64_t{1} << shift) >> 1);
  }

  std::array<uint64_t, (64 - kSubBits + 1) * kSub> counts_{};
  uint64_t n_ = 0;
  double sum_ = 0, sumsq_ = 0;
  uint64_t min_ = std::numeric_limits<uint64_t>::max(), max_ = 0;
};

}  // namespace iov::fio
