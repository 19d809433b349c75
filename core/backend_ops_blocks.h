// Op family: block formats (bfp, OCP MX, nvfp4, AdaptivFloat; docs/block_formats.md).
//
// A block format rounds each element against metadata computed from its block
// first (a shared exponent / E8M0 scale, an e4m3 scale, a per-tensor exponent
// bias), so a read into it is not element-wise: the op needs the ReadLayout that
// says which elements form the rows of the reduction reading the tensor. Blocks
// are runs of f.block.size consecutive elements along each row (a last partial
// block is a shorter block); AdaptivFloat (block size 0) has one block: the
// whole tensor.
#pragma once

#include "core/backend_types.h"
#include "numerics/read_layout.h"

// quantize_blocks  x: (n) viewed as [layout.outer, layout.len, layout.inner], n = layout.numel()
//                  -> y: (n) same shape (y may be x);
//                  y = decode(encode(x)) of numerics/block_format.h: for every block, the metadata
//                  from the block's max |x| (block_scale_exponent / nvfp4_scale), then each element
//                  rounded to the element format (f.block element fields, saturating) as
//                  R_elem(x / scale), decoded as code * scale. Element at flat index i draws
//                  philox_draw(key.seed, key.stream, i) under an :sr element rounding (no other draws).
//                  Blocks are independent, so any split over blocks gives the same bits.
#define EMU_OPS_BLOCKS(X)                                                                                  \
  X(quantize_blocks, (const Format& f, const Tensor& x, Tensor& y, const ReadLayout& layout, DrawKey key), \
    (f, x, y, layout, key))
