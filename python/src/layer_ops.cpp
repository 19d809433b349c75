// The engine's layer functions (layers/*.h) behind emutrain.torch and the functional ops
// (emutrain.linear, emutrain.conv2d, ...): each runs through run_layer (python/src/layers.h)
// with a LayerHost giving the module path, numerics, training flag and step.
//
// Every function here: (host, inputs..., options..., needs_grad, training) -> (results..., tape).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "layers/activation.h"
#include "layers/attention.h"
#include "layers/batchnorm.h"
#include "layers/conv1d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/gru.h"
#include "layers/linear.h"
#include "layers/lstm.h"
#include "layers/pool.h"
#include "layers/recurrent_common.h"
#include "layers/shape_ops.h"
#include "layers/softmax.h"
#include "python/src/bindings.h"
#include "python/src/conv_args.h"
#include "python/src/layers.h"

namespace emu::python {
namespace {

using Host = std::shared_ptr<LayerHost>;
using Needs = std::vector<bool>;
using Ins = std::vector<Tensor>;

Activation activation_kind(const std::string& name) {
  for (Activation a :
       {Activation::Relu, Activation::Gelu, Activation::Silu, Activation::Tanh, Activation::Sigmoid})
    if (name == activation_name(a)) return a;
  throw py::value_error(
      fmt::format("unknown activation '{}' (emutrain has relu, gelu, silu, tanh, sigmoid)", name));
}

Size2 size2(py::handle v, const char* what) {
  const auto [h, w] = int_pair(v, what);
  return Size2(static_cast<int>(h), static_cast<int>(w));
}

}  // namespace

void bind_layer_ops(py::module_& m) {
  // x (..., in), weight (out, in), bias (out) or None -> y (..., out)
  m.def("layer_linear", [](const Host& h, py::object x, py::object w, py::object b, const Needs& needs,
                           bool training) {
    return run_layer(h, {x, w, b}, needs, training,
                     [](const Module& mod, const Ins& in) { return Ins{linear(mod, in[0], in[1], in[2])}; },
                     {"x", "weight", "bias"});
  });

  // x (N, C_in, H, W), weight (C_out, C_in/groups, KH, KW), bias (C_out) or None -> y (N, C_out, OH, OW)
  m.def("layer_conv2d",
        [](const Host& h, py::object x, py::object w, py::object b, py::handle stride, py::handle padding,
           py::handle dilation, int groups, const Needs& needs, bool training) {
          const Conv2dParams cp = conv2d_params(stride, padding, dilation, groups);
          return run_layer(
              h, {x, w, b}, needs, training,
              [cp](const Module& mod, const Ins& in) { return Ins{conv2d(mod, in[0], in[1], in[2], cp)}; },
              {"x", "weight", "bias"});
        });

  // x (N, C_in, L), weight (C_out, C_in/groups, KL), bias (C_out) or None -> y (N, C_out, OL)
  m.def("layer_conv1d", [](const Host& h, py::object x, py::object w, py::object b, int stride, int padding,
                           int dilation, int groups, const Needs& needs, bool training) {
    const Conv2dParams cp = conv1d_params(stride, padding, dilation, groups);
    return run_layer(
        h, {x, w, b}, needs, training,
        [cp](const Module& mod, const Ins& in) { return Ins{conv1d(mod, in[0], in[1], in[2], cp)}; },
        {"x", "weight", "bias"});
  });

  // x: any shape -> y: the same shape, y = R_out(f(x)) (layers/activation.h)
  m.def("layer_activation", [](const Host& h, const std::string& kind, py::object x, const Needs& needs,
                               bool training) {
    const Activation a = activation_kind(kind);
    return run_layer(h, {x}, needs, training,
                     [a](const Module& mod, const Ins& in) { return Ins{activation(mod, a, in[0])}; }, {"x"});
  });

  // x: any shape -> y: the same shape; dropout keyed by the path and step (training only: the
  // caller passes x through itself in evaluation)
  m.def("layer_dropout", [](const Host& h, py::object x, float p, const Needs& needs, bool training) {
    return run_layer(h, {x}, needs, training,
                     [p](const Module& mod, const Ins& in) { return Ins{dropout(mod, in[0], p, true)}; },
                     {"x"});
  });

  // x (..., C) -> y (..., C): softmax or log-softmax over the last dimension
  m.def("layer_softmax", [](const Host& h, py::object x, bool log, const Needs& needs, bool training) {
    return run_layer(h, {x}, needs, training,
                     [log](const Module& mod, const Ins& in) {
                       return Ins{log ? log_softmax(mod, in[0]) : softmax(mod, in[0])};
                     },
                     {"x"});
  });

  // x (N, C, H, W) -> y (N, C, OH, OW); stride None: the kernel (PyTorch's default)
  m.def("layer_pool2d", [](const Host& h, const std::string& kind, py::object x, py::handle kernel,
                           py::handle stride, py::handle padding, const Needs& needs, bool training) {
    const Size2 k = size2(kernel, "kernel_size"), s = stride.is_none() ? Size2(0) : size2(stride, "stride"),
                p = size2(padding, "padding");
    if (kind == "max") {
      const Pool2dParams pp = MaxPool2d(k, s, p).params;  // the layer's own argument checks
      return run_layer(h, {x}, needs, training,
                       [pp](const Module& mod, const Ins& in) { return Ins{max_pool2d(mod, in[0], pp)}; },
                       {"x"});
    }
    if (kind == "avg") {
      const Pool2dParams pp = AvgPool2d(k, s, p).params;
      return run_layer(h, {x}, needs, training,
                       [pp](const Module& mod, const Ins& in) { return Ins{avg_pool2d(mod, in[0], pp)}; },
                       {"x"});
    }
    throw py::value_error(fmt::format("unknown pooling '{}' (max, avg)", kind));
  });

  // x (N, C, H, W) -> y (N, C, OH, OW) with PyTorch's adaptive windows
  m.def("layer_adaptive_avg_pool2d", [](const Host& h, py::object x, py::handle output_size,
                                        const Needs& needs, bool training) {
    const Size2 o = AdaptiveAvgPool2d(size2(output_size, "output_size")).output;
    return run_layer(
        h, {x}, needs, training,
        [o](const Module& mod, const Ins& in) { return Ins{adaptive_avg_pool2d(mod, in[0], o)}; }, {"x"});
  });

  // x (N, C, ...), weight, bias (C) or None, running_mean, running_var (C) or None, updated in
  // place when batch_stats -> y: x's shape
  m.def("layer_batch_norm", [](const Host& h, py::object x, py::object w, py::object b,
                               py::object running_mean, py::object running_var, bool batch_stats,
                               float momentum, float eps, const Needs& needs, bool training) {
    return run_layer(
        h, {x, w, b, running_mean, running_var}, needs, training,
        [=](const Module& mod, const Ins& in) {
          return Ins{batch_norm(mod, in[0], in[1], in[2], in[3], in[4], batch_stats, momentum, eps)};
        },
        {"x", "weight", "bias", "running_mean", "running_var"});
  });

  // q (N,T,H*D), k (N,S,H*D), v (N,S,H*Dv), key_padding_mask (N,S) nonzero = ignored, or None
  // -> (N,T,H*Dv): the attention core of layers/attention.h (no projections)
  m.def("layer_attention", [](const Host& h, py::object q, py::object k, py::object v, py::object mask,
                              int64_t heads, bool causal, float dropout, const Needs& needs, bool training) {
    AttentionOptions o;
    o.heads = heads, o.causal = causal, o.dropout = dropout, o.training = training;
    return run_layer(
        h, {q, k, v, mask}, needs, training,
        [o](const Module& mod, const Ins& in) { return Ins{attention(mod, in[0], in[1], in[2], in[3], o)}; },
        {"query", "key", "value", "key_padding_mask"});
  });

  // nn.LSTM / nn.GRU (batch first): x (N,T,I), h0 (L*D,N,H) or None, c0 likewise (LSTM; None for
  // the GRU), then per slot s = l*D + d: weight_ih (G*H,I_l), then weight_hh (G*H,H), then (with
  // bias) bias (4H) -> output (N,T,D*H), h_n (L*D,N,H) and (LSTM) c_n: the engine's stacking of
  // layers and directions (layers/recurrent_common.h run_recurrent) over lstm_layer / gru_layer.
  m.def("layer_recurrent", [](const Host& h, const std::string& kind, int64_t input_size, int64_t hidden,
                              int layers, bool bias, bool bidirectional, float dropout,
                              const std::vector<py::object>& tensors, const Needs& needs, bool training) {
    if (kind != "lstm" && kind != "gru")
      throw py::value_error(fmt::format("unknown recurrent layer '{}' (lstm, gru)", kind));
    const bool lstm = kind == "lstm";
    RecurrentOptions o;
    o.input_size = input_size, o.hidden_size = hidden, o.num_layers = layers, o.bias = bias;
    o.bidirectional = bidirectional, o.dropout = dropout;
    check_recurrent_options(lstm ? "LSTM" : "GRU", o);
    const int slots = layers * (bidirectional ? 2 : 1);
    const size_t want = 3 + static_cast<size_t>(slots) * (bias ? 3 : 2);
    if (tensors.size() != want)
      throw py::value_error(fmt::format("layer_recurrent: {} tensors for {} layer-directions (want {})",
                                        tensors.size(), slots, want));
    std::vector<const char*> names = {"x", "h0", "c0"};
    for (const char* n : {"weight_ih", "weight_hh", "bias"})
      for (int s = 0; s < slots && names.size() < want; ++s) names.push_back(n);
    return run_layer(
        h, tensors, needs, training,
        [o, lstm, slots](const Module& mod, const Ins& in) {
          const int D = o.bidirectional ? 2 : 1;
          auto w = [&](int group, int s) {
            return group < 2 || o.bias ? in[3 + group * slots + s] : Tensor();
          };
          RecurrentOutput r = run_recurrent(
              mod, o, lstm, in[0], in[1], in[2], Tensor(),
              [&](int l, int d, const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& mask) {
                const int s = l * D + d;
                return lstm ? lstm_layer(mod, l, d, x, h0, c0, w(0, s), w(1, s), w(2, s), mask)
                            : gru_layer(mod, l, d, x, h0, w(0, s), w(1, s), w(2, s), mask);
              });
          return lstm ? Ins{r.output, r.h_n, r.c_n} : Ins{r.output, r.h_n};
        },
        names);
  });

  // nn.LSTMCell / nn.GRUCell: one step of one layer, x (N,I), h0 (N,H), c0 (N,H) (LSTM; None for
  // the GRU), w_ih (G*H,I), w_hh (G*H,H), bias (4H) or None -> h (N,H) and (LSTM) c (N,H): the
  // engine's lstm_layer / gru_layer with T = 1, its draws keyed as layer `index` (the call's
  // number within the step, so the steps of a loop over time draw from different streams).
  m.def("layer_recurrent_cell", [](const Host& h, const std::string& kind, int index, py::object x,
                                   py::object h0, py::object c0, py::object w_ih, py::object w_hh,
                                   py::object bias, const Needs& needs, bool training) {
    if (kind != "lstm" && kind != "gru")
      throw py::value_error(fmt::format("unknown recurrent cell '{}' (lstm, gru)", kind));
    const bool lstm = kind == "lstm";
    return run_layer(
        h, {x, h0, c0, w_ih, w_hh, bias}, needs, training,
        [lstm, index](const Module& mod, const Ins& in) {
          if (in[0].ndim() != 2)
            throw std::invalid_argument(fmt::format("{}: input of shape {} is not (N, input_size)",
                                                    mod.path(), shape_string(in[0].shape())));
          const Tensor x3 = reshape(in[0], {in[0].dim(0), 1, in[0].dim(1)});  // (N, T = 1, I), differentiable
          if (lstm) {
            RecurrentOutput r = lstm_layer(mod, index, 0, x3, in[1], in[2], in[3], in[4], in[5], Tensor());
            return Ins{r.h_n, r.c_n};
          }
          RecurrentOutput r = gru_layer(mod, index, 0, x3, in[1], in[3], in[4], in[5], Tensor());
          return Ins{r.h_n};
        },
        {"x", "h0", "c0", "weight_ih", "weight_hh", "bias"});
  });
}

}  // namespace emu::python
