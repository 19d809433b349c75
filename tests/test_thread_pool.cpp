// The CPU thread pool (numerics/parallel_for.h): its loops cover every index
// once in the documented parts, nest and run from several threads without
// deadlock, carry exceptions out, and keep their threads between calls; and
// representative ops of the CPU backend and the bulk rounding give the same
// bytes with 1, 2 and 3 threads (compared with memcmp against the 1-thread run).
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "numerics/activations.h"
#include "numerics/bulk.h"
#include "numerics/format_spec.h"
#include "numerics/fp32_ops.h"
#include "numerics/parallel_for.h"
#include "numerics/recurrent_cells.h"
#include "tests/test_util.h"

using namespace emu;

namespace {

// ---------------------------------------------------------------------------
// The loops themselves

// How often parallel_for(n, threads, grain) hands each index to its body, and the
// parts it made.
struct Coverage {
  std::vector<int> hits;
  std::vector<std::pair<int64_t, int64_t>> parts;
};

Coverage cover(int64_t n, int threads, int64_t grain) {
  Coverage c;
  c.hits.assign(static_cast<size_t>(n), 0);
  std::mutex m;
  parallel_for(n, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) ++c.hits[static_cast<size_t>(i)];
    const std::lock_guard<std::mutex> lock(m);
    c.parts.emplace_back(lo, hi);
  });
  std::sort(c.parts.begin(), c.parts.end());
  return c;
}

// The kernel's id of the calling thread: unlike std::thread::id, never reused by
// a thread started later.
long kernel_tid() { return static_cast<long>(syscall(SYS_gettid)); }

// ---------------------------------------------------------------------------
// Ops under 1, 2 and 3 threads

// Sets the CPU backend's thread count for one scope.
struct BackendThreads {
  int saved = cpu_backend().threads();
  explicit BackendThreads(int n) { cpu_backend().set_threads(n); }
  ~BackendThreads() { cpu_backend().set_threads(saved); }
};

MacPolicy mac_policy(const char* mul, const char* acc, const char* out) {
  MacPolicy p;
  p.mul_exact = std::string(mul) == "exact";
  if (!p.mul_exact) p.mul = parse_format(mul);
  p.acc = parse_format(acc);
  p.out = parse_format(out);
  return p;
}

// The bytes of every output tensor, in order.
std::vector<unsigned char> bytes_of(std::initializer_list<const Tensor*> outputs) {
  std::vector<unsigned char> b;
  for (const Tensor* t : outputs) {
    const Tensor c = t->contiguous();
    const auto* p = reinterpret_cast<const unsigned char*>(c.data());
    b.insert(b.end(), p, p + c.numel() * sizeof(float));
  }
  return b;
}

// Runs op under 1, 2 and 3 threads of the CPU backend and checks that 2 and 3
// give the 1-thread bytes.
void check_thread_independent(const char* name, const std::function<std::vector<unsigned char>()>& op) {
  std::vector<unsigned char> one;
  for (int threads : {1, 2, 3}) {
    INFO(name << " with " << threads << " threads");
    const BackendThreads guard(threads);
    const std::vector<unsigned char> got = op();
    REQUIRE(!got.empty());
    if (threads == 1) {
      one = got;
      continue;
    }
    REQUIRE(got.size() == one.size());
    CHECK(std::memcmp(got.data(), one.data(), got.size()) == 0);
  }
}

}  // namespace

TEST_CASE("parallel_for cuts [0, n) into the documented contiguous parts", "[threads]") {
  SECTION("min(threads, n / grain) parts, part w = [n w / t, n (w + 1) / t)") {
    const Coverage c = cover(100, 3, 10);
    REQUIRE(c.parts.size() == 3);
    CHECK(c.parts[0] == std::make_pair<int64_t, int64_t>(0, 33));
    CHECK(c.parts[1] == std::make_pair<int64_t, int64_t>(33, 66));
    CHECK(c.parts[2] == std::make_pair<int64_t, int64_t>(66, 100));
    for (int h : c.hits) CHECK(h == 1);
  }
  SECTION("fewer parts when the grain asks for it, one below two grains") {
    CHECK(cover(100, 3, 40).parts.size() == 2);
    CHECK(cover(100, 3, 60).parts.size() == 1);
    CHECK(cover(5, 8, 1).parts.size() == 5);
  }
  SECTION("threads 0 means every hardware thread") {
    const unsigned h = std::thread::hardware_concurrency();
    CHECK(resolve_threads(0) == static_cast<int>(h ? h : 1));
    CHECK(resolve_threads(-1) == resolve_threads(0));
    CHECK(resolve_threads(5) == 5);
    CHECK(cover(1000, 0, 1).parts.size() == static_cast<size_t>(resolve_threads(0)));
  }
  SECTION("n = 0 calls nothing") { CHECK(cover(0, 3, 1).parts.empty()); }
}

TEST_CASE("parallel_tasks runs every task once, however many threads", "[threads]") {
  for (int threads : {1, 2, 3, 7}) {
    std::vector<std::atomic<int>> hits(1000);
    parallel_tasks(1000, threads, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
    for (auto& h : hits) CHECK(h.load() == 1);
  }
}

TEST_CASE("nested loops and loops from several threads finish with every index once", "[threads]") {
  // A loop inside a part of a loop, as for_groups and run_heads may do, three levels deep.
  std::vector<std::atomic<int>> hits(4 * 5 * 6);
  parallel_for(4, 4, 1, [&](int64_t a0, int64_t a1) {
    for (int64_t a = a0; a < a1; ++a)
      parallel_for(5, 3, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b)
          parallel_tasks(6, 2,
                         [&](int64_t c) { hits[static_cast<size_t>((a * 5 + b) * 6 + c)].fetch_add(1); });
      });
  });
  for (auto& h : hits) CHECK(h.load() == 1);

  // Threads of the caller's own (like the data loader's workers) each running loops at once.
  std::vector<std::atomic<int>> sums(4);
  std::vector<std::thread> callers;
  for (int w = 0; w < 4; ++w)
    callers.emplace_back([&sums, w] {
      for (int round = 0; round < 20; ++round)
        parallel_for(3000, 3, 1,
                     [&](int64_t lo, int64_t hi) { sums[w].fetch_add(static_cast<int>(hi - lo)); });
    });
  for (std::thread& t : callers) t.join();
  for (auto& s : sums) CHECK(s.load() == 20 * 3000);
}

TEST_CASE("an exception thrown in a part comes out of the loop", "[threads]") {
  std::atomic<int> done{0};
  CHECK_THROWS_AS(parallel_for(300, 3, 1,
                               [&](int64_t lo, int64_t) {
                                 done.fetch_add(1);
                                 if (lo >= 100) throw std::runtime_error("part failed");
                               }),
                  std::runtime_error);
  CHECK(done.load() == 3);  // every part ran to its end before the loop rethrew
  // The pool still works afterwards.
  CHECK(cover(300, 3, 1).parts.size() == 3);
}

TEST_CASE("a loop returns only after every part has ended (short and long parts)", "[threads]") {
  // The caller watches for the workers' last parts for a while, then sleeps:
  // parts that end within that watch (none, 1 us), and after it (20 ms, far
  // past the watch's tens of microseconds), must all have ended on return.
  for (int us : {0, 1, 20000}) {
    for (int call = 0; call < 20; ++call) {
      std::atomic<int> ended{0};
      parallel_parts(3, [&](int w) {
        if (w != 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
        ended.fetch_add(1);
      });
      INFO("parts of " << us << " us, call " << call);
      REQUIRE(ended.load() == 3);
      if (us == 20000 && call == 2) break;  // three slow calls are enough
    }
  }
}

TEST_CASE("accumulate adds g into acc one binary32 addition per element (views included)", "[threads]") {
  // The contiguous, non-overlapping case runs a threaded loop; views that
  // overlap or have strides copy g first. Each against a literal loop over a
  // copy of g (the definition: acc_i = fp32(acc_i + g_i), NaN canonical).
  CpuBackend& cpu = cpu_backend();
  const int threads_before = cpu.threads();
  const int64_t n = 40000;  // more than two threads' grain
  std::vector<float> g0 = test::rich_tensor({n + 8}, 21).to_vector();
  std::vector<float> a0 = test::rich_tensor({n + 8}, 22).to_vector();
  for (int64_t i : {int64_t{0}, int64_t{12345}, n - 1}) {  // Inf - Inf: x86 gives -NaN, canonical is +NaN
    a0[i] = std::numeric_limits<float>::infinity();
    g0[i] = -std::numeric_limits<float>::infinity();
  }
  auto expect = [](std::vector<float> acc, const std::vector<float>& g) {
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = fp32::add(acc[i], g[i]);
    return acc;
  };
  for (int threads = 1; threads <= 3; ++threads) {
    cpu.set_threads(threads);
    INFO("threads " << threads);
    {  // separate contiguous tensors
      Tensor acc = Tensor::from_vector({n}, std::vector<float>(a0.begin(), a0.begin() + n));
      const Tensor g = Tensor::from_vector({n}, std::vector<float>(g0.begin(), g0.begin() + n));
      const std::vector<float> want = expect(acc.to_vector(), g.to_vector());
      cpu.accumulate(acc, g);
      CHECK(std::memcmp(acc.to_vector().data(), want.data(), n * sizeof(float)) == 0);
    }
    {  // the same tensor: acc += acc
      Tensor acc = Tensor::from_vector({n}, std::vector<float>(a0.begin(), a0.begin() + n));
      const std::vector<float> want = expect(acc.to_vector(), acc.to_vector());
      cpu.accumulate(acc, acc);
      CHECK(std::memcmp(acc.to_vector().data(), want.data(), n * sizeof(float)) == 0);
    }
    {  // overlapping views of one buffer, g five elements past acc
      std::vector<float> buf = a0;
      Tensor acc = Tensor::from_blob(buf.data(), {n}, {1});
      const Tensor g = Tensor::from_blob(buf.data() + 5, {n}, {1});
      const std::vector<float> want = expect(acc.to_vector(), g.to_vector());
      cpu.accumulate(acc, g);
      CHECK(std::memcmp(buf.data(), want.data(), n * sizeof(float)) == 0);
    }
    {  // a strided acc (every other element of a buffer)
      std::vector<float> buf = a0;
      Tensor acc = Tensor::from_blob(buf.data(), {n / 2}, {2});
      const Tensor g = Tensor::from_vector({n / 2}, std::vector<float>(g0.begin(), g0.begin() + n / 2));
      const std::vector<float> want = expect(acc.to_vector(), g.to_vector());
      cpu.accumulate(acc, g);
      CHECK(std::memcmp(acc.to_vector().data(), want.data(), n / 2 * sizeof(float)) == 0);
      int64_t touched = 0;  // the elements between stay as they were
      for (int64_t i = 0; i < n / 2; ++i) touched += std::memcmp(&buf[2 * i + 1], &a0[2 * i + 1], 4) != 0;
      CHECK(touched == 0);
    }
  }
  cpu.set_threads(threads_before);
}

TEST_CASE("the pool keeps its threads between loops", "[threads]") {
  // The old loops started fresh std::threads on every call: 10 calls of 3 parts each would have run
  // on 20 new kernel threads besides this one. The pool starts none after the first such loop and
  // runs every part on this thread or one of its workers.
  parallel_parts(3, [](int) {});
  const int workers = pool_workers();
  CHECK(workers >= 2);
  std::set<long> tids;
  std::mutex m;
  for (int call = 0; call < 10; ++call)
    parallel_parts(3, [&](int) {
      const long tid = kernel_tid();
      const std::lock_guard<std::mutex> lock(m);
      tids.insert(tid);
    });
  CHECK(tids.count(kernel_tid()) == 1);  // part 0 runs in the calling thread
  CHECK(pool_workers() == workers);      // no thread started
  CHECK(tids.size() <= static_cast<size_t>(1 + workers));
  CHECK(tids.size() < 21);
}

TEST_CASE("CPU ops give the same bytes with 1, 2 and 3 threads", "[threads]") {
  CpuBackend& cpu = cpu_backend();
  const DrawKey key{12345, 678};

  SECTION("gemm: a fast path and the generic path (stochastic accumulation)") {
    const Tensor a = test::rich_tensor({96, 200}, 1), b = test::rich_tensor({200, 80}, 2);
    const Tensor bias = test::rich_tensor({80}, 3);
    for (const MacPolicy& p :
         {mac_policy("e5m10", "e5m10", "e5m10"), mac_policy("bf16", "e5m10:sr", "bf16")}) {
      check_thread_independent("gemm", [&] {
        Tensor c = Tensor::zeros({96, 80});
        cpu.gemm(p, a, b, &bias, c, key);
        return bytes_of({&c});
      });
    }
  }

  SECTION("conv2d forward, grad input and grad weight, one group and four groups side by side") {
    for (int groups : {1, 4}) {
      Conv2dParams cp;
      cp.pad_h = cp.pad_w = 1;
      cp.groups = groups;
      const Tensor x = test::rich_tensor({4, 8, 20, 20}, 4), w = test::rich_tensor({8, 8 / groups, 3, 3}, 5);
      const Tensor gy = test::rich_tensor({4, 8, 20, 20}, 6);
      const MacPolicy p = mac_policy("e5m10", "e5m10", "e5m10");
      check_thread_independent("conv2d", [&] {
        Tensor y = Tensor::zeros({4, 8, 20, 20}), gx = Tensor::zeros(x.shape()),
               gw = Tensor::zeros(w.shape());
        cpu.conv2d_forward(p, cp, x, w, nullptr, y, key);
        cpu.conv2d_grad_input(p, cp, gy, w, gx, key);
        cpu.conv2d_grad_weight(p, cp, x, gy, gw, key);
        return bytes_of({&y, &gx, &gw});
      });
    }
  }

  SECTION("element-wise: gelu and add with stochastic rounding") {
    const Tensor x = test::rich_tensor({100003}, 7), z = test::rich_tensor({100003}, 8);
    const Format f = parse_format("bf16:sr");
    check_thread_independent("gelu, add", [&] {
      Tensor y = Tensor::zeros(x.shape()), s = Tensor::zeros(x.shape());
      cpu.activation_forward(Activation::Gelu, FunctionApprox{}, f, x, y, key);
      cpu.elementwise_add(f, x, z, s, key);
      return bytes_of({&y, &s});
    });
  }

  SECTION("reductions: softmax rows and batch-norm statistics") {
    const Tensor x = test::rich_tensor({1500, 64}, 9), xb = test::rich_tensor({16, 12, 300}, 10);
    const MacPolicy p = mac_policy("exact", "e5m10:sr", "e5m10");
    check_thread_independent("softmax, batch_norm_stats", [&] {
      Tensor y = Tensor::zeros(x.shape());
      Tensor mean = Tensor::zeros({12}), var = Tensor::zeros({12}), var_u = Tensor::zeros({12});
      cpu.softmax_forward(p, false, x, y, key);
      cpu.batch_norm_stats(p, xb, mean, var, var_u, key);
      return bytes_of({&y, &mean, &var, &var_u});
    });
  }

  SECTION("LSTM forward: threaded gemms and cells at every step") {
    const int64_t N = 48, T = 3, I = 32, H = 128;  // 6144 units = 3 thread tasks per step
    const Tensor x = test::rich_tensor({N, T, I}, 11), h0 = test::rich_tensor({N, H}, 12),
                 c0 = test::rich_tensor({N, H}, 13);
    const Tensor w_ih = test::rich_tensor({4 * H, I}, 14), w_hh = test::rich_tensor({4 * H, H}, 15);
    const MacPolicy p = mac_policy("e5m10", "e5m10", "bf16:sr");
    const Format act = parse_format("e5m10");
    check_thread_independent("lstm_forward", [&] {
      Tensor y = Tensor::zeros({N, T, H}), h_n = Tensor::zeros({N, H}), c_n = Tensor::zeros({N, H});
      Tensor xh = Tensor::zeros({N, T, I + H}), saved = Tensor::zeros({N, T, 6 * H});
      cpu.lstm_forward(p, GateFunctions{}, act, x, h0, c0, w_ih, w_hh, nullptr, nullptr, false, y, h_n, c_n,
                       xh, saved, nullptr, nullptr, key);
      return bytes_of({&y, &h_n, &c_n, &saved});
    });
  }
}

TEST_CASE("bulk quantize and encode give the same bytes with 1, 2 and 3 threads", "[threads]") {
  const Tensor input = test::rich_tensor({100003}, 16);
  const float* in = input.data();
  const size_t n = static_cast<size_t>(input.numel());
  // The IEEE bit kernel (one element per thread at least, so it splits) and the scalar loops of a
  // posit with its default grain; both with stochastic rounding.
  for (const char* spec : {"e4m3:sr", "posit16_1:sr"}) {
    const Format f = parse_format(spec);
    std::vector<float> one(n), got(n);
    std::vector<uint16_t> codes_one(n), codes(n);
    size_t missing_one = 0;
    for (unsigned threads : {1u, 2u, 3u}) {
      INFO(spec << " with " << threads << " threads");
      BulkOptions opt;
      opt.threads = threads;
      opt.min_per_thread = std::string(spec) == "e4m3:sr" ? 1 : 0;
      opt.seed = 99;
      opt.stream = 7;
      REQUIRE(quantize_array_threads(f, n, opt) == threads);
      quantize_array(f, in, got.data(), n, opt);
      const size_t missing = encode_array(parse_format("posit16_1"), in, codes.data(), n, opt);
      if (threads == 1) {
        one = got;
        codes_one = codes;
        missing_one = missing;
        continue;
      }
      CHECK(std::memcmp(got.data(), one.data(), n * sizeof(float)) == 0);
      CHECK(std::memcmp(codes.data(), codes_one.data(), n * sizeof(uint16_t)) == 0);
      CHECK(missing == missing_one);
    }
  }
}
