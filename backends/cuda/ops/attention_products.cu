// the per-head products of attention on the device (EMU_OPS_ATTENTION_PRODUCTS): kernels still to come.
#include "backends/cuda/ops/pending.h"

namespace emu::EMU_CUDA_NS {

bool group_ready::attention_products() { return false; }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
EMU_OPS_ATTENTION_PRODUCTS(EMU_CUDA_NO_KERNEL)
#pragma GCC diagnostic pop

}  // namespace emu::EMU_CUDA_NS
