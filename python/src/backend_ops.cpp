// emutrain.backend: the backends' ops themselves (core/backend_ops_dense.h, core/backend_ops_nn.h)
// with an explicit Mac and draw key, on the backend of the operands' device. Nothing is read
// into a format first: the operands are used as given, as a layer passes them after its reads.
// Results are allocated here (contiguous) and returned as the first operand's type.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "core/backend.h"
#include "numerics/mac_policy.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "python/src/conv_args.h"
#include "python/src/format_arg.h"

namespace emu::python {
namespace {

// Runs `op` on the backend of `first`'s device with the GIL released, then hands out `result`.
template <class Op>
py::object run(const std::vector<const Borrowed*>& operands, Tensor result, Op op) {
  check_same_device(operands);
  for (const Borrowed* b : operands) sync_before(*b);
  {
    py::gil_scoped_release unlocked;
    op(backend_for(operands.front()->tensor.device()), result);
    sync_after(result);
  }
  return hand_out(result, *operands.front());
}

void want_ndim(const Borrowed& b, int ndim, const char* what, const char* shape) {
  if (b.tensor.ndim() != ndim)
    throw py::value_error(fmt::format("{}: shape {}, want {}", what, shape_string(b.tensor.shape()), shape));
}

}  // namespace

void bind_ops(py::module_& m) {
  py::module_ b =
      m.def_submodule("backend", "The backends' ops with an explicit Mac and draw key (docs/python.md)");

  b.def(
      "gemm",
      [](py::handle a, py::handle bm, const MacPolicy& mac, py::handle bias, uint64_t seed, uint64_t stream) {
        // a (M,K), b (K,N), bias (N) or None -> c (M,N); output o = i*N+j draws at
        // o * mac_site_count(K, chunk) + site.
        Borrowed A = borrow(a, "a"), B = borrow(bm, "b"), C = borrow_optional(bias, "bias");
        want_ndim(A, 2, "a", "(M, K)");
        want_ndim(B, 2, "b", "(K, N)");
        Tensor c = Tensor::zeros({A.tensor.dim(0), B.tensor.dim(1)}, A.tensor.device());
        return run({&A, &B, &C}, c, [&](Backend& be, Tensor& out) {
          be.gemm(mac, A.tensor, B.tensor, C.tensor.defined() ? &C.tensor : nullptr, out,
                  DrawKey{seed, stream});
        });
      },
      py::arg("a"), py::arg("b"), py::arg("mac"), py::arg("bias") = py::none(), py::arg("seed") = 0,
      py::arg("stream") = 0, "c = a b (+ bias): each output the reduction mac_reduce over k ascending");

  b.def(
      "conv2d_forward",
      [](py::handle x, py::handle w, const MacPolicy& mac, py::handle bias, py::handle stride,
         py::handle padding, py::handle dilation, int groups, uint64_t seed, uint64_t stream) {
        // x (N,C_in,H,W), w (C_out,C_in/G,KH,KW), bias (C_out) or None -> y (N,C_out,OH,OW).
        Borrowed X = borrow(x, "x"), W = borrow(w, "weight"), Bi = borrow_optional(bias, "bias");
        want_ndim(X, 4, "x", "(N, C_in, H, W)");
        want_ndim(W, 4, "weight", "(C_out, C_in/groups, KH, KW)");
        const Conv2dParams cp = conv2d_params(stride, padding, dilation, groups);
        const Shape y = conv2d_output_shape(X.tensor.shape(), W.tensor.shape(), cp);
        return run({&X, &W, &Bi}, Tensor::zeros(y, X.tensor.device()), [&](Backend& be, Tensor& out) {
          be.conv2d_forward(mac, cp, X.tensor, W.tensor, Bi.tensor.defined() ? &Bi.tensor : nullptr, out,
                            DrawKey{seed, stream});
        });
      },
      py::arg("x"), py::arg("weight"), py::arg("mac"), py::arg("bias") = py::none(), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("seed") = 0,
      py::arg("stream") = 0);

  b.def(
      "conv2d_grad_input",
      [](py::handle gy, py::handle w, py::handle input_size, const MacPolicy& mac, py::handle stride,
         py::handle padding, py::handle dilation, int groups, uint64_t seed, uint64_t stream) {
        // gy (N,C_out,OH,OW), w (C_out,C_in/G,KH,KW) -> gx (N,C_in,H,W), (H, W) = input_size.
        Borrowed G = borrow(gy, "grad_output"), W = borrow(w, "weight");
        want_ndim(G, 4, "grad_output", "(N, C_out, OH, OW)");
        want_ndim(W, 4, "weight", "(C_out, C_in/groups, KH, KW)");
        const Conv2dParams cp = conv2d_params(stride, padding, dilation, groups);
        const auto [H, Wd] = int_pair(input_size, "input_size");
        const Shape gx = {G.tensor.dim(0), W.tensor.dim(1) * cp.groups, H, Wd};
        return run({&G, &W}, Tensor::zeros(gx, G.tensor.device()), [&](Backend& be, Tensor& out) {
          be.conv2d_grad_input(mac, cp, G.tensor, W.tensor, out, DrawKey{seed, stream});
        });
      },
      py::arg("grad_output"), py::arg("weight"), py::arg("input_size"), py::arg("mac"), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("seed") = 0,
      py::arg("stream") = 0);

  b.def(
      "conv2d_grad_weight",
      [](py::handle x, py::handle gy, py::handle kernel_size, const MacPolicy& mac, py::handle stride,
         py::handle padding, py::handle dilation, int groups, uint64_t seed, uint64_t stream) {
        // x (N,C_in,H,W), gy (N,C_out,OH,OW) -> gw (C_out,C_in/G,KH,KW), (KH, KW) = kernel_size.
        Borrowed X = borrow(x, "x"), G = borrow(gy, "grad_output");
        want_ndim(X, 4, "x", "(N, C_in, H, W)");
        want_ndim(G, 4, "grad_output", "(N, C_out, OH, OW)");
        const Conv2dParams cp = conv2d_params(stride, padding, dilation, groups);
        const auto [KH, KW] = int_pair(kernel_size, "kernel_size");
        const Shape gw = {G.tensor.dim(1), X.tensor.dim(1) / cp.groups, KH, KW};
        return run({&X, &G}, Tensor::zeros(gw, X.tensor.device()), [&](Backend& be, Tensor& out) {
          be.conv2d_grad_weight(mac, cp, X.tensor, G.tensor, out, DrawKey{seed, stream});
        });
      },
      py::arg("x"), py::arg("grad_output"), py::arg("kernel_size"), py::arg("mac"), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("seed") = 0,
      py::arg("stream") = 0);

  b.def(
      "channel_sum",
      [](py::handle x, const MacPolicy& mac, uint64_t seed, uint64_t stream) {
        // x (N,C,S) -> y (C): y[c] = R_out(sum over (n, s) of x[n,c,s]).
        Borrowed X = borrow(x, "x");
        want_ndim(X, 3, "x", "(N, C, S)");
        return run({&X}, Tensor::zeros({X.tensor.dim(1)}, X.tensor.device()), [&](Backend& be, Tensor& out) {
          be.channel_sum(mac, X.tensor, out, DrawKey{seed, stream});
        });
      },
      py::arg("x"), py::arg("mac"), py::arg("seed") = 0, py::arg("stream") = 0);

  b.def(
      "supports",
      [](const std::string& op, py::handle format) {
        const Format f = format_arg(format, "format");
        Op o;
        if (!op_from_name(op, &o)) throw py::value_error(fmt::format("unknown op '{}'", op));
        return backend_for(Device::Cpu).supports(o, f.family);
      },
      py::arg("op"), py::arg("format"), "Whether the CPU backend runs `op` for `format`'s family");
  b.def("op_names", &backend_op_names, "Every op of the backend interface (core/backend.h)");
}

}  // namespace emu::python
