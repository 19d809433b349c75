// Marks for the kernel budget check (tests/sass/kernel_budgets.py) around a
// kernel's steady-state k loop, so that a script counts its PTX instructions
// per multiply-accumulate. A mark is a move of a tagged constant into a
// scoped register nobody reads: it survives into the PTX that the fatbinary
// keeps (which drops comments), and ptxas removes it (no SASS). Nothing in any
// other build (the host executor's, or nvcc's host pass).
//
//   EMU_BUDGET_BEGIN(kTile, M) .. EMU_BUDGET_END(kTile)   one k tile: M MACs per thread
//   EMU_BUDGET_BEGIN(kStep, S) .. EMU_BUDGET_END(kStep)   one k step inside it: S MACs
//   EMU_BUDGET_BEGIN(kSlow, 0) .. EMU_BUDGET_END(kSlow)   code the steady state does not run
//
// The constant: 0xEB000000 | kind << 20 | begin << 16 | MACs (< 65536).
#pragma once

namespace emu::budget_mark {
constexpr unsigned kTile = 1, kStep = 2, kSlow = 3;
}  // namespace emu::budget_mark

#if defined(__CUDA_ARCH__)
#define EMU_BUDGET_MARK_(kind, begin, macs)                           \
  asm volatile("{ .reg .b32 emu_mark; mov.b32 emu_mark, %0; }" ::"n"( \
      0xEB000000u | (::emu::budget_mark::kind << 20) | ((begin) << 16) | (macs)))
#else
#define EMU_BUDGET_MARK_(kind, begin, macs) ((void)0)
#endif
#define EMU_BUDGET_BEGIN(kind, macs) EMU_BUDGET_MARK_(kind, 1u, static_cast<unsigned>(macs))
#define EMU_BUDGET_END(kind) EMU_BUDGET_MARK_(kind, 0u, 0u)
