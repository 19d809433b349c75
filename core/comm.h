// Communicators: how the ranks of a data-parallel run (docs/parallel.md) talk.
//
// Every rank holds one Communicator over the same group. Collectives are
// deterministic: allgather hands back every rank's contribution in rank order
// (never a floating-point reduction whose order a library chooses), so the
// caller adds the parts in a fixed order itself. Every blocking call waits at
// most timeout() seconds; then the job aborts with a message naming the rank(s)
// that did not arrive. Implementations: LocalCommunicator (one process, here),
// the MPI one (core/comm_mpi.h) and the NCCL one (backends/cuda/comm_nccl.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace emu {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;    // rank among the processes of this host (GPU index for device: cuda)
  virtual std::string name() const = 0;  // "local", "mpi", "nccl"

  // Every rank's bytes (sizes may differ), indexed by rank.
  virtual std::vector<std::vector<uint8_t>> allgather_bytes(const std::vector<uint8_t>& mine) = 0;
  // Every rank's `mine` (the same count on every rank, else an error naming the ranks), concatenated
  // in rank order: result[r * mine.size() + i] is rank r's mine[i], bit for bit.
  virtual std::vector<double> allgather_doubles(const std::vector<double>& mine);
  // root's bytes on every rank (data resized to root's size).
  virtual void broadcast(std::vector<uint8_t>& data, int root) = 0;
  virtual void barrier() = 0;
  // All ranks must hold the same `text` (e.g. the resolved recipe): else throws on every rank,
  // naming the first rank that differs from rank 0 and its first differing line.
  void agree(const std::string& what, const std::string& text);
  // Ends the whole job (every rank) with `message` on stderr; never returns.
  [[noreturn]] virtual void abort(const std::string& message) = 0;

  void set_timeout(double seconds) { timeout_s_ = seconds; }
  double timeout() const { return timeout_s_; }

 private:
  double timeout_s_ = 300.0;
};

// One process alone: rank 0 of 1; collectives return the caller's own data.
class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string name() const override { return "local"; }
  std::vector<std::vector<uint8_t>> allgather_bytes(const std::vector<uint8_t>& mine) override {
    return {mine};
  }
  void broadcast(std::vector<uint8_t>&, int) override {}
  void barrier() override {}
  [[noreturn]] void abort(const std::string& message) override;
};

// The process's communicator: a LocalCommunicator until set_world() installs another (the CLI does
// when started by mpirun).
Communicator& world();
void set_world(std::shared_ptr<Communicator> c);

}  // namespace emu
