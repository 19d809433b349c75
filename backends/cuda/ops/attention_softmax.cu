// the masked softmax of attention on the device (EMU_OPS_ATTENTION_SOFTMAX): kernels still to come.
#include "backends/cuda/ops/pending.h"

namespace emu::EMU_CUDA_NS {

bool group_ready::attention_softmax() { return false; }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
EMU_OPS_ATTENTION_SOFTMAX(EMU_CUDA_NO_KERNEL)
#pragma GCC diagnostic pop

}  // namespace emu::EMU_CUDA_NS
