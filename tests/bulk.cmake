# numerics/bulk.{h,cpp}: quantize/decode/encode over arrays, bit-identical to the
# scalar functions. Includes sweeps over all 2^32 binary32 inputs (~10 s of CPU
# in a Release build); the direct 2^32 comparison is hidden behind the
# "[exhaustive]" tag: build/tests/test_bulk "[exhaustive]".
emutrain_test(test_bulk SOURCES test_bulk.cpp LABELS numerics OPTIMIZED)
