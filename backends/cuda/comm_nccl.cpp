// The NCCL communicator (backends/cuda/comm_nccl.h). allgather_doubles copies
// each rank's part into a device buffer and runs ncclAllGather: every rank's
// part lands in its own slot (rank order, no floating-point reduction), and the
// caller adds the parts in rank order (core/comm_reduce.h). Byte payloads of
// different sizes, broadcast, barrier and the recipe check go through the
// bootstrap communicator.
#include "backends/cuda/comm_nccl.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

#ifdef EMUTRAIN_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include "backends/cuda/shared_library.h"
#endif

namespace emu {

#ifdef EMUTRAIN_HAVE_NCCL
namespace {

// The NCCL entry points the communicator calls, typed by nccl.h's own declarations.
struct Nccl {
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  std::string description;  // "libnccl.so.2 at PATH, NCCL X.Y.Z" or why it is unusable
  bool usable = false;
};

const Nccl& nccl_api() {
  static const Nccl api = [] {
    Nccl n;
    static SharedLibrary lib("EMUTRAIN_NCCL", "libnccl.so.2", nvidia_library_folders());
    if (!lib.loaded()) {
      n.description = "NCCL not found (" + lib.searched() + ")";
      return n;
    }
    n.get_version = lib.symbol<decltype(n.get_version)>("ncclGetVersion");
    n.get_unique_id = lib.symbol<decltype(n.get_unique_id)>("ncclGetUniqueId");
    n.comm_init_rank = lib.symbol<decltype(n.comm_init_rank)>("ncclCommInitRank");
    n.comm_destroy = lib.symbol<decltype(n.comm_destroy)>("ncclCommDestroy");
    n.comm_abort = lib.symbol<decltype(n.comm_abort)>("ncclCommAbort");
    n.all_gather = lib.symbol<decltype(n.all_gather)>("ncclAllGather");
    n.error_string = lib.symbol<decltype(n.error_string)>("ncclGetErrorString");
    n.usable = n.get_version && n.get_unique_id && n.comm_init_rank && n.comm_destroy && n.comm_abort &&
               n.all_gather && n.error_string;
    if (!n.usable) {
      n.description = "NCCL at " + lib.path() + " lacks an entry point this build calls";
      return n;
    }
    int v = 0;
    n.get_version(&v);
    // NCCL >= 2.9 encodes X.Y.Z as X*10000 + Y*100 + Z.
    n.description =
        fmt::format("libnccl.so.2 at {}, NCCL {}.{}.{}", lib.path(), v / 10000, v / 100 % 100, v % 100);
    return n;
  }();
  return api;
}

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(std::shared_ptr<Communicator> bootstrap)
      : boot_(std::move(bootstrap)), api_(nccl_api()) {
    if (!api_.usable) throw std::runtime_error("comm nccl: " + api_.description + "; set EMUTRAIN_NCCL=FILE");
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      cudaGetLastError();
      throw std::runtime_error(fmt::format("comm nccl: rank {}: no CUDA device visible", boot_->rank()));
    }
    cuda(cudaSetDevice(boot_->local_rank() % devices), "cudaSetDevice");
    ncclUniqueId id{};
    if (boot_->rank() == 0) nccl(api_.get_unique_id(&id), "ncclGetUniqueId");
    std::vector<uint8_t> bytes(reinterpret_cast<uint8_t*>(&id), reinterpret_cast<uint8_t*>(&id) + sizeof id);
    boot_->broadcast(bytes, 0);
    if (bytes.size() != sizeof id)
      throw std::runtime_error(fmt::format("comm nccl: rank {} received a {}-byte ncclUniqueId, expected {}",
                                           boot_->rank(), bytes.size(), sizeof id));
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<uint8_t*>(&id));
    nccl(api_.comm_init_rank(&comm_, boot_->size(), id, boot_->rank()), "ncclCommInitRank");
    cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
    set_timeout(boot_->timeout());
  }
  ~NcclCommunicator() override {
    if (comm_) api_.comm_destroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  int rank() const override { return boot_->rank(); }
  int size() const override { return boot_->size(); }
  int local_rank() const override { return boot_->local_rank(); }
  std::string name() const override { return "nccl"; }

  std::vector<std::vector<uint8_t>> allgather_bytes(const std::vector<uint8_t>& mine) override {
    return boot_->allgather_bytes(mine);
  }
  // The run results: ncclAllGather of equal-count binary64 parts into a device buffer.
  std::vector<double> allgather_doubles(const std::vector<double>& mine) override {
    const size_t n = mine.size(), all = n * static_cast<size_t>(size());
    std::vector<double> out(all);
    if (n == 0) return out;
    double *send = nullptr, *recv = nullptr;
    cuda(cudaMalloc(&send, n * sizeof(double)), "cudaMalloc");
    cuda(cudaMalloc(&recv, all * sizeof(double)), "cudaMalloc");
    cuda(cudaMemcpyAsync(send, mine.data(), n * sizeof(double), cudaMemcpyHostToDevice, stream_),
         "cudaMemcpy");
    nccl(api_.all_gather(send, recv, n, ncclDouble, comm_, stream_), "ncclAllGather");
    cuda(cudaMemcpyAsync(out.data(), recv, all * sizeof(double), cudaMemcpyDeviceToHost, stream_),
         "cudaMemcpy");
    wait_stream("ncclAllGather");
    cudaFree(send);
    cudaFree(recv);
    return out;
  }
  void broadcast(std::vector<uint8_t>& data, int root) override { boot_->broadcast(data, root); }
  void barrier() override { boot_->barrier(); }
  [[noreturn]] void abort(const std::string& message) override {
    if (comm_) api_.comm_abort(comm_);
    comm_ = nullptr;
    boot_->abort(message);
  }

 private:
  void cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess) abort(fmt::format("rank {}: {}: {}", rank(), what, cudaGetErrorString(e)));
  }
  void nccl(ncclResult_t r, const char* what) {
    if (r != ncclSuccess) abort(fmt::format("rank {}: {}: {}", rank(), what, api_.error_string(r)));
  }
  // Polls the stream against the timeout (a peer that never joins the collective would hang it).
  void wait_stream(const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout());
    for (;;) {
      cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) cuda(e, what);
      if (std::chrono::steady_clock::now() > deadline)
        abort(fmt::format("rank {}: timed out after {} s in {} (a rank did not arrive)", rank(), timeout(),
                          what));
    }
  }

  std::shared_ptr<Communicator> boot_;
  const Nccl& api_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

bool nccl_built() { return true; }

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator> bootstrap) {
  return std::make_shared<NcclCommunicator>(std::move(bootstrap));
}

std::string nccl_library_description() { return nccl_api().description; }

#else  // a CUDA build without nccl.h

bool nccl_built() { return false; }

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator>) {
  throw std::runtime_error(
      "comm nccl: this build has no NCCL communicator (nccl.h was not found at configure time)");
}

std::string nccl_library_description() { return "not built (nccl.h was not found at configure time)"; }

#endif

}  // namespace emu
