// Execution orders of the host executor: which thread of a block (and which
// block of the grid) runs first. A kernel whose result depends on the order
// has a race (a missing __syncthreads, a read of another block's output);
// running the same tests under forward, reverse and seeded random orders
// exposes it (docs/host_executor.md).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace emu::hostexec {

enum class Order { Forward, Reverse, Random };

struct Schedule {
  Order order = Order::Forward;
  uint64_t seed = 0;  // Random only
};

// EMU_HOSTEXEC_ORDER = forward | reverse | random | random:<seed> (decimal;
// "random" is seed 0); unset or empty: forward. Anything else throws
// std::invalid_argument naming the variable and the value.
inline Schedule schedule_from_env() {
  const char* raw = std::getenv("EMU_HOSTEXEC_ORDER");
  std::string v = raw ? raw : "";
  if (v.empty() || v == "forward") return {Order::Forward, 0};
  if (v == "reverse") return {Order::Reverse, 0};
  if (v == "random") return {Order::Random, 0};
  const std::string prefix = "random:";
  if (v.compare(0, prefix.size(), prefix) == 0 && v.size() > prefix.size()) {
    std::string digits = v.substr(prefix.size());
    bool all_digits = digits.find_first_not_of("0123456789") == std::string::npos;
    if (all_digits && digits.size() <= 20) {
      errno = 0;
      unsigned long long seed = std::strtoull(digits.c_str(), nullptr, 10);
      if (errno == 0) return {Order::Random, seed};
    }
  }
  throw std::invalid_argument("EMU_HOSTEXEC_ORDER='" + v +
                              "': expected forward, reverse, random or random:<decimal seed>");
}

namespace detail {
inline std::mutex default_schedule_mutex;
inline std::optional<Schedule> default_schedule_override;
}  // namespace detail

// Overrides the environment for later launches that take no Schedule
// (std::nullopt: back to EMU_HOSTEXEC_ORDER). Process-wide.
inline void set_default_schedule(std::optional<Schedule> s) {
  std::lock_guard<std::mutex> lock(detail::default_schedule_mutex);
  detail::default_schedule_override = s;
}

// What a launch without a Schedule uses now.
inline Schedule default_schedule() {
  {
    std::lock_guard<std::mutex> lock(detail::default_schedule_mutex);
    if (detail::default_schedule_override) return *detail::default_schedule_override;
  }
  return schedule_from_env();
}

namespace detail {

// splitmix64: a small, well-mixed generator; one per launch, seeded by the
// Schedule's seed alone, so a launch's order depends only on the seed and the
// launch shape (a failure under random:<seed> reproduces by rerunning that
// launch with the same seed).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) for n >= 1 (Lemire's multiply; the bias is below 2^-32
  // for the sizes used here, irrelevant for an execution order).
  uint64_t below(uint64_t n) {
    __extension__ typedef unsigned __int128 u128;
    return static_cast<uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

// Fills `order` with 0..n-1 in the schedule's order (Random: a fresh
// Fisher-Yates permutation per call).
inline void make_order(std::vector<uint32_t>& order, uint32_t n, Order o, SplitMix64& rng) {
  order.resize(n);
  std::iota(order.begin(), order.end(), 0u);
  if (o == Order::Reverse) {
    for (uint32_t i = 0; i < n / 2; ++i) std::swap(order[i], order[n - 1 - i]);
  } else if (o == Order::Random) {
    for (uint32_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  }
}

// The i-th block to run of `total` (linear index, x fastest). Random grids of
// up to 2^22 blocks are a Fisher-Yates permutation; larger ones (not run on a
// CPU in practice) a random affine bijection i -> (a*i + c) mod total.
class BlockOrder {
 public:
  BlockOrder(uint64_t total, Order o, SplitMix64& rng) : total_(total), order_(o) {
    if (o != Order::Random) return;
    if (total <= (1ull << 22)) {
      std::vector<uint32_t> p;
      make_order(p, static_cast<uint32_t>(total), o, rng);
      perm_ = std::move(p);
    } else {
      c_ = rng.below(total);
      do a_ = 1 + rng.below(total - 1);
      while (std::gcd(a_, total) != 1);
    }
  }
  uint64_t at(uint64_t i) const {
    switch (order_) {
      case Order::Forward:
        return i;
      case Order::Reverse:
        return total_ - 1 - i;
      case Order::Random: {
        if (!perm_.empty()) return perm_[i];
        __extension__ typedef unsigned __int128 u128;
        return static_cast<uint64_t>((static_cast<u128>(a_) * i + c_) % total_);
      }
    }
    return i;
  }

 private:
  uint64_t total_;
  Order order_;
  std::vector<uint32_t> perm_;
  uint64_t a_ = 1, c_ = 0;
};

}  // namespace detail
}  // namespace emu::hostexec
