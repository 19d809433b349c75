#include "core/comm_mpi.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#ifdef EMUTRAIN_HAVE_MPI
#include <mpi.h>
#endif

namespace emu {

bool started_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

#ifdef EMUTRAIN_HAVE_MPI
namespace {

using Clock = std::chrono::steady_clock;

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator() {
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      std::atexit([] {
        int done = 0;
        MPI_Finalized(&done);
        if (!done) MPI_Finalize();
      });
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
          "comm split");
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string name() const override { return "mpi"; }

  std::vector<std::vector<uint8_t>> allgather_bytes(const std::vector<uint8_t>& mine) override {
    // Sizes first (fixed 8 bytes), then the payloads; each from its own rank into its own slot.
    std::vector<uint64_t> sizes(static_cast<size_t>(size_));
    const uint64_t my_size = mine.size();
    exchange(
        "allgather (sizes)", &my_size, sizeof my_size, [&](int r) { return &sizes[static_cast<size_t>(r)]; },
        [&](int) { return sizeof(uint64_t); });
    std::vector<std::vector<uint8_t>> parts(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r)
      parts[static_cast<size_t>(r)].resize(static_cast<size_t>(sizes[static_cast<size_t>(r)]));
    parts[static_cast<size_t>(rank_)] = mine;
    exchange(
        "allgather", mine.data(), mine.size(), [&](int r) { return parts[static_cast<size_t>(r)].data(); },
        [&](int r) { return parts[static_cast<size_t>(r)].size(); });
    return parts;
  }

  void broadcast(std::vector<uint8_t>& data, int root) override {
    std::vector<std::vector<uint8_t>> all = allgather_bytes(rank_ == root ? data : std::vector<uint8_t>());
    data = all[static_cast<size_t>(root)];
  }

  void barrier() override { allgather_bytes({}); }

  [[noreturn]] void abort(const std::string& message) override {
    std::fflush(stdout);
    std::fprintf(stderr, "emutrain: %s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    std::_Exit(2);
  }

 private:
  void check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    abort(fmt::format("rank {}: MPI error in {}: {}", rank_, what,
                      std::string(text, static_cast<size_t>(len))));
  }

  // Sends `bytes` of `mine` to every other rank and receives rank r's part into recv(r) (recv_bytes(r)
  // bytes), polling until all complete or the timeout passes (then aborts naming the missing ranks).
  template <class Recv, class RecvBytes>
  void exchange(const char* what, const void* mine, size_t bytes, Recv recv, RecvBytes recv_bytes) {
    const int tag = static_cast<int>(seq_++ % 30000);
    std::vector<MPI_Request> sends, recvs(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request q;
      check(MPI_Isend(mine, static_cast<int>(bytes), MPI_BYTE, r, tag, MPI_COMM_WORLD, &q), what);
      sends.push_back(q);
      check(MPI_Irecv(recv(r), static_cast<int>(recv_bytes(r)), MPI_BYTE, r, tag, MPI_COMM_WORLD,
                      &recvs[static_cast<size_t>(r)]),
            what);
    }
    const Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout()));
    int spins = 0;
    for (;;) {
      bool all = true;
      for (int r = 0; r < size_; ++r) {
        MPI_Request& q = recvs[static_cast<size_t>(r)];
        if (q == MPI_REQUEST_NULL) continue;
        int flag = 0;
        check(MPI_Test(&q, &flag, MPI_STATUS_IGNORE), what);
        if (!flag) all = false;
      }
      if (all) break;
      if (Clock::now() > deadline) {
        std::string missing;
        for (int r = 0; r < size_; ++r)
          if (recvs[static_cast<size_t>(r)] != MPI_REQUEST_NULL)
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        abort(
            fmt::format("rank {}: timed out after {} s in {}: rank(s) {} did not arrive (parallel.timeout_s)",
                        rank_, timeout(), what, missing));
      }
      if (++spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(spins > 100000 ? 1000 : 50));
    }
    check(MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE), what);
  }

  int rank_ = 0, size_ = 1, local_rank_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace

std::shared_ptr<Communicator> make_mpi_communicator() { return std::make_shared<MpiCommunicator>(); }
bool mpi_available() { return true; }

#else

std::shared_ptr<Communicator> make_mpi_communicator() {
  throw std::runtime_error("this emutrain was built without MPI (install libopenmpi-dev and reconfigure)");
}
bool mpi_available() { return false; }

#endif

}  // namespace emu
