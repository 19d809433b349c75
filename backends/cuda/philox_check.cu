// cuRAND agreement check for numerics/philox.h (see philox_check.h).
//
// docs/contract.md section 6.1 promises that the CPU draws are cuRAND's Philox
// stream; this is where that promise meets the real curand_kernel.h on a GPU.
#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <cstdint>
#include <sstream>
#include <vector>

#include "backends/cuda/philox_check.h"
#include "numerics/philox.h"

namespace emu {
namespace {

// Words drawn per position: not a multiple of 4, so partial blocks and block
// steps at every starting word are covered.
constexpr int kWords = 10;

// Position of one check. With wrap_low64, the cuRAND state is moved on after
// curand_init by four skipahead(2^64 - 4) calls, i.e. by 2^64 - 4 blocks, to
// reach counters near the end of the low 64 bits that curand_init alone cannot
// (offset / 4 < 2^62); `expect_*` then say where PhiloxStream must start.
struct PhiloxCase {
  uint64_t seed, subsequence, offset;
  int wrap_low64;
  uint64_t expect_subsequence, expect_block;
  uint32_t expect_word;
};

// splitmix64: a fixed, portable source of case parameters.
uint64_t splitmix64(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<PhiloxCase> philox_cases() {
  std::vector<PhiloxCase> cases;
  auto plain = [&cases](uint64_t seed, uint64_t sub, uint64_t off) {
    cases.push_back({seed, sub, off, 0, sub, off >> 2, static_cast<uint32_t>(off & 3)});
  };
  const uint64_t seeds[] = {0, 1, 0xffffffffull, 0x100000000ull, 0x0123456789abcdefull, ~0ull};
  const uint64_t subs[] = {0, 1, 0xffffffffull, 0x100000000ull, 0xfedcba9876543210ull, ~0ull};
  const uint64_t offs[] = {0,
                           1,
                           5,
                           4 * 0xffffffffull,
                           4 * 0xffffffffull + 3,
                           4 * 0x100000000ull,
                           ~0ull - 15,  // offset / 4 = 2^62 - 4: the largest block curand_init reaches
                           ~0ull - kWords};
  for (uint64_t seed : seeds)
    for (uint64_t sub : subs)
      for (uint64_t off : offs) plain(seed, sub, off);
  uint64_t state = 20240611;
  for (int i = 0; i < 512; ++i) {
    uint64_t seed = splitmix64(&state);
    uint64_t sub = splitmix64(&state) >> (splitmix64(&state) % 64);
    uint64_t off = splitmix64(&state) >> (splitmix64(&state) % 64);
    if (off > ~0ull - kWords) off -= kWords;  // keep philox_draw(off + i) in range
    plain(seed, sub, off);
  }
  // Counter wraps. Block 2 + (2^64 - 4) = 2^64 - 2: the stream runs off the low
  // 64 bits during the draws (curand()'s own increment carries into z, w).
  // Block 6 + (2^64 - 4) = 2 + 2^64: skipahead itself carries into the
  // subsequence words.
  for (uint64_t sub : {0ull, 5ull, 0xffffffffull, ~0ull})
    for (uint32_t w = 0; w < 4; ++w) {
      cases.push_back({0x5eedull, sub, 8 + w, 1, sub, ~0ull - 1, w});
      cases.push_back({0x5eedull, sub, 24 + w, 1, sub + 1, 2, w});
    }
  return cases;
}

// One thread per case: out_curand / out_stream / out_draw: (n_cases, kWords).
__global__ void philox_check_kernel(const PhiloxCase* cases, int n_cases, uint32_t* out_curand,
                                    uint32_t* out_stream, uint32_t* out_draw) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= n_cases) return;
  const PhiloxCase pc = cases[c];

  curandStatePhilox4_32_10_t st;
  curand_init(pc.seed, pc.subsequence, pc.offset, &st);
  if (pc.wrap_low64)
    for (int k = 0; k < 4; ++k) skipahead(~0ull - 3, &st);
  for (int i = 0; i < kWords; ++i) out_curand[c * kWords + i] = curand(&st);

  PhiloxStream s;
  if (pc.wrap_low64)
    s.init_at(philox_key(pc.seed), philox_counter(pc.expect_subsequence, pc.expect_block), pc.expect_word);
  else
    s.init(pc.seed, pc.subsequence, pc.offset);
  for (int i = 0; i < kWords; ++i) out_stream[c * kWords + i] = s.next();

  // philox_draw reaches only positions curand_init can name; for the wrap
  // cases the stream words stand in (checked against curand above).
  for (int i = 0; i < kWords; ++i)
    out_draw[c * kWords + i] =
        pc.wrap_low64 ? out_stream[c * kWords + i] : philox_draw(pc.seed, pc.subsequence, pc.offset + i);
}

bool cuda_ok(cudaError_t e, const char* what, std::string* why) {
  if (e == cudaSuccess) return true;
  if (why) *why = std::string(what) + ": " + cudaGetErrorString(e);
  return false;
}

std::string describe(const PhiloxCase& pc, int word, const char* which, uint32_t got, uint32_t want) {
  std::ostringstream o;
  o << which << " mismatch at seed=0x" << std::hex << pc.seed << " subsequence=0x" << pc.subsequence
    << " offset=0x" << pc.offset << (pc.wrap_low64 ? " (after 4 x skipahead(2^64-4))" : "") << " word "
    << std::dec << word << ": got 0x" << std::hex << got << ", want 0x" << want;
  return o.str();
}

}  // namespace

bool cuda_philox_matches_curand(std::string* why) {
  const std::vector<PhiloxCase> cases = philox_cases();
  const int n = static_cast<int>(cases.size());
  const size_t words = static_cast<size_t>(n) * kWords;

  PhiloxCase* d_cases = nullptr;
  uint32_t* d_out = nullptr;  // three (n, kWords) arrays back to back
  bool ok = cuda_ok(cudaMalloc(&d_cases, n * sizeof(PhiloxCase)), "cudaMalloc", why) &&
            cuda_ok(cudaMalloc(&d_out, 3 * words * sizeof(uint32_t)), "cudaMalloc", why) &&
            cuda_ok(cudaMemcpy(d_cases, cases.data(), n * sizeof(PhiloxCase), cudaMemcpyHostToDevice),
                    "cudaMemcpy to device", why);
  std::vector<uint32_t> out(3 * words);
  if (ok) {
    const int threads = 128;
    philox_check_kernel<<<(n + threads - 1) / threads, threads>>>(d_cases, n, d_out, d_out + words,
                                                                  d_out + 2 * words);
    ok = cuda_ok(cudaGetLastError(), "philox_check_kernel launch", why) &&
         cuda_ok(cudaMemcpy(out.data(), d_out, 3 * words * sizeof(uint32_t), cudaMemcpyDeviceToHost),
                 "cudaMemcpy to host", why);
  }
  cudaFree(d_cases);
  cudaFree(d_out);
  if (!ok) return false;

  const uint32_t* curand_words = out.data();
  const uint32_t* stream_words = curand_words + words;
  const uint32_t* draw_words = curand_words + 2 * words;
  for (int c = 0; c < n; ++c) {
    const PhiloxCase& pc = cases[c];
    PhiloxStream host;
    if (pc.wrap_low64)
      host.init_at(philox_key(pc.seed), philox_counter(pc.expect_subsequence, pc.expect_block),
                   pc.expect_word);
    else
      host.init(pc.seed, pc.subsequence, pc.offset);
    for (int i = 0; i < kWords; ++i) {
      const size_t k = static_cast<size_t>(c) * kWords + i;
      const uint32_t want = curand_words[k];
      const uint32_t h = host.next();
      const char* bad = stream_words[k] != want ? "device PhiloxStream vs curand"
                        : draw_words[k] != want ? "device philox_draw vs curand"
                        : h != want             ? "host PhiloxStream vs curand"
                                                : nullptr;
      if (bad) {
        uint32_t got = stream_words[k] != want ? stream_words[k] : draw_words[k] != want ? draw_words[k] : h;
        if (why) *why = describe(pc, i, bad, got, want);
        return false;
      }
    }
  }
  return true;
}

}  // namespace emu
