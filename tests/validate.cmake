# The backend-equality harness `emutrain validate` (docs/validate.md).
#
# validate_cpu compares the CPU backend with itself: every cell must pass, so it
# checks the case generators, the policy pre- and post-steps and the CPU
# reference's determinism. validate_cuda_host_* run every op x policy x case
# through the CUDA kernels on the host executor: any difference fails the test.
add_test(NAME validate_cpu COMMAND emutrain validate --device cpu)
set_tests_properties(validate_cpu PROPERTIES LABELS validate TIMEOUT 600)
if(TARGET emutrain_devices)
  # In five shards by op family, so that ctest -j runs them side by side and none
  # takes minutes under the sanitizers (it took 44 s here, 169 s under ASan, in
  # one process). The last shard is every op the others skip, so an op added to
  # the op list is validated without a change here.
  set(sharded)
  foreach(shard gemm=gemm conv=conv2d_forward,conv2d_grad_input,conv2d_grad_weight gru=gru_forward,gru_backward
      lstm=lstm_forward,lstm_backward)
    string(REGEX MATCH "^([^=]*)=(.*)$" unused ${shard})
    add_test(NAME validate_cuda_host_${CMAKE_MATCH_1} COMMAND emutrain validate --device cuda-host
      --op ${CMAKE_MATCH_2})
    set_tests_properties(validate_cuda_host_${CMAKE_MATCH_1} PROPERTIES LABELS validate TIMEOUT 1800)
    list(APPEND sharded ${CMAKE_MATCH_2})
  endforeach()
  list(JOIN sharded "," sharded)
  add_test(NAME validate_cuda_host_other COMMAND emutrain validate --device cuda-host --skip-op ${sharded})
  set_tests_properties(validate_cuda_host_other PROPERTIES LABELS validate TIMEOUT 1800)
  # The same under the executor's reverse and seeded random orders of threads and
  # blocks (docs/host_executor.md): a kernel whose result depends on the schedule
  # (a missing barrier, a race through shared or global memory) differs here.
  # The long tier (label `long`, tools/long_tests.sh): CI runs it after the default one.
  # Label `sanitize_repeat`: the sanitizer build leaves them out, since they touch
  # the same memory as validate_cuda_host_* in another order (docs/sanitize.md).
  foreach(order reverse random:1)
    string(REPLACE ":" "_" tag ${order})
    add_test(NAME validate_cuda_host_${tag} COMMAND emutrain validate --device cuda-host)
    set_tests_properties(validate_cuda_host_${tag} PROPERTIES LABELS "validate;long;sanitize_repeat" TIMEOUT 1800
      ENVIRONMENT EMU_HOSTEXEC_ORDER=${order})
  endforeach()
  # A fault planted in each path of the tile GEMM makes validate FAIL
  # (tests/validate_path_faults.sh; backends/cuda/ops/gemm_tile.h "Planted faults").
  add_test(NAME validate_detects_path_faults COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/validate_path_faults.sh
    $<TARGET_FILE:emutrain>)
  # Label `sanitize_repeat`: the planted fault changes a rounding parameter of the host-side
  # launch, not what a kernel reads or writes; validate_cuda_host_* run the same kernels
  # under the sanitizers (docs/sanitize.md).
  set_tests_properties(validate_detects_path_faults PROPERTIES LABELS "validate;sanitize_repeat" TIMEOUT 900)
endif()

# The harness itself, through the faults `--inject` puts into the device side
# (tools/validate_inject.h): a comparison that cannot fail proves nothing. Each
# test checks the exit code and the lines printed ($0 is the emutrain binary).
#
# A flipped bit is a FAIL naming element 0 and both values, also under
# layer-level emulation (the op's fp32 result is compared before the rounding
# could hide it); the other ops' rows stay pass.
add_test(NAME validate_detects_flip COMMAND sh -c
  "out=$(\"$0\" validate --device cpu --op copy,gemm --policy fp32,layer-level --inject flip:gemm); rc=$?; \
   printf '%s\\n' \"$out\"; [ $rc -eq 1 ] && \
   printf '%s\\n' \"$out\" | grep -Eq '^copy +pass +pass$' && \
   printf '%s\\n' \"$out\" | grep -Eq '^gemm +FAIL +FAIL$' && \
   printf '%s\\n' \"$out\" | grep -q 'gemm x fp32, case 1x1x1, output c: element 0 of 1 (1 differ): cpu 0x' && \
   printf '%s\\n' \"$out\" | \
     grep -q 'gemm x layer-level, case 1x1x1, output c before the layer-level rounding: element 0'"
  $<TARGET_FILE:emutrain>)
# A write past the end of a host result hits the canary after it.
add_test(NAME validate_detects_host_overrun COMMAND sh -c
  "out=$(\"$0\" validate --device cpu --op download --policy fp32 --case empty \
     --inject flip:download); rc=$?; \
   printf '%s\\n' \"$out\"; [ $rc -eq 1 ] && \
   printf '%s\\n' \"$out\" | grep -q 'output host: element 0 of 0 (the canary: a write past the end)'"
  $<TARGET_FILE:emutrain>)
# An exception in the device's op is a FAIL with its message; the run goes on.
add_test(NAME validate_reports_throw COMMAND sh -c
  "out=$(\"$0\" validate --device cpu --op softmax_forward,cross_entropy_forward --policy fp32,e6m6 \
     --inject throw:softmax_forward); rc=$?; \
   printf '%s\\n' \"$out\"; [ $rc -eq 1 ] && \
   printf '%s\\n' \"$out\" | grep -Eq '^softmax_forward +FAIL +FAIL$' && \
   printf '%s\\n' \"$out\" | grep -Eq '^cross_entropy_forward +pass +pass$' && \
   printf '%s\\n' \"$out\" | \
     grep -q 'softmax_forward x e6m6, case 7x13, output -: the device threw: injected fault in softmax_forward'"
  $<TARGET_FILE:emutrain>)
# An op the device does not support is unsup, not a failure: exit code 0.
add_test(NAME validate_reports_unsupported COMMAND sh -c
  "out=$(\"$0\" validate --device cpu --op gemm,mse_forward --policy posit16_1 --inject unsup:gemm); rc=$?; \
   printf '%s\\n' \"$out\"; [ $rc -eq 0 ] && \
   printf '%s\\n' \"$out\" | grep -Eq '^gemm +unsup$' && \
   printf '%s\\n' \"$out\" | grep -Eq '^mse_forward +pass$'"
  $<TARGET_FILE:emutrain>)
# Selectors: one op, one policy, one case; --skip-op; an unknown name, or no op left, is an error (exit 2).
add_test(NAME validate_selectors COMMAND sh -c
  "out=$(\"$0\" validate --device cpu --op gemm --policy e5m2sr-e6m9sr --case 17x33x29_bias); rc=$?; \
   printf '%s\\n' \"$out\"; [ $rc -eq 0 ] && \
   printf '%s\\n' \"$out\" | grep -q '^1 cells: 1 pass, 0 FAIL, 0 unsup; 1 case runs compared' && \
   \"$0\" validate --list --op gemm,copy --case 1x1x1,scalar | grep -q '^2 ops, 2 cases, 22 policies' && \
   \"$0\" validate --list --op gemm,copy --skip-op gemm --case scalar | grep -q '^1 ops, 1 cases, 22 policies' && \
   { \"$0\" validate --device cpu --op gemm --skip-op gemm; [ $? -eq 2 ]; } && \
   { \"$0\" validate --device cpu --skip-op no_such_op; [ $? -eq 2 ]; } && \
   { \"$0\" validate --device cpu --op no_such_op; [ $? -eq 2 ]; } && \
   { \"$0\" validate --device cpu --policy no_such_policy; [ $? -eq 2 ]; } && \
   { \"$0\" validate --device cpu --op gemm --case no_such_case; [ $? -eq 2 ]; }"
  $<TARGET_FILE:emutrain>)
set_tests_properties(validate_detects_flip validate_detects_host_overrun validate_reports_throw
                     validate_reports_unsupported validate_selectors PROPERTIES LABELS validate)
