// Op family: dense linear algebra.
#pragma once

// quantize: x -> y = R_f(x) element-wise (same shape; y may be x).
// gemm:     a (M,K), b (K,N), bias (N) or null -> c (M,N);
//           c[i][j] = mac_reduce(p, a[i,:], b[:,j], bias[j]) in k order (numerics/mac.h);
//           output o = i*N+j draws at index o * mac_site_count(K, chunk) + site.
#define EMU_OPS_DENSE(X)                                                                                \
  X(quantize, (const Format& f, const Tensor& x, Tensor& y, DrawKey key), (f, x, y, key))               \
  X(gemm,                                                                                               \
    (const MacPolicy& p, const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c, DrawKey key), \
    (p, a, b, bias, c, key))
