// The NCCL communicator (docs/parallel.md): GPU ranks, one GPU per rank chosen
// by local rank, over the group of a bootstrap communicator (MPI for several
// ranks, the LocalCommunicator for one). NCCL is loaded at run time
// (backends/cuda/shared_library.h: $EMUTRAIN_NCCL, the loader's path, the CUDA
// toolkit, PyTorch's nvidia-nccl wheel), so neither the build nor the GPU
// bundle carries it. `emutrain comm-check --comm nccl` runs it.
#pragma once

#include <memory>
#include <string>

#include "core/comm.h"

namespace emu {

// Whether this build has the NCCL communicator (CUDA with nccl.h at configure time).
bool nccl_built();

// The NCCL communicator over bootstrap's ranks: rank 0's ncclUniqueId goes to
// every rank through bootstrap->broadcast, then ncclCommInitRank. Throws
// std::runtime_error naming what is missing (no NCCL library, no GPU, a build
// without NCCL) or the NCCL call that failed.
std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator> bootstrap);

// "libnccl.so.2 at PATH, NCCL 2.28.3", or why it could not be loaded.
std::string nccl_library_description();

}  // namespace emu
