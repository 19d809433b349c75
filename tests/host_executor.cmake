# The host executor (backends/cuda/host/, docs/host_executor.md): CUDA kernel
# sources run on the CPU as fibers. The same binary runs under each execution
# order, since a race in a kernel shows up only under some orders; tests that
# need one order name it themselves.
set(EMUTRAIN_HOST_EXECUTOR_TEST_SOURCES
  test_host_executor.cpp
  test_host_executor_errors.cpp
  test_host_executor_intrinsics.cpp
  test_host_executor_order.cpp)
emutrain_test(test_host_executor SOURCES ${EMUTRAIN_HOST_EXECUTOR_TEST_SOURCES} LABELS executor)
set_tests_properties(test_host_executor PROPERTIES ENVIRONMENT "EMU_HOSTEXEC_ORDER=forward")
foreach(order reverse random:1 random:2)
  string(REPLACE ":" "" suffix ${order})
  add_test(NAME test_host_executor_${suffix} COMMAND test_host_executor)
  set_tests_properties(test_host_executor_${suffix} PROPERTIES ENVIRONMENT "EMU_HOSTEXEC_ORDER=${order}" LABELS executor)
endforeach()

# The same tests under AddressSanitizer and UBSan (fiber stacks, their reuse and
# the unwinding of abandoned fibers must be clean) run in the sanitizer build
# (tools/sanitize_check.sh), where test_host_executor itself is sanitized: the
# test host_executor_sanitized is that binary under a seeded random order.
if(EMUTRAIN_SANITIZE MATCHES "address")
  add_test(NAME host_executor_sanitized COMMAND test_host_executor)
  set_tests_properties(host_executor_sanitized PROPERTIES
    ENVIRONMENT "EMU_HOSTEXEC_ORDER=random:3" LABELS "executor;sanitizer")
endif()
