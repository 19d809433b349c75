#include "layers/shape_ops.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/autograd.h"
#include "layers/layer_io.h"

namespace emu {
namespace {

int normalize_dim(int d, int ndim, const char* op) {
  if (d < -ndim || d >= ndim)
    throw std::out_of_range(fmt::format("{}: dim {} of a tensor with {} dimensions", op, d, ndim));
  return d < 0 ? d + ndim : d;
}

// A copy of x's values through the backend (strided source or target): the
// identity format rounds nothing.
void copy_values(const Tensor& src, Tensor& dst) {
  backend_for(src.device()).quantize(Format{}, src, dst, DrawKey{});
}

}  // namespace

Tensor contiguous_copy(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor out = Tensor::zeros(x.shape(), x.device());
  copy_values(x, out);
  return out;
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  Tensor result = contiguous_copy(x).view(shape);
  const Shape in_shape = x.shape();
  record_lambda(result, "reshape", {x}, [in_shape](const Tensor& gy) -> std::vector<Tensor> {
    return {contiguous_copy(gy).view(in_shape)};
  });
  return result;
}

Tensor flatten(const Tensor& x, int start_dim, int end_dim) {
  const int nd = x.ndim();
  if (nd == 0) return reshape(x, {1});  // as PyTorch: a scalar flattens to (1,)
  const int s = normalize_dim(start_dim, nd, "flatten"), e = normalize_dim(end_dim, nd, "flatten");
  if (s > e)
    throw std::invalid_argument(fmt::format("flatten: start_dim {} after end_dim {}", start_dim, end_dim));
  Shape shape(x.shape().begin(), x.shape().begin() + s);
  int64_t merged = 1;
  for (int d = s; d <= e; ++d) merged *= x.dim(d);
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + e + 1, x.shape().end());
  return reshape(x, shape);
}

Tensor concat(const std::vector<Tensor>& xs, int dim) {
  if (xs.empty()) throw std::invalid_argument("concat: no tensors");
  const Tensor& first = xs.front();
  const int nd = first.ndim();
  const int d = normalize_dim(dim, nd, "concat");
  Shape shape = first.shape();
  shape[d] = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const Tensor& t = xs[k];
    bool ok = t.ndim() == nd && t.device() == first.device();
    for (int i = 0; ok && i < nd; ++i) ok = i == d || t.dim(i) == first.dim(i);
    if (!ok)
      throw std::invalid_argument(fmt::format("concat along dim {}: tensor {} has shape {}, tensor 0 has {}",
                                              dim, k, shape_string(t.shape()), shape_string(first.shape())));
    shape[d] += t.dim(d);
  }
  Tensor y = Tensor::zeros(shape, first.device());
  std::vector<int64_t> starts;
  int64_t at = 0;
  for (const Tensor& t : xs) {
    starts.push_back(at);
    Tensor slot = y.narrow(d, at, t.dim(d));
    copy_values(t, slot);
    at += t.dim(d);
  }
  Tensor result = y.view(shape);
  record_lambda(result, "concat", xs, [xs, starts, d](const Tensor& gy) -> std::vector<Tensor> {
    std::vector<Tensor> grads;
    for (size_t k = 0; k < xs.size(); ++k) {
      if (!xs[k].requires_grad()) {
        grads.emplace_back();
        continue;
      }
      Tensor g = Tensor::zeros(xs[k].shape(), gy.device());
      copy_values(gy.narrow(d, starts[k], xs[k].dim(d)), g);
      grads.push_back(g);
    }
    return grads;
  });
  return result;
}

Tensor add(const Module& m, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw std::invalid_argument(fmt::format("{}: add of shapes {} and {} (no broadcasting)", m.path(),
                                            shape_string(a.shape()), shape_string(b.shape())));
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(a.device());
  // a's reads draw from the ReadInput stream, b's from the next one.
  const DrawKey read_a = draw_key(m, DrawSite::ReadInput);
  const DrawKey read_b{read_a.seed, read_a.stream + 1};
  Tensor ar = read_as(cn.activations, a.contiguous(), read_a);
  Tensor br = read_as(cn.activations, b.contiguous(), read_b);
  Tensor y = Tensor::zeros(a.shape(), a.device());
  be.elementwise_add(cn.out(), ar, br, y, draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));
  Tensor result = y.view(a.shape());

  const Module* mp = &m;
  record_lambda(result, "add", {a, b}, [mp](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    Tensor g = read_as(n.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad));
    return {g, g};
  });
  return result;
}

}  // namespace emu
