// convolution (forward, grad-input, grad-weight) and channel_sum on the device (EMU_OPS_CONV): kernels still to come.
#include "backends/cuda/ops/pending.h"

namespace emu::EMU_CUDA_NS {

bool group_ready::conv() { return false; }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
EMU_OPS_CONV(EMU_CUDA_NO_KERNEL)
#pragma GCC diagnostic pop

}  // namespace emu::EMU_CUDA_NS
