// The MPI communicator (core/comm_mpi.h) under `mpirun -np 3` (this binary
// starts it on itself): allgather hands back every rank's part in rank order
// whatever its size, doubles bit for bit (-0, NaN payloads), agree() names the
// rank whose text differs, broadcast, and a rank that never arrives is named
// in the abort message after the timeout instead of hanging.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "core/comm.h"
#include "core/comm_mpi.h"

using namespace emu;

namespace {

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  REQUIRE(n > 0);
  return std::string(buf, static_cast<size_t>(n));
}

int run_mpi(const std::string& mode, int np, const std::string& err_file) {
  const char* mpirun = std::getenv("EMUTRAIN_MPIRUN");
  REQUIRE(mpirun);
  const std::string cmd = "EMUTRAIN_COMM_CHILD=" + mode + " " + mpirun + " --oversubscribe -np " +
                          std::to_string(np) + " " + self_exe() + " > " + err_file + ".out 2> " + err_file;
  return std::system(cmd.c_str());
}

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("MPI communicator: gather order, agree, broadcast, timeout", "[parallel][mpi]") {
  const char* child = std::getenv("EMUTRAIN_COMM_CHILD");
  if (!child) {
    const std::string err = "/tmp/emutrain_test_comm_" + std::to_string(getpid());
    CHECK(run_mpi("order", 3, err) == 0);
    INFO(slurp(err) << slurp(err + ".out"));
    CHECK(slurp(err + ".out").find("rank 0: all checks passed") != std::string::npos);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(run_mpi("timeout", 3, err) != 0);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string text = slurp(err);
    INFO(text);
    CHECK(text.find("timed out after 2 s in allgather (sizes): rank(s) 2 did not arrive") !=
          std::string::npos);
    CHECK(s < 30);
    std::remove(err.c_str());
    std::remove((err + ".out").c_str());
    return;
  }
  REQUIRE(started_by_mpi());
  set_world(make_mpi_communicator());
  Communicator& w = world();
  REQUIRE(w.size() == 3);
  if (std::string(child) == "timeout") {
    w.set_timeout(2);
    if (w.rank() == 2) std::this_thread::sleep_for(std::chrono::seconds(20));  // never arrives in time
    w.barrier();
    FAIL("the barrier should have aborted the job");
  }
  // Rank r sends r + 1 bytes of value 10 r (rank 1: none, to test empty parts).
  const int r = w.rank();
  std::vector<uint8_t> mine(r == 1 ? 0 : static_cast<size_t>(r + 1), static_cast<uint8_t>(10 * r));
  for (int repeat = 0; repeat < 3; ++repeat) {
    auto parts = w.allgather_bytes(mine);
    REQUIRE(parts.size() == 3);
    for (int q = 0; q < 3; ++q)
      CHECK(parts[static_cast<size_t>(q)] ==
            std::vector<uint8_t>(q == 1 ? 0 : static_cast<size_t>(q + 1), static_cast<uint8_t>(10 * q)));
  }
  const double nan_payload = [] {
    uint64_t u = 0x7ff8000000001234ull;
    double d;
    std::memcpy(&d, &u, 8);
    return d;
  }();
  std::vector<double> d = w.allgather_doubles({static_cast<double>(r) + 0.25, -0.0, nan_payload});
  REQUIRE(d.size() == 9);
  for (int q = 0; q < 3; ++q) {
    CHECK(d[static_cast<size_t>(3 * q)] == q + 0.25);
    CHECK(std::signbit(d[static_cast<size_t>(3 * q + 1)]));
    CHECK(std::memcmp(&d[static_cast<size_t>(3 * q + 2)], &nan_payload, 8) == 0);
  }
  std::vector<uint8_t> b = r == 2 ? std::vector<uint8_t>{7, 8, 9} : std::vector<uint8_t>{};
  w.broadcast(b, 2);
  CHECK(b == std::vector<uint8_t>{7, 8, 9});
  CHECK_NOTHROW(w.agree("recipe", "a: 1\nb: 2\n"));
  CHECK_THROWS_WITH(
      w.agree("recipe", r == 2 ? "a: 1\nb: 3\n" : "a: 1\nb: 2\n"),
      Catch::Contains(
          "the recipe of rank 2 differs from rank 0's: line 2: rank 0 has 'b: 2', it has 'b: 3'"));
  w.barrier();
  if (r == 0) std::printf("rank 0: all checks passed\n");
}
