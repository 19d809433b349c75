// A strided tensor view as a kernel argument (a POD passed by value): where
// element e of the row-major order of the view's shape lives in device memory.
#pragma once

#include <cstdint>

#include "numerics/hd.h"

namespace emu {

constexpr int kMaxViewDims = 8;

struct KernelView {
  float* data = nullptr;  // element 0 of the view
  int64_t numel = 0;
  int nd = 0;
  bool contiguous = true;
  int64_t shape[kMaxViewDims] = {};
  int64_t strides[kMaxViewDims] = {};

  // The memory offset of row-major element e.
  EMU_HD int64_t offset(int64_t e) const {
    if (contiguous) return e;
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t i = e % shape[d];
      e /= shape[d];
      off += i * strides[d];
    }
    return off;
  }
  EMU_HD float& at(int64_t e) const { return data[offset(e)]; }
};

}  // namespace emu
