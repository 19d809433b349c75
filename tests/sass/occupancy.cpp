// Occupancy on sm_90 (H100 SXM) by CUDA's own calculator (cuda_occupancy.h,
// shipped with the toolkit): tests/sass/kernel_budgets.py runs it for every
// budgeted kernel with what `ptxas -v` reported.
//
//   sass_occupancy THREADS REGISTERS STATIC_SMEM_BYTES [BARRIERS]
//   -> "BLOCKS WARPS OCCUPANCY LIMIT": resident blocks and warps per SM, warps
//      over the SM's 64, and what limits them (regs, smem, warps, blocks).
//
// The device figures are those of compute capability 9.0 in the CUDA C++
// Programming Guide (table "Technical Specifications per Compute
// Capability"): 2048 threads and 32 blocks per SM, 64K 32-bit registers per
// SM and at most 255 per thread, 228 KiB of shared memory per SM with 227 KiB
// usable by one block, 1 KiB reserved per block; 132 SMs (H100 SXM5).
#include <cuda_occupancy.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s THREADS REGISTERS STATIC_SMEM_BYTES [BARRIERS]\n", argv[0]);
    return 2;
  }
  cudaOccDeviceProp prop;
  prop.computeMajor = 9;
  prop.computeMinor = 0;
  prop.maxThreadsPerBlock = 1024;
  prop.maxThreadsPerMultiprocessor = 2048;
  prop.regsPerBlock = 65536;
  prop.regsPerMultiprocessor = 65536;
  prop.warpSize = 32;
  prop.sharedMemPerBlock = 48 * 1024;
  prop.sharedMemPerMultiprocessor = 228 * 1024;
  prop.numSms = 132;
  prop.sharedMemPerBlockOptin = 227 * 1024;
  prop.reservedSharedMemPerBlock = 1024;

  cudaOccFuncAttributes attr;
  attr.maxThreadsPerBlock = 1024;
  attr.numRegs = std::atoi(argv[2]);
  attr.sharedSizeBytes = static_cast<size_t>(std::atoll(argv[3]));
  attr.numBlockBarriers = argc > 4 ? std::atoi(argv[4]) : 1;
  cudaOccDeviceState state;
  cudaOccResult result;
  const int threads = std::atoi(argv[1]);
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, threads, 0) !=
      CUDA_OCC_SUCCESS) {
    std::fprintf(stderr, "sass_occupancy: the calculator refused threads %d, registers %d, smem %s\n",
                 threads, attr.numRegs, argv[3]);
    return 1;
  }
  const int warps = result.activeBlocksPerMultiprocessor * ((threads + 31) / 32);
  const unsigned f = result.limitingFactors;
  const char* limit = f & OCC_LIMIT_REGISTERS       ? "regs"
                      : f & OCC_LIMIT_SHARED_MEMORY ? "smem"
                      : f & OCC_LIMIT_WARPS         ? "warps"
                      : f & OCC_LIMIT_BLOCKS        ? "blocks"
                      : f & OCC_LIMIT_BARRIERS      ? "barriers"
                                                    : "-";
  std::printf("%d %d %.3f %s\n", result.activeBlocksPerMultiprocessor, warps, warps / 64.0, limit);
  return 0;
}
