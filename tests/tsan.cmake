# The tests ThreadSanitizer runs (tools/sanitize_check.sh tsan, docs/sanitize.md):
# every code path that shares memory between threads.
#   test_thread_pool      the pool itself: parts, nesting, exceptions, threads kept between calls
#   test_data_loader      the loader's prefetch workers, their queue and shutdown
#   test_bulk             bulk rounding split over the pool
#   test_pinned_training  five models trained under five policies on 1, 2 and 3
#                         threads: every threaded CPU op, forward and backward, and
#                         the trainer around them (what each data-parallel rank runs)
#   test_parallel_comm    the MPI communicator's rank processes (when MPI is built)
foreach(t test_thread_pool test_data_loader test_bulk test_pinned_training test_parallel_comm)
  if(TEST ${t})
    set_property(TEST ${t} APPEND PROPERTY LABELS tsan)
  endif()
endforeach()
