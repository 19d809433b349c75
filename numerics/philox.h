// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel Random Numbers: As Easy
// as 1, 2, 3", SC'11), the counter-based generator behind every random draw in
// emutrain (docs/contract.md section 6).
//
// Why Philox: it is what cuRAND calls CURAND_RNG_PSEUDO_PHILOX4_32_10, so a
// CUDA kernel may call curand() and the CPU backend these functions and both
// see the same bits; and it is a pure function of (counter, key), so a draw
// keyed by (seed, stream, element index) needs no state and no ordering
// between threads or loop iterations.
//
// Three layers, each used by the next:
//   philox4x32_10(ctr, key)  the Random123 bijection, checked against its
//                            published known-answer vectors;
//   PhiloxStream             cuRAND's curand_init(seed, subsequence, offset)
//                            + curand() sequence, word for word;
//   philox_draw(seed, stream, index)
//                            one element of that sequence, computed directly:
//                            the keyed draw that every emulated random choice
//                            (init, dropout, shuffling, stochastic rounding,
//                            masks, fault sites) uses.
//
// Integer arithmetic only (32x32->64 multiplies, xor, add), so host and device
// compilers agree bit for bit without any flags.
#pragma once

#include "numerics/hd.h"

namespace emu {

// 128-bit counter as four 32-bit words, v[0] least significant; the layout of
// Random123's philox4x32_ctr_t and of cuRAND's uint4 ctr (x, y, z, w).
struct Philox4x32Counter {
  uint32_t v[4];
};
// 64-bit key as two 32-bit words, v[0] = low half of a 64-bit seed.
struct Philox4x32Key {
  uint32_t v[2];
};

// Round multipliers and Weyl key increments (golden ratio, sqrt(3) - 1), as in
// Random123's philox.h and cuRAND's curand_philox4x32_x.h.
constexpr uint32_t kPhiloxM4x32_0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM4x32_1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW32_0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW32_1 = 0xBB67AE85u;

// One Philox S-box round: two 32x32->64 products, high halves xored into the
// other words with the round key. (ctr, key) -> permuted ctr.
// A plain 64-bit product gives the same bits as __umulhi on the device.
EMU_HD Philox4x32Counter philox4x32_round(Philox4x32Counter c, Philox4x32Key k) {
  uint64_t p0 = static_cast<uint64_t>(kPhiloxM4x32_0) * c.v[0];
  uint64_t p1 = static_cast<uint64_t>(kPhiloxM4x32_1) * c.v[2];
  Philox4x32Counter r;
  r.v[0] = static_cast<uint32_t>(p1 >> 32) ^ c.v[1] ^ k.v[0];
  r.v[1] = static_cast<uint32_t>(p1);
  r.v[2] = static_cast<uint32_t>(p0 >> 32) ^ c.v[3] ^ k.v[1];
  r.v[3] = static_cast<uint32_t>(p0);
  return r;
}

// Random123 philox4x32_10: ten rounds, the key bumped by the Weyl constants
// between rounds (not before the first, not after the last).
// (counter, key) -> four output words, a bijection of the counter.
EMU_HD Philox4x32Counter philox4x32_10(Philox4x32Counter ctr, Philox4x32Key key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.v[0] += kPhiloxW32_0;
      key.v[1] += kPhiloxW32_1;
    }
    ctr = philox4x32_round(ctr, key);
  }
  return ctr;
}

// The key cuRAND derives from a 64-bit seed: low word first.
EMU_HD Philox4x32Key philox_key(uint64_t seed) {
  Philox4x32Key k;
  k.v[0] = static_cast<uint32_t>(seed);
  k.v[1] = static_cast<uint32_t>(seed >> 32);
  return k;
}

// The counter of output block `block` (4 words each) of subsequence
// `subsequence`: cuRAND keeps the block number in the low 64 bits (x, y) and
// the subsequence in the high 64 bits (z, w), so each subsequence is 2^66
// words long.
EMU_HD Philox4x32Counter philox_counter(uint64_t subsequence, uint64_t block) {
  Philox4x32Counter c;
  c.v[0] = static_cast<uint32_t>(block);
  c.v[1] = static_cast<uint32_t>(block >> 32);
  c.v[2] = static_cast<uint32_t>(subsequence);
  c.v[3] = static_cast<uint32_t>(subsequence >> 32);
  return c;
}

// ctr + 1 modulo 2^128, carrying through all four words: the step cuRAND takes
// after handing out the fourth word of a block (Philox_State_Incr). Running off
// the end of a subsequence therefore continues at offset 0 of the next one.
EMU_HD Philox4x32Counter philox_counter_increment(Philox4x32Counter c) {
  for (int i = 0; i < 4; ++i) {
    if (++c.v[i] != 0) break;
  }
  return c;
}

// cuRAND's curandStatePhilox4_32_10_t stream, restricted to curand_init and
// curand(): after init(seed, subsequence, offset), the n-th next() returns the
// same 32-bit word as the n-th curand() after
// curand_init(seed, subsequence, offset, &state) in device code.
// Exists for code that consumes many consecutive words from one position (and
// to pin down the cuRAND semantics that philox_draw shortcuts).
struct PhiloxStream {
  Philox4x32Key key;
  Philox4x32Counter ctr;  // counter of the block being handed out
  Philox4x32Counter out;  // philox4x32_10(ctr, key)
  uint32_t word;          // index in out of the next word to return, 0..3

  // Position at an arbitrary counter and word (0..3). init() is the cuRAND
  // entry point; this one also reaches counters init() cannot (a block number
  // near 2^64), which tests use to check the carry out of the low 64 bits.
  EMU_HD void init_at(Philox4x32Key k, Philox4x32Counter c, uint32_t w) {
    key = k;
    ctr = c;
    out = philox4x32_10(ctr, key);
    word = w & 3;
  }

  // curand_init(seed, subsequence, offset): key = seed; subsequence added to
  // the high 64 counter bits; offset / 4 added to the low 64 bits, and
  // offset % 4 words of that block skipped. From a zero counter neither
  // addition can carry (offset / 4 < 2^62), so plain assignment is exact.
  EMU_HD void init(uint64_t seed, uint64_t subsequence, uint64_t offset) {
    init_at(philox_key(seed), philox_counter(subsequence, offset >> 2), static_cast<uint32_t>(offset & 3));
  }

  // curand(): the next word; after the fourth word of a block the counter
  // steps by one (with carry through all 128 bits) and a new block is made.
  EMU_HD uint32_t next() {
    uint32_t r = out.v[word];
    if (++word == 4) {
      ctr = philox_counter_increment(ctr);
      out = philox4x32_10(ctr, key);
      word = 0;
    }
    return r;
  }
};

// The keyed draw: word `index` of subsequence `stream` under key `seed`, i.e.
// the first curand() after curand_init(seed, stream, index), in one Philox
// call. (seed, stream, index) -> 32 random bits. Callers pick `stream` per
// purpose (which tensor, which kind of choice) and `index` per element, so a
// draw never depends on thread id, launch layout or loop order.
EMU_HD uint32_t philox_draw(uint64_t seed, uint64_t stream, uint64_t index) {
  return philox4x32_10(philox_counter(stream, index >> 2), philox_key(seed)).v[index & 3];
}

}  // namespace emu
