# The CPU thread pool (numerics/parallel_for.h): its loops (parts, nesting, exceptions, threads kept
# between calls) and representative CPU ops and bulk rounding giving the same bytes with 1, 2 and 3
# threads.
emutrain_test(test_thread_pool SOURCES test_thread_pool.cpp LIBS emutrain_engine LABELS threads)
