/* An approximate-multiplier plugin for emutrain (docs/approx_mul.md).
 *
 * Build:  cc -O2 -shared -fPIC -o libmitchell_plugin.so mitchell_plugin.c
 * Use:    numerics:
 *           approx_multipliers: {my_mitchell: path/to/libmitchell_plugin.so}
 *           default: {format: fp32, mul: "lut:my_mitchell:e5m7"}
 *
 * The C ABI: one exported function, pure and thread-safe,
 *     float emutrain_approx_mul(float a, float b);
 * emutrain calls it on significands in [1, 2) (and their scaled copies, to
 * check that the product scales with the exponents) and builds a mantissa
 * table from it; its products there must lie in [1, 4).
 *
 * This one is Mitchell's logarithmic multiplier (1962), written independently
 * of emutrain's built-in `mitchell` (tests check that both give the same
 * table): log2(2^e (1 + x)) ~ e + x, so for a = 2^ea (1 + xa), b = 2^eb (1 + xb)
 *     a * b ~ 2^(ea + eb)     (1 + xa + xb)   when xa + xb < 1
 *             2^(ea + eb + 1) (xa + xb)       otherwise.
 */
#include <stdint.h>
#include <string.h>

static uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

/* 2^e as a double, e in the range of normal doubles, by building its bits. */
static double pow2(int e) {
  uint64_t u = (uint64_t)(e + 1023) << 52;
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* |x| = 2^e (1 + frac 2^-23), binary32 subnormals normalised. */
static void split(float x, int* e, double* frac) {
  uint32_t u = bits_of(x) & 0x7fffffffu;
  int biased = (int)(u >> 23);
  uint32_t f = u & 0x7fffffu;
  if (biased == 0) { /* subnormal: f 2^-149 */
    int shift = 0;
    while (!(f & 0x800000u)) {
      f <<= 1;
      ++shift;
    }
    *e = -126 - shift;
    *frac = (double)(f & 0x7fffffu) / 8388608.0;
  } else {
    *e = biased - 127;
    *frac = (double)f / 8388608.0;
  }
}

float emutrain_approx_mul(float a, float b) {
  if (a == 0.0f || b == 0.0f || a != a || b != b || a - a != 0.0f || b - b != 0.0f)
    return a * b; /* zeros, Inf and NaN as IEEE */
  int ea, eb;
  double xa, xb;
  split(a, &ea, &xa);
  split(b, &eb, &xb);
  double s = xa + xb; /* exact: two 23-bit fractions */
  double mag = s < 1.0 ? (1.0 + s) * pow2(ea + eb) : s * pow2(ea + eb + 1);
  int negative = (bits_of(a) ^ bits_of(b)) >> 31;
  return (float)(negative ? -mag : mag);
}
