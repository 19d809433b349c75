// The NCCL communicator: GPU ranks (one GPU per rank, chosen by local rank),
// bootstrapped through MPI: rank 0's ncclUniqueId is broadcast with MPI, then
// ncclCommInitRank. allgather copies each rank's part into a device buffer and
// runs ncclAllGather (every rank's part lands in its own slot: rank order, no
// floating-point reduction); the caller adds the parts in rank order
// (core/comm_reduce.h). Byte payloads of different sizes and the recipe check go
// through MPI. Built with CUDA, NCCL and MPI (EMUTRAIN_HAVE_NCCL); not run on the
// development machine (no GPU): docs/parallel.md.
#if defined(EMUTRAIN_HAVE_NCCL) && defined(EMUTRAIN_HAVE_MPI)
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "core/comm.h"
#include "core/comm_mpi.h"

namespace emu {
namespace {

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(std::shared_ptr<Communicator> mpi) : mpi_(std::move(mpi)) {
    int devices = 0;
    cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    if (devices == 0) mpi_->abort(fmt::format("rank {}: nccl: no CUDA device", mpi_->rank()));
    cuda(cudaSetDevice(mpi_->local_rank() % devices), "cudaSetDevice");
    ncclUniqueId id;
    if (mpi_->rank() == 0) nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::vector<uint8_t> bytes(reinterpret_cast<uint8_t*>(&id), reinterpret_cast<uint8_t*>(&id) + sizeof id);
    mpi_->broadcast(bytes, 0);
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<uint8_t*>(&id));
    nccl(ncclCommInitRank(&comm_, mpi_->size(), id, mpi_->rank()), "ncclCommInitRank");
    cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
  }
  ~NcclCommunicator() override {
    if (comm_) ncclCommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  int local_rank() const override { return mpi_->local_rank(); }
  std::string name() const override { return "nccl"; }

  std::vector<std::vector<uint8_t>> allgather_bytes(const std::vector<uint8_t>& mine) override {
    return mpi_->allgather_bytes(mine);
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
    nccl(ncclAllGather(send, recv, n, ncclDouble, comm_, stream_), "ncclAllGather");
    cuda(cudaMemcpyAsync(out.data(), recv, all * sizeof(double), cudaMemcpyDeviceToHost, stream_),
         "cudaMemcpy");
    wait_stream("ncclAllGather");
    cudaFree(send);
    cudaFree(recv);
    return out;
  }
  void broadcast(std::vector<uint8_t>& data, int root) override { mpi_->broadcast(data, root); }
  void barrier() override { mpi_->barrier(); }
  [[noreturn]] void abort(const std::string& message) override {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    mpi_->abort(message);
    std::abort();  // not reached: the MPI communicator's abort ends the job
  }

 private:
  void cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
      mpi_->abort(fmt::format("rank {}: {}: {}", mpi_->rank(), what, cudaGetErrorString(e)));
  }
  void nccl(ncclResult_t r, const char* what) {
    if (r != ncclSuccess)
      mpi_->abort(fmt::format("rank {}: {}: {}", mpi_->rank(), what, ncclGetErrorString(r)));
  }
  // Polls the stream against the timeout (a peer that never joins the collective would hang it).
  void wait_stream(const char* what) {
    const double deadline = MPI_Wtime() + timeout();
    for (;;) {
      cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) cuda(e, what);
      if (MPI_Wtime() > deadline)
        abort(fmt::format("rank {}: timed out after {} s in {} (a rank did not arrive)", rank(), timeout(),
                          what));
    }
  }

  std::shared_ptr<Communicator> mpi_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

// The NCCL communicator over the MPI world (device: cuda ranks); see the top of this file.
std::shared_ptr<Communicator> make_nccl_communicator() {
  return std::make_shared<NcclCommunicator>(make_mpi_communicator());
}

}  // namespace emu
#endif
