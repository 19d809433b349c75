// The MPI communicator (OpenMPI): CPU ranks started by mpirun. Built into the
// emutrain_mpi library when CMake finds MPI (option EMUTRAIN_MPI).
//
// Collectives are point-to-point exchanges polled against the timeout
// (MPI_Isend/MPI_Irecv + MPI_Test): allgather receives each rank's part into
// its own slot (rank order), so the result never depends on message arrival
// order, and a rank that does not arrive within timeout() is named in the
// abort message. MPI errors return codes (MPI_ERRORS_RETURN) and abort the job
// with a message naming the rank.
#pragma once

#include <memory>

#include "core/comm.h"

namespace emu {

// True when this process was started by mpirun/mpiexec (OMPI_COMM_WORLD_SIZE or PMI_SIZE set).
bool started_by_mpi();

// Initialises MPI (once; finalised at exit) and returns the communicator over MPI_COMM_WORLD.
// Throws when emutrain was built without MPI.
std::shared_ptr<Communicator> make_mpi_communicator();

// Whether this build has the MPI communicator.
bool mpi_available();

}  // namespace emu
