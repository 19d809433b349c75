// CUDA's atomic functions and memory fences for the host build.
//
// All fibers of a launch run on the launching OS thread and switch only inside
// barriers and warp collectives, never in the middle of these functions, so a
// plain read-modify-write is atomic with respect to every other CUDA thread of
// the launch. (Memory shared with other OS threads is not protected; kernels
// launched concurrently from several OS threads must not share outputs.)
// Each returns the old value, as CUDA's do; the overload sets are CUDA's, so a
// call that would not compile for the GPU does not compile here either.
#pragma once

#include "backends/cuda/host/qualifiers.h"

namespace emu::hostexec::detail {
template <class T, class F>
inline T atomic_update(T* address, F f) {
  T old = *address;
  *address = f(old);
  return old;
}
}  // namespace emu::hostexec::detail

#define EMU_HOSTEXEC_ATOMIC(name, T, expr)                                                    \
  inline T name(T* address, T val) {                                                          \
    return emu::hostexec::detail::atomic_update(address, [val](T old) -> T { return expr; }); \
  }

// int wraps like the GPU's two's-complement add, without C++'s signed overflow.
EMU_HOSTEXEC_ATOMIC(atomicAdd, int,
                    static_cast<int>(static_cast<unsigned int>(old) + static_cast<unsigned int>(val)))
EMU_HOSTEXEC_ATOMIC(atomicAdd, unsigned int, old + val)
EMU_HOSTEXEC_ATOMIC(atomicAdd, unsigned long long, old + val)
EMU_HOSTEXEC_ATOMIC(atomicAdd, float, old + val)
EMU_HOSTEXEC_ATOMIC(atomicAdd, double, old + val)
EMU_HOSTEXEC_ATOMIC(atomicSub, int,
                    static_cast<int>(static_cast<unsigned int>(old) - static_cast<unsigned int>(val)))
EMU_HOSTEXEC_ATOMIC(atomicSub, unsigned int, old - val)
EMU_HOSTEXEC_ATOMIC(atomicMin, int, val < old ? val : old)
EMU_HOSTEXEC_ATOMIC(atomicMin, unsigned int, val < old ? val : old)
EMU_HOSTEXEC_ATOMIC(atomicMin, long long, val < old ? val : old)
EMU_HOSTEXEC_ATOMIC(atomicMin, unsigned long long, val < old ? val : old)
EMU_HOSTEXEC_ATOMIC(atomicMax, int, val > old ? val : old)
EMU_HOSTEXEC_ATOMIC(atomicMax, unsigned int, val > old ? val : old)
EMU_HOSTEXEC_ATOMIC(atomicMax, long long, val > old ? val : old)
EMU_HOSTEXEC_ATOMIC(atomicMax, unsigned long long, val > old ? val : old)
EMU_HOSTEXEC_ATOMIC(atomicExch, int, ((void)old, val))
EMU_HOSTEXEC_ATOMIC(atomicExch, unsigned int, ((void)old, val))
EMU_HOSTEXEC_ATOMIC(atomicExch, unsigned long long, ((void)old, val))
EMU_HOSTEXEC_ATOMIC(atomicExch, float, ((void)old, val))
EMU_HOSTEXEC_ATOMIC(atomicAnd, int, old& val)
EMU_HOSTEXEC_ATOMIC(atomicAnd, unsigned int, old& val)
EMU_HOSTEXEC_ATOMIC(atomicAnd, unsigned long long, old& val)
EMU_HOSTEXEC_ATOMIC(atomicOr, int, old | val)
EMU_HOSTEXEC_ATOMIC(atomicOr, unsigned int, old | val)
EMU_HOSTEXEC_ATOMIC(atomicOr, unsigned long long, old | val)
EMU_HOSTEXEC_ATOMIC(atomicXor, int, old ^ val)
EMU_HOSTEXEC_ATOMIC(atomicXor, unsigned int, old ^ val)
EMU_HOSTEXEC_ATOMIC(atomicXor, unsigned long long, old ^ val)
// atomicInc/atomicDec wrap at val, as CUDA's do.
EMU_HOSTEXEC_ATOMIC(atomicInc, unsigned int, old >= val ? 0u : old + 1u)
EMU_HOSTEXEC_ATOMIC(atomicDec, unsigned int, (old == 0u || old > val) ? val : old - 1u)
#undef EMU_HOSTEXEC_ATOMIC

#define EMU_HOSTEXEC_CAS(T)                          \
  inline T atomicCAS(T* address, T compare, T val) { \
    T old = *address;                                \
    if (old == compare) *address = val;              \
    return old;                                      \
  }
EMU_HOSTEXEC_CAS(int)
EMU_HOSTEXEC_CAS(unsigned int)
EMU_HOSTEXEC_CAS(unsigned long long)
#undef EMU_HOSTEXEC_CAS

// Fences order memory accesses between threads that run concurrently; fibers
// run one at a time and switch only inside opaque calls, so there is nothing
// to order.
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
