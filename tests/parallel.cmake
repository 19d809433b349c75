# Data-parallel training (docs/parallel.md): the rank-order combination of run results (no MPI
# needed), and, when mpirun was found, the MPI communicator's gather order and `mpirun -np N`
# training bit-identical to the single process computing the same chunked reductions.
emutrain_test(test_parallel_combine SOURCES test_parallel_combine.cpp LIBS emutrain_engine LABELS parallel)
if(EMUTRAIN_MPI AND EMUTRAIN_MPIRUN)
  set(EMUTRAIN_MPI_ENV "EMUTRAIN_MPIRUN=${EMUTRAIN_MPIRUN}" "OMPI_ALLOW_RUN_AS_ROOT=1"
      "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" "OMPI_MCA_btl=self,vader,tcp" "OMPI_MCA_rmaps_base_oversubscribe=1")
  emutrain_test(test_parallel_comm SOURCES test_parallel_comm.cpp LIBS emutrain_mpi LABELS parallel)
  set_tests_properties(test_parallel_comm PROPERTIES ENVIRONMENT "${EMUTRAIN_MPI_ENV}" TIMEOUT 60)
  emutrain_test(test_parallel_train SOURCES test_parallel_train.cpp LIBS emutrain_train LABELS parallel)
  add_dependencies(test_parallel_train emutrain)
  set_tests_properties(test_parallel_train PROPERTIES
    ENVIRONMENT "${EMUTRAIN_MPI_ENV};EMUTRAIN_BIN=$<TARGET_FILE:emutrain>" TIMEOUT 240)
endif()
