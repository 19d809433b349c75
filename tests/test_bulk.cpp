// The bulk path (numerics/bulk.h) against the scalar definitions of
// numerics/round.h, compared bit for bit with memcmp: every rounding mode,
// :nosub/:sat/:wrap variants, every family, odd lengths, 1..3 threads (chunk
// boundaries anywhere), stochastic keys, and sweeps over all 2^32 binary32
// inputs for fp16, bf16 and fp8_e4m3.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/bulk.h"
#include "numerics/bulk_ieee.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/sanitized.h"

using namespace emu;

namespace {

uint32_t bits_of(float x) { return float_bits(x); }
float from_bits(uint32_t u) { return bits_float(u); }

// The scalar definition for element i of an array keyed by opt.
float scalar_quantize(const Format& f, float x, const BulkOptions& opt, size_t i) {
  uint32_t rand = is_stochastic(f) ? philox_draw(opt.seed, opt.stream, opt.first_index + i) : 0;
  return quantize(f, x, rand);
}

// Empty if bulk == scalar bit for bit, else a description of the first difference.
std::string compare_quantize(const Format& f, const std::vector<float>& in, const std::vector<float>& out,
                             const BulkOptions& opt) {
  std::vector<float> want(in.size());
  for (size_t i = 0; i < in.size(); ++i) want[i] = scalar_quantize(f, in[i], opt, i);
  if (std::memcmp(want.data(), out.data(), in.size() * sizeof(float)) == 0) return "";
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (bits_of(want[i]) != bits_of(out[i]) && bad++ == 0) first = i;
  char line[200];
  std::snprintf(line, sizeof line,
                "%zu of %zu differ; first: element %zu, x = 0x%08x: scalar 0x%08x, bulk 0x%08x", bad,
                in.size(), first, bits_of(in[first]), bits_of(want[first]), bits_of(out[first]));
  return line;
}

// Binary32 specials and boundaries, both signs.
std::vector<uint32_t> binary32_specials() {
  std::vector<uint32_t> v = {
      0x00000000, 0x00000001, 0x00000002, 0x00000003, 0x003fffff, 0x00400000, 0x00400001, 0x007ffffe,
      0x007fffff, 0x00800000, 0x00800001, 0x00ffffff, 0x01000000, 0x33000000, 0x33000001, 0x337fffff,
      0x33800000, 0x3f800000, 0x3f800001, 0x3fc00000, 0x3fffffff, 0x40000000, 0x7f000000, 0x7f7ffffe,
      0x7f7fffff, 0x7f800000, 0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fc00001, 0x7fffffff,
  };
  size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(v[i] | 0x80000000u);
  return v;
}

// Edge cases of f: every value of the format near each code (or of a sample of
// codes for wide formats), the binary32 neighbours of each, the midpoints to
// the next value and their neighbours: ties, carries into the exponent, the
// subnormal boundary, the largest finite value and overflow.
std::vector<uint32_t> format_edges(const Format& f) {
  std::vector<uint32_t> out;
  const uint64_t codes = f.nbits >= 32 ? (1ull << 32) : (1ull << f.nbits);
  const uint64_t step = codes <= 4096 ? 1 : codes / 1024 + 1;
  auto add_around = [&out](double v) {
    float x = static_cast<float>(v);
    if (static_cast<double>(x) != v) return;  // not a binary32 value
    uint32_t u = bits_of(x);
    for (uint32_t base : {u, u ^ 0x80000000u})
      for (int d = -2; d <= 2; ++d) out.push_back(base + static_cast<uint32_t>(d));
  };
  auto add_code = [&](uint64_t code) {
    double v = decode(f, code), next = decode(f, code + 1);
    if (is_nan(v) || is_inf(v)) return;
    add_around(v);
    if (!is_nan(next) && !is_inf(next)) add_around((v + next) / 2);
  };
  for (uint64_t c = 0; c < codes; c += step) add_code(c);
  for (uint64_t c = codes - 8; c < codes; ++c) add_code(c);  // the top codes
  for (uint64_t c = 0; c < 8 && c < codes; ++c) add_code(c);
  add_around(f.max_finite);
  add_around(f.max_finite * 1.0625);
  add_around(f.min_positive / 2);
  add_around(f.min_positive / 4);
  add_around(f.min_positive * 1.5);
  add_around(f.min_normal);
  return out;
}

// Random bit patterns, half of them with exponents near the format's range.
std::vector<uint32_t> random_patterns(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i & 1) u = (u & 0x807fffffu) | ((90u + static_cast<uint32_t>(rng() % 80)) << 23);
    v[i] = u;
  }
  return v;
}

std::vector<float> as_floats(const std::vector<uint32_t>& bits) {
  std::vector<float> v(bits.size());
  std::memcpy(v.data(), bits.data(), bits.size() * sizeof(float));
  return v;
}

std::vector<float> corpus_for(const Format& f) {
  std::vector<uint32_t> bits = binary32_specials();
  std::vector<uint32_t> edges = format_edges(f);
  std::vector<uint32_t> random = random_patterns(3001, 0x5eed + f.nbits);
  bits.insert(bits.end(), edges.begin(), edges.end());
  bits.insert(bits.end(), random.begin(), random.end());
  if (bits.size() % 2 == 0) bits.push_back(0x3eaaaaabu);  // an odd length
  return as_floats(bits);
}

std::vector<std::string> ieee_bases() {
  return {"fp32",     "tf32",     "bf16",  "fp16",  "fp8_e5m2", "fp8_e4m3", "e4m3",  "fp6_e3m2",
          "fp6_e2m3", "fp4_e2m1", "e1m0",  "e1m1",  "e1m23",    "e2m0",     "e3m1",  "e5m0",
          "e8m0",     "e8m1",     "e8m22", "e7m16", "e6m6",     "e3m10",    "e2m23", "e4m23"};
}
const char* const kModes[] = {"", ":rtz", ":rup", ":rdn", ":rna", ":sr"};

// Every storage format the tests sweep, as spec strings.
std::vector<std::string> all_specs() {
  std::vector<std::string> specs;
  for (const std::string& base : ieee_bases())
    for (const char* mode : kModes)
      for (const char* variant : {"", ":nosub", ":sat", ":nosub:sat"}) specs.push_back(base + mode + variant);
  for (const char* base : {"posit8_0", "posit8_1", "posit8_2", "posit12_1", "posit16_1", "posit16_2"})
    for (const char* mode : kModes) specs.push_back(std::string(base) + mode);
  for (const char* base : {"fixed16_8", "fixed8_4", "int8", "fixed24_12", "fixed12_20", "int16"})
    for (const char* mode : kModes)
      for (const char* variant : {"", ":wrap"}) specs.push_back(std::string(base) + mode + variant);
  return specs;
}

}  // namespace

TEST_CASE("quantize_array equals scalar quantize for every format, mode and thread count") {
  size_t checked = 0;
  for (const std::string& spec : all_specs()) {
    Format f = parse_format(spec);
    std::vector<float> in = corpus_for(f);
    for (unsigned threads = 1; threads <= 3; ++threads) {
      BulkOptions opt;
      opt.threads = threads;
      opt.min_per_thread = 1;  // chunk boundaries inside even the shortest corpus
      opt.seed = 0x1234567890abcdefull;
      opt.stream = 17;
      opt.first_index = 3;  // not a multiple of 4: Philox blocks straddle the start
      std::vector<float> out(in.size());
      quantize_array(f, in.data(), out.data(), in.size(), opt);
      INFO(spec << " with " << threads << " threads, kernel " << quantize_array_kernel(f));
      REQUIRE(compare_quantize(f, in, out, opt) == "");
      ++checked;
    }
  }
  CHECK(checked == all_specs().size() * 3);
}

TEST_CASE("the IEEE bit kernel covers exactly the IEEE-like storage formats") {
  CHECK(std::string(quantize_array_kernel(parse_format("fp16"))) == "ieee-bits");
  CHECK(std::string(quantize_array_kernel(parse_format("e8m23:sr:nosub:sat"))) == "ieee-bits");
  CHECK(std::string(quantize_array_kernel(parse_format("fp4_e2m1:rdn"))) == "ieee-bits");
  CHECK(std::string(quantize_array_kernel(parse_format("posit16_1"))) == "scalar");
  CHECK(std::string(quantize_array_kernel(parse_format("fixed16_8"))) == "scalar");
  // The run-time-mode entry point agrees with the templates.
  Format f = parse_format("e5m2:rup:nosub");
  IeeeBulkParams p = ieee_bulk_params(f);
  for (uint32_t u : random_patterns(1000, 9))
    CHECK(ieee_quantize_bits(p, u, 0) == bits_of(quantize(f, from_bits(u))));
}

TEST_CASE("odd lengths and every chunk boundary give the scalar bits") {
  std::vector<float> corpus = as_floats(random_patterns(4099, 77));
  for (const char* spec :
       {"fp16", "bf16:sr", "fp8_e4m3:rna:sat", "e5m2:sr:nosub", "posit8_1:sr", "fixed8_4:rdn"}) {
    Format f = parse_format(spec);
    for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{15}, size_t{16}, size_t{17},
                     size_t{63}, size_t{1025}, size_t{4099}}) {
      std::vector<float> in(corpus.begin(), corpus.begin() + static_cast<long>(n));
      for (unsigned threads = 1; threads <= 3; ++threads) {
        BulkOptions opt;
        opt.threads = threads;
        opt.min_per_thread = 1;
        opt.seed = 5;
        opt.first_index = n;  // varies the Philox block phase
        std::vector<float> out(n, -1.0f);
        quantize_array(f, in.data(), out.data(), n, opt);
        INFO(spec << " n = " << n << " threads = " << threads);
        REQUIRE(compare_quantize(f, in, out, opt) == "");
      }
    }
  }
}

TEST_CASE("in-place quantize_array and the automatic thread count") {
  std::vector<float> in = as_floats(random_patterns(3 * kBulkMinPerThread + 7, 3));
  Format f = parse_format("fp8_e5m2:sr");
  BulkOptions opt;  // threads = 0: as many as the size and the machine allow
  opt.seed = 99;
  std::vector<float> out(in.size());
  quantize_array(f, in.data(), out.data(), in.size(), opt);
  CHECK(compare_quantize(f, in, out, opt) == "");
  std::vector<float> inplace = in;
  quantize_array(f, inplace.data(), inplace.data(), inplace.size(), opt);
  CHECK(std::memcmp(inplace.data(), out.data(), out.size() * sizeof(float)) == 0);
  CHECK(bulk_thread_count(10, BulkOptions{}) == 1);
  BulkOptions three;
  three.threads = 3;  // at most three, each with at least kBulkMinPerThread elements
  CHECK(bulk_thread_count(1000, three) == 1);
  CHECK(bulk_thread_count(2 * kBulkMinPerThread, three) == 2);
  CHECK(bulk_thread_count(10 * kBulkMinPerThread, three) == 3);
  CHECK(bulk_thread_count(10000, three, 4096) == 2);
  three.min_per_thread = 1;  // exactly three
  CHECK(bulk_thread_count(2, three) == 2);
  CHECK(bulk_thread_count(1000, three) == 3);
  CHECK(quantize_array_threads(parse_format("posit16_1"), 40000, BulkOptions{}) >= 1);
}

TEST_CASE("stochastic rounding depends on the index key only") {
  std::vector<float> in = as_floats(random_patterns(10007, 11));
  for (const char* spec : {"bf16:sr", "fp8_e4m3:sr:sat", "fp4_e2m1:sr", "posit16_1:sr", "fixed16_8:sr"}) {
    INFO(spec);
    Format f = parse_format(spec);
    BulkOptions opt;
    opt.seed = 2024;
    opt.stream = 3;
    opt.first_index = 1000001;
    opt.min_per_thread = 1;
    std::vector<float> ref(in.size());
    opt.threads = 1;
    quantize_array(f, in.data(), ref.data(), in.size(), opt);
    for (unsigned threads = 2; threads <= 3; ++threads) {
      std::vector<float> out(in.size());
      opt.threads = threads;
      quantize_array(f, in.data(), out.data(), in.size(), opt);
      CHECK(std::memcmp(out.data(), ref.data(), ref.size() * sizeof(float)) == 0);
    }
    // Two calls on the halves, keyed by their global index, give the same bits.
    const size_t k = 4321;
    std::vector<float> split(in.size());
    BulkOptions first = opt, second = opt;
    first.threads = second.threads = 2;
    quantize_array(f, in.data(), split.data(), k, first);
    second.first_index = opt.first_index + k;
    quantize_array(f, in.data() + k, split.data() + k, in.size() - k, second);
    CHECK(std::memcmp(split.data(), ref.data(), ref.size() * sizeof(float)) == 0);
    // Another seed or stream changes the bits.
    std::vector<float> other(in.size());
    BulkOptions reseeded = opt;
    reseeded.seed = 2025;
    quantize_array(f, in.data(), other.data(), in.size(), reseeded);
    CHECK(std::memcmp(other.data(), ref.data(), ref.size() * sizeof(float)) != 0);
  }
  // Indices that wrap around 2^64 inside one tile still use philox_draw's keys.
  Format f = parse_format("e5m2:sr");
  BulkOptions wrap;
  wrap.seed = 7;
  wrap.first_index = UINT64_MAX - 5;
  std::vector<float> small(in.begin(), in.begin() + 40), out(40);
  quantize_array(f, small.data(), out.data(), small.size(), wrap);
  CHECK(compare_quantize(f, small, out, wrap) == "");
}

TEST_CASE("stochastic rounding at the exact carry boundary") {
  // x rounds away iff below32 + draw >= 2^32, where below32 is the dropped bits
  // left-aligned in 32 bits. Find indices whose draw lets the dropped bits of x
  // make the sum exactly 2^32 - 1 (stays) or exactly 2^32 (rounds away).
  for (const char* spec : {"fp8_e4m3:sr", "bf16:sr", "fp16:sr"}) {
    INFO(spec);
    Format f = parse_format(spec);
    const uint32_t drop = static_cast<uint32_t>(23 - f.man_bits);
    const uint32_t below_mask = (1u << (32 - drop)) - 1;  // bits of ~draw that x cannot reach
    BulkOptions opt;
    opt.seed = 77;
    opt.stream = 5;
    int found = 0;
    for (uint64_t index = 0; found < 6; ++index) {
      const uint32_t complement = ~philox_draw(opt.seed, opt.stream, index);
      const uint32_t dropped = complement >> (32 - drop);
      if ((complement & below_mask) != 0 || dropped == 0 || dropped + 1 >= (1u << drop)) continue;
      ++found;
      opt.first_index = index;
      const uint32_t kept = 0x3f900000u & ~((1u << drop) - 1);  // 1.125, a value of every format here
      for (uint32_t extra : {0u, 1u}) {                         // sum 2^32 - 1: truncate; 2^32: round away
        float x = from_bits(kept | (dropped + extra)), y = 0;
        quantize_array(f, &x, &y, 1, opt);
        CHECK(bits_of(y) == bits_of(scalar_quantize(f, x, opt, 0)));
        CHECK(bits_of(y) == (extra ? kept + (1u << drop) : kept));
      }
    }
  }
}

namespace {

// Quantizes every binary32 pattern in [lo, hi] (one sign) with the bulk path
// and checks it against the scalar definition:
//  - directly on every `stride`-th pattern, and
//  - at both ends and one inner point of every run of patterns with the same
//    bulk result. Within one sign the patterns are ordered by magnitude and R
//    is monotone (NaN inputs all give the same quiet NaN), so a run whose ends
//    and inner point agree with the scalar R agrees everywhere: every step of
//    R is checked at its exact position.
// Returns the number of scalar comparisons; reports the first mismatch.
size_t sweep_half(const Format& f, uint32_t lo, uint32_t hi, uint32_t stride, std::string* error) {
  const size_t chunk = size_t{1} << 16;  // in + out stay in L2
  const size_t block = 256;
  std::vector<float> in(chunk), out(chunk);
  BulkOptions opt;
  opt.threads = 1;
  size_t checks = 0;
  float first = from_bits(lo), first_out = 0;
  quantize_array(f, &first, &first_out, 1, opt);
  uint32_t run_start = lo, run_value = bits_of(first_out);  // the run being scanned
  auto check = [&](uint32_t u, uint32_t got) {
    ++checks;
    uint32_t want = bits_of(quantize(f, from_bits(u)));
    if (want != got && error->empty()) {
      char line[160];
      std::snprintf(line, sizeof line, "%s: x = 0x%08x: scalar 0x%08x, bulk 0x%08x", format_name(f).c_str(),
                    u, want, got);
      *error = line;
    }
  };
  auto close_run = [&](uint32_t end) {  // the run [run_start, end]
    check(run_start, run_value);
    if (end != run_start) check(end, run_value);
    if (end - run_start > 1) check(run_start + (end - run_start) / 2 + 1, run_value);
  };
  uint64_t next_strided = lo;
  for (uint64_t base = lo; base <= hi; base += chunk) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, uint64_t{hi} - base + 1));
    for (size_t i = 0; i < n; ++i) in[i] = from_bits(static_cast<uint32_t>(base + i));
    quantize_array(f, in.data(), out.data(), n, opt);
    for (; next_strided < base + n; next_strided += stride)
      check(static_cast<uint32_t>(next_strided), bits_of(out[next_strided - base]));
    for (size_t b = 0; b < n; b += block) {
      const size_t e = std::min(n, b + block);
      uint32_t differs = 0;  // a vectorisable test before the element-wise scan
      for (size_t i = b; i < e; ++i) differs |= bits_of(out[i]) ^ run_value;
      if (differs == 0) continue;
      for (size_t i = b; i < e; ++i) {
        const uint32_t r = bits_of(out[i]);
        if (r == run_value) continue;
        const uint32_t u = static_cast<uint32_t>(base + i);
        close_run(u - 1);
        run_start = u;
        run_value = r;
      }
    }
  }
  close_run(hi);
  return checks;
}

}  // namespace

TEST_CASE("all 2^32 binary32 inputs: fp16, bf16, fp8_e4m3") {
  // A sanitizer build (tests/sanitized.h) sweeps fp16 only, over the lowest and
  // the highest 2^18 fractions of every non-negative binary32 exponent (a
  // sixteenth of the non-negative half: every binade's ends, the overflow tie
  // 65520 = 0x477ff000 among them): each format is 2^32 inputs, and the negative
  // half runs the same code on the same memory with the sign bit set. The
  // normal build sweeps every input.
  const std::vector<const char*> specs = test::kSanitized
                                             ? std::vector<const char*>{"fp16"}
                                             : std::vector<const char*>{"fp16", "bf16", "fp8_e4m3"};
  for (const char* spec : specs) {
    Format f = parse_format(spec);
    std::string error;
    size_t checks = 0;
    if (test::kSanitized) {
      for (uint32_t e = 0; e < 256; ++e) {
        const uint32_t binade = e << 23, window = 1u << 18;
        checks += sweep_half(f, binade, binade + window - 1, 1021, &error);
        checks += sweep_half(f, binade + (1u << 23) - window, binade + (1u << 23) - 1, 1021, &error);
      }
    } else {
      checks += sweep_half(f, 0x00000000u, 0x7fffffffu, 1021, &error);
      checks += sweep_half(f, 0x80000000u, 0xffffffffu, 1021, &error);
    }
    INFO(spec << ": " << checks << " scalar comparisons");
    CHECK(error == "");
    CHECK(checks > (uint64_t{1} << (test::kSanitized ? 27 : 32)) / 1021);
  }
}

TEST_CASE("a stride through every binary32 exponent, every mode") {
  // Stride 4099 is odd, so each exponent sees about 2^23/4099 fractions with
  // every low-bit pattern over time; :sr is checked directly here (it is not
  // monotone, so the run check above does not apply to it).
  for (const char* base : {"fp16", "bf16", "fp8_e4m3", "e5m2:nosub", "fp4_e2m1"}) {
    for (const char* mode : kModes) {
      std::string spec = std::string(base) + mode;
      Format f = parse_format(spec);
      std::vector<float> in;
      for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) in.push_back(from_bits(static_cast<uint32_t>(u)));
      BulkOptions opt;
      opt.threads = 2;
      opt.min_per_thread = 1;
      opt.seed = 31;
      std::vector<float> out(in.size());
      quantize_array(f, in.data(), out.data(), in.size(), opt);
      INFO(spec);
      CHECK(compare_quantize(f, in, out, opt) == "");
    }
  }
}

// Direct comparison of all 2^32 inputs, without the monotonicity argument.
// About 100 s per format on one core: run by hand with
//   build/test_bulk "[exhaustive]"
// and EMUTRAIN_EXHAUSTIVE_FORMATS=fp16,e5m2:rtz,... to pick the formats.
TEST_CASE("exhaustive direct comparison", "[.exhaustive]") {
  const char* env = std::getenv("EMUTRAIN_EXHAUSTIVE_FORMATS");
  std::string list = env ? env : "fp16,bf16,fp8_e4m3";
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string spec = list.substr(pos, comma - pos);
    pos = comma + 1;
    if (spec.empty()) continue;
    Format f = parse_format(spec);
    const size_t chunk = size_t{1} << 22;
    std::vector<float> in(chunk), out(chunk);
    BulkOptions opt;
    opt.seed = 8;
    size_t bad = 0;
    std::string first;
    for (uint64_t base = 0; base < (uint64_t{1} << 32); base += chunk) {
      for (size_t i = 0; i < chunk; ++i) in[i] = from_bits(static_cast<uint32_t>(base + i));
      opt.first_index = base;
      quantize_array(f, in.data(), out.data(), chunk, opt);
      std::string e = compare_quantize(f, in, out, opt);
      if (!e.empty() && bad++ == 0) first = e;
    }
    INFO(spec << ": " << first);
    CHECK(bad == 0);
  }
}

namespace {

template <class Code>
void check_decode_encode(const Format& f, const std::vector<uint64_t>& codes) {
  const size_t n = codes.size();
  std::vector<Code> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<Code>(codes[i]);
  std::vector<float> values(n);
  for (unsigned threads = 1; threads <= 3; ++threads) {
    BulkOptions opt;
    opt.threads = threads;
    opt.min_per_thread = 1;
    decode_array(f, in.data(), values.data(), n, opt);
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = static_cast<float>(decode(f, in[i]));
    REQUIRE(std::memcmp(values.data(), want.data(), n * sizeof(float)) == 0);

    // Round trip: encode the decoded values and decode again.
    std::vector<Code> back(n, static_cast<Code>(0x5a));
    size_t missing = encode_array(f, values.data(), back.data(), n, opt);
    size_t want_missing = 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t code = 0;
      bool ok = encode(f, static_cast<double>(values[i]), &code);
      want_missing += ok ? 0 : 1;
      REQUIRE(back[i] == static_cast<Code>(ok ? code : 0));
    }
    CHECK(missing == want_missing);
    CHECK(missing == 0);  // every decoded value has a code
    std::vector<float> again(n);
    decode_array(f, back.data(), again.data(), n, opt);
    REQUIRE(std::memcmp(again.data(), values.data(), n * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("decode_array and encode_array round-trip every code") {
  for (const char* spec : {"fp8_e4m3", "e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "e4m3:nosub", "posit8_2",
                           "int8", "fixed8_4:wrap"}) {
    INFO(spec);
    Format f = parse_format(spec);
    std::vector<uint64_t> all;
    for (uint64_t c = 0; c < (1ull << f.nbits); ++c) all.push_back(c);
    check_decode_encode<uint8_t>(f, all);
    check_decode_encode<uint16_t>(f, all);
    check_decode_encode<uint32_t>(f, all);
    // Fewer codes than the format has: the path without a lookup table.
    std::vector<uint64_t> few(all.begin(), all.begin() + static_cast<long>(all.size() / 2 - 1));
    check_decode_encode<uint8_t>(f, few);
  }
  for (const char* spec : {"fp16", "bf16", "posit16_1", "fixed16_8", "e6m6:nosub"}) {
    INFO(spec);
    Format f = parse_format(spec);
    std::vector<uint64_t> all;
    for (uint64_t c = 0; c < (1ull << f.nbits); ++c) all.push_back(c);
    check_decode_encode<uint16_t>(f, all);
    check_decode_encode<uint32_t>(f, all);
  }
  std::mt19937_64 rng(4);
  for (const char* spec : {"fp32", "tf32", "fixed24_12", "e7m16"}) {
    INFO(spec);
    Format f = parse_format(spec);
    std::vector<uint64_t> some;
    for (int i = 0; i < 20000; ++i) some.push_back(rng() & ((1ull << f.nbits) - 1));
    for (uint64_t c : {0ull, 1ull, (1ull << (f.nbits - 1)) - 1, 1ull << (f.nbits - 1)}) some.push_back(c);
    check_decode_encode<uint32_t>(f, some);
  }
}

TEST_CASE("decode_array ignores code bits above the format's width, as decode does") {
  Format f = parse_format("fp8_e4m3");
  std::vector<uint16_t> codes;
  for (uint32_t c = 0; c < 65536; c += 7) codes.push_back(static_cast<uint16_t>(c));
  std::vector<float> out(codes.size());
  decode_array(f, codes.data(), out.data(), codes.size());
  for (size_t i = 0; i < codes.size(); ++i)
    REQUIRE(bits_of(out[i]) == bits_of(static_cast<float>(decode(f, codes[i]))));
}

TEST_CASE("encode_array counts values without a code and gives them code 0") {
  Format fp8 = parse_format("fp8_e4m3");
  std::vector<float> in = {1.0f, 0.1f, -448.0f, 480.0f, from_bits(0x7fc00000u), 0.0f, -0.0f};
  std::vector<uint8_t> codes(in.size(), 0xaa);
  CHECK(encode_array(fp8, in.data(), codes.data(), in.size()) == 2);  // 0.1 and 480
  CHECK(codes == std::vector<uint8_t>{0x38, 0x00, 0xfe, 0x00, 0x7f, 0x00, 0x80});
  Format fp4 = parse_format("fp4_e2m1");  // no NaN code
  std::vector<float> nan = {from_bits(0x7fc00000u), 6.0f};
  std::vector<uint8_t> fp4_codes(2);
  CHECK(encode_array(fp4, nan.data(), fp4_codes.data(), 2) == 1);
  CHECK(fp4_codes[1] == 0x7);
}

TEST_CASE("bulk calls reject accumulator-only formats and narrow code arrays") {
  std::vector<float> x(4, 1.0f), y(4);
  std::vector<uint8_t> c8(4);
  std::vector<uint16_t> c16(4);
  CHECK_THROWS_AS(quantize_array(parse_format("fp64"), x.data(), y.data(), 4), FormatError);
  CHECK_THROWS_AS(quantize_array(parse_format("posit32_2"), x.data(), y.data(), 4), FormatError);
  CHECK_THROWS_AS(decode_array(parse_format("fp16"), c8.data(), y.data(), 4), std::invalid_argument);
  CHECK_THROWS_AS(encode_array(parse_format("fp32"), x.data(), c16.data(), 4), std::invalid_argument);
  CHECK_NOTHROW(quantize_array(parse_format("fp16"), x.data(), y.data(), 0));
}
