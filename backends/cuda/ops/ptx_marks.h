// Marks for the kernel budget check (tests/sass/kernel_budgets.py): comments
// in the PTX around a kernel's steady-state k loop, so that a script counts its
// instructions per multiply-accumulate. Nothing in any other build (the host
// executor's, or nvcc's host pass); a comment is no SASS instruction.
//
//   EMU_BUDGET_BEGIN("tile", M) .. EMU_BUDGET_END("tile")   one k tile: M MACs per thread
//   EMU_BUDGET_BEGIN("step", S) .. EMU_BUDGET_END("step")   one k step inside it: S MACs
//   EMU_BUDGET_SLOW_BEGIN() .. EMU_BUDGET_END("slow")       code the steady state does not run
#pragma once

#if defined(__CUDA_ARCH__)
#define EMU_BUDGET_BEGIN(kind, macs) asm volatile("// emu-budget " kind " begin macs=%0" ::"n"(macs))
#define EMU_BUDGET_SLOW_BEGIN() asm volatile("// emu-budget slow begin")
#define EMU_BUDGET_END(kind) asm volatile("// emu-budget " kind " end")
#else
#define EMU_BUDGET_BEGIN(kind, macs) ((void)0)
#define EMU_BUDGET_SLOW_BEGIN() ((void)0)
#define EMU_BUDGET_END(kind) ((void)0)
#endif
