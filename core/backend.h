// The backend interface: every op that touches tensor data runs through a
// Backend, so the CPU reference and the CUDA kernels are interchangeable.
//
// The op list is one X-macro, assembled from one list per op family
// (core/backend_ops_*.h), each entry X(name, (parameters), (arguments)). It
// declares the pure virtuals here, the throwing stubs of StubBackend (the
// checklist for a new backend), the overrides of every real backend and the
// names reported by backend_op_names().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend_ops_attention.h"
#include "core/backend_ops_blocks.h"
#include "core/backend_ops_dense.h"
#include "core/backend_ops_elementwise.h"
#include "core/backend_ops_memory.h"
#include "core/backend_ops_nn.h"
#include "core/backend_ops_optim.h"
#include "core/backend_ops_recurrent.h"
#include "core/backend_ops_sequence.h"
#include "core/backend_ops_sparse.h"
#include "core/backend_ops_sparsity.h"
#include "core/backend_types.h"
#include "core/device.h"

#define EMU_BACKEND_OPS(X) \
  EMU_OPS_MEMORY(X)        \
  EMU_OPS_DENSE(X)         \
  EMU_OPS_ELEMENTWISE(X)   \
  EMU_OPS_NN(X)            \
  EMU_OPS_OPTIM(X)         \
  EMU_OPS_SEQUENCE(X)      \
  EMU_OPS_ATTENTION(X)     \
  EMU_OPS_RECURRENT(X)     \
  EMU_OPS_SPARSE(X)        \
  EMU_OPS_SPARSITY(X)      \
  EMU_OPS_BLOCKS(X)

namespace emu {

// One enumerator per op of the op list, in declaration order (Op::gemm, ...).
enum class Op : uint16_t {
#define EMU_OP_ENUM(name, params, args) name,
  EMU_BACKEND_OPS(EMU_OP_ENUM)
#undef EMU_OP_ENUM
};
constexpr int kOpCount = 0
#define EMU_OP_COUNT(name, params, args) +1
    EMU_BACKEND_OPS(EMU_OP_COUNT)
#undef EMU_OP_COUNT
    ;
const char* op_name(Op op);
// The op named `name`, or false when the op list has none.
bool op_from_name(std::string_view name, Op* op);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual Device device() const = 0;
  // Whether this backend runs `op` with operands of format family `family`;
  // a gap is reported, never filled silently (an unsupported op throws).
  virtual bool supports(Op op, Family family) const = 0;

#define EMU_DECLARE_BACKEND_OP(name, params, args) virtual void name params = 0;
  EMU_BACKEND_OPS(EMU_DECLARE_BACKEND_OP)
#undef EMU_DECLARE_BACKEND_OP
};

// Every op throws std::runtime_error("unimplemented: <op>").
class StubBackend : public Backend {
 public:
  const char* name() const override { return "stub"; }
  Device device() const override { return Device::Cpu; }
  bool supports(Op, Family) const override { return false; }
#define EMU_STUB_BACKEND_OP(name, params, args) void name params override;
  EMU_BACKEND_OPS(EMU_STUB_BACKEND_OP)
#undef EMU_STUB_BACKEND_OP
};

// Names of all ops, in declaration order.
const std::vector<std::string>& backend_op_names();

// The backend that owns tensors of `device`; throws if none is registered
// (e.g. cuda in a CPU-only build).
Backend& backend_for(Device device);
void register_backend(Device device, Backend* backend);

// The CPU reference backend (backends/cpu), used for Device::Cpu unless
// another one is registered.
Backend& default_cpu_backend();

}  // namespace emu
