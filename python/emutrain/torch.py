"""emutrain.torch: PyTorch layers whose forward and backward run through emutrain (docs/python.md).

Each layer here is the PyTorch layer of the same name (a subclass: same parameters, state dict
keys and initialisation) whose forward calls the engine's own layer function (layers/*.h) on
the layer's tensors, as a torch.autograd.Function whose backward is the engine's recorded
backward: every read into a format, every product, accumulation and rounding, and every random
draw is the engine's, keyed by the layer's module path, the seed and the training step.

    model = torchvision_style_resnet()
    report = emutrain.torch.emulate(model, {"format": "e6m6", "acc": "fp32"},
                                    overrides={"fc": {"format": "fp32"}})
    print(report)            # what was replaced, what was not and why
    ... train with any PyTorch loop ...

emulate() gives every replaced layer of a model one Context (seed, step): the step advances by
one at every training-mode forward of the model, so stochastic rounding draws differ from step
to step and repeat exactly from run to run.
"""

import torch as _torch
from torch import nn as _nn

from . import _core
from . import policy as _policy
from ._core import Context, Policy

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Context", "Conv1d", "Conv2d", "Dropout",
    "Emulation", "GELU", "GRU", "GRUCell", "LSTM", "LSTMCell", "Linear", "LogSoftmax", "MaxPool2d",
    "MultiheadAttention", "ReLU", "SiLU", "Sigmoid", "Softmax", "Tanh", "emulate"
]


class _EngineCall(_torch.autograd.Function):
    """One call of an engine layer function: forward runs it, backward runs its recorded backward."""

    @staticmethod
    def forward(ctx, call, saves_outputs, *tensors):
        needs = list(ctx.needs_input_grad[2:])
        *outs, tape = call(tensors, needs)
        ctx.tape = tape
        ctx.inputs = len(tensors)
        # Keeps the inputs alive (the engine's recorded backward reads their memory) and lets
        # PyTorch refuse a backward after an in-place change of one of them; the same for the
        # results of layers whose backward reads their own output (activations, softmax).
        ctx.save_for_backward(*tensors, *(outs if saves_outputs else ()))
        return outs[0] if len(outs) == 1 else tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        ctx.saved_tensors  # PyTorch's check that nothing the engine reads was modified in place
        if ctx.tape is None:
            return (None,) * (2 + ctx.inputs)
        g = grads[0] if len(grads) == 1 else tuple(grads)
        in_grads = ctx.tape.backward(g)
        ctx.tape = None  # the engine's graph is freed
        return (None, None, *in_grads)


class _Emulated:
    """What every emulated layer adds to its PyTorch layer: the policy, the module path and the
    context (seed, step) of the engine's module it stands for."""
    _emu_saves_outputs = False  # whether the engine's backward reads the layer's output

    def _emu_setup(self, policy=None, path="", context=None, auto_step=None):
        self.emu_policy = _policy(policy)
        self.emu_path = path
        self.emu_context = context if context is not None else Context()
        # A layer with a context of its own counts its own training forwards (emulate() gives
        # the model's layers a shared context, counted by the model).
        self._emu_auto_step = context is None if auto_step is None else auto_step
        self._emu_forwards = 0
        self._emu_host = None
        self._emu_sub_hosts = None  # layers with several engine calls (MultiheadAttention)
        reason = self._emu_unsupported(self)
        if reason is not None:
            raise ValueError(f"{type(self).__name__}: {reason}")

    @staticmethod
    def _emu_unsupported(module):
        """Why `module`'s configuration cannot run on the engine, or None."""
        return None

    @property
    def emu_host(self):
        if self._emu_host is None:
            self._emu_host = _core.LayerHost(self.emu_path, self.emu_policy, self.emu_context)
        return self._emu_host

    @property
    def numerics(self):
        """The Numerics this layer runs in (its policy resolved at its path)."""
        return self.emu_host.numerics

    def set_policy(self, policy, path=None):
        self.emu_policy = _policy(policy)
        if path is not None:
            self.emu_path = path
        self._emu_host = None
        self._emu_sub_hosts = None

    def __getstate__(self):  # copy.deepcopy and pickle: the host is rebuilt on first use
        state = self.__dict__.copy()
        state["_emu_host"] = state["_emu_sub_hosts"] = None
        return state

    def _emu_paths(self):
        """The module paths this layer's engine calls use (override globs may name any)."""
        return [self.emu_path]

    def _emu_tick(self):
        """Advances a context of the layer's own at each training forward."""
        if self._emu_auto_step and self.training:
            if self._emu_forwards:
                self.emu_context.step += 1
            self._emu_forwards += 1

    def _emu_call(self, fn, *tensors):
        """fn(host, tensors, needs_grad, training) -> (results..., tape) through autograd."""
        self._emu_tick()
        return self._emu_run(self.emu_host, fn, *tensors)

    def _emu_run(self, host, fn, *tensors):
        training = self.training
        if not (_torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)):
            outs = fn(host, tensors, [False] * len(tensors), training)[:-1]
            return outs[0] if len(outs) == 1 else tuple(outs)
        return _EngineCall.apply(lambda ts, needs: fn(host, ts, needs, training), self._emu_saves_outputs, *tensors)

    def extra_repr(self):
        return f"{super().extra_repr()}, emulated: {self.numerics.describe()}"


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


class Linear(_Emulated, _nn.Linear):
    """nn.Linear on the engine: x (..., in) -> (..., out) (layers/linear.h)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *, policy=None, path="",
                 context=None):
        _nn.Linear.__init__(self, in_features, out_features, bias, device=device, dtype=dtype)
        self._emu_setup(policy, path, context)

    def forward(self, x):
        return self._emu_call(lambda h, t, needs, tr: _core.layer_linear(h, *t, needs, tr), x, self.weight,
                              self.bias)


def _conv_padding(module, dims):
    """The layer's padding as ints, or a reason why the engine cannot pad like PyTorch."""
    if module.padding_mode != "zeros":
        return None, f"padding_mode '{module.padding_mode}' (emutrain pads with zeros)"
    if module.padding == "valid":
        return (0,) * dims, None
    if module.padding == "same":
        total = [d * (k - 1) for d, k in zip(module.dilation, module.kernel_size)]
        if any(t % 2 for t in total):
            return None, "padding='same' with an odd total padding (PyTorch pads one side more)"
        return tuple(t // 2 for t in total), None
    return tuple(module.padding), None


class Conv2d(_Emulated, _nn.Conv2d):
    """nn.Conv2d on the engine: x (N, C_in, H, W) -> (N, C_out, OH, OW) (layers/conv2d.h)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, *, policy=None, path="", context=None):
        _nn.Conv2d.__init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                            padding_mode, device=device, dtype=dtype)
        self._emu_setup(policy, path, context)

    @staticmethod
    def _emu_unsupported(module):
        return _conv_padding(module, 2)[1]

    def forward(self, x):
        pad = _conv_padding(self, 2)[0]
        return self._emu_call(
            lambda h, t, needs, tr: _core.layer_conv2d(h, *t, self.stride, pad, self.dilation, self.groups, needs, tr),
            x, self.weight, self.bias)


class Conv1d(_Emulated, _nn.Conv1d):
    """nn.Conv1d on the engine: x (N, C_in, L) -> (N, C_out, OL) (layers/conv1d.h)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, *, policy=None, path="", context=None):
        _nn.Conv1d.__init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                            padding_mode, device=device, dtype=dtype)
        self._emu_setup(policy, path, context)

    @staticmethod
    def _emu_unsupported(module):
        return _conv_padding(module, 1)[1]

    def forward(self, x):
        pad = _conv_padding(self, 1)[0][0]
        return self._emu_call(
            lambda h, t, needs, tr: _core.layer_conv1d(h, *t, self.stride[0], pad, self.dilation[0], self.groups, needs,
                                                       tr), x, self.weight, self.bias)


def _activation_class(torch_class, kind, doc):

    class Activation(_Emulated, torch_class):
        _emu_saves_outputs = True

        def __init__(self, *args, policy=None, path="", context=None, **kwargs):
            torch_class.__init__(self, *args, **kwargs)
            self._emu_setup(policy, path, context)

        def forward(self, x):
            return self._emu_call(lambda h, t, needs, tr: _core.layer_activation(h, kind, *t, needs, tr), x)

    Activation.__name__ = Activation.__qualname__ = torch_class.__name__
    Activation.__doc__ = doc
    return Activation


ReLU = _activation_class(_nn.ReLU, "relu", "nn.ReLU on the engine (its inplace flag is ignored)")
SiLU = _activation_class(_nn.SiLU, "silu", "nn.SiLU on the engine")
Tanh = _activation_class(_nn.Tanh, "tanh", "nn.Tanh on the engine")
Sigmoid = _activation_class(_nn.Sigmoid, "sigmoid", "nn.Sigmoid on the engine")
GELU = _activation_class(_nn.GELU, "gelu", "nn.GELU (the erf form) on the engine")
GELU._emu_unsupported = staticmethod(lambda m: None if getattr(m, "approximate", "none") == "none" else
                                     f"approximate='{m.approximate}' (emutrain's GELU is the erf form)")


class _SoftmaxBase(_Emulated):
    _emu_log = False
    _emu_saves_outputs = True

    def forward(self, x):
        # dim=None: PyTorch's legacy choice (dim 0 for 0-, 1- and 3-d inputs, else 1).
        dim = self.dim if self.dim is not None else (0 if x.dim() in (0, 1, 3) else 1)
        last = dim in (-1, x.dim() - 1)
        xs = x if last else x.movedim(dim, -1)
        y = self._emu_call(lambda h, t, needs, tr: _core.layer_softmax(h, *t, self._emu_log, needs, tr), xs)
        return y if last else y.movedim(-1, dim)


class Softmax(_SoftmaxBase, _nn.Softmax):
    """nn.Softmax on the engine (over `dim`, moved last for the engine's row op)."""

    def __init__(self, dim=None, *, policy=None, path="", context=None):
        _nn.Softmax.__init__(self, dim)
        self._emu_setup(policy, path, context)


class LogSoftmax(_SoftmaxBase, _nn.LogSoftmax):
    """nn.LogSoftmax on the engine."""
    _emu_log = True

    def __init__(self, dim=None, *, policy=None, path="", context=None):
        _nn.LogSoftmax.__init__(self, dim)
        self._emu_setup(policy, path, context)


class MaxPool2d(_Emulated, _nn.MaxPool2d):
    """nn.MaxPool2d on the engine (no dilation, ceil_mode or return_indices)."""

    def __init__(self, *args, policy=None, path="", context=None, **kwargs):
        _nn.MaxPool2d.__init__(self, *args, **kwargs)
        self._emu_setup(policy, path, context)

    @staticmethod
    def _emu_unsupported(m):
        if _pair(m.dilation) != (1, 1) or m.ceil_mode or m.return_indices:
            return "dilation, ceil_mode and return_indices are not emulated"
        return None

    def forward(self, x):
        return self._emu_call(
            lambda h, t, needs, tr: _core.layer_pool2d(h, "max", *t, self.kernel_size, self.stride, self.padding, needs,
                                                       tr), x)


class AvgPool2d(_Emulated, _nn.AvgPool2d):
    """nn.AvgPool2d on the engine (count_include_pad, no ceil_mode or divisor_override)."""

    def __init__(self, *args, policy=None, path="", context=None, **kwargs):
        _nn.AvgPool2d.__init__(self, *args, **kwargs)
        self._emu_setup(policy, path, context)

    @staticmethod
    def _emu_unsupported(m):
        if m.ceil_mode or not m.count_include_pad or m.divisor_override is not None:
            return "ceil_mode, count_include_pad=False and divisor_override are not emulated"
        return None

    def forward(self, x):
        return self._emu_call(
            lambda h, t, needs, tr: _core.layer_pool2d(h, "avg", *t, self.kernel_size, self.stride, self.padding, needs,
                                                       tr), x)


class AdaptiveAvgPool2d(_Emulated, _nn.AdaptiveAvgPool2d):
    """nn.AdaptiveAvgPool2d on the engine (output sizes given as ints)."""

    def __init__(self, output_size, *, policy=None, path="", context=None):
        _nn.AdaptiveAvgPool2d.__init__(self, output_size)
        self._emu_setup(policy, path, context)

    @staticmethod
    def _emu_unsupported(m):
        size = _pair(m.output_size)
        return None if all(isinstance(s, int) for s in size) else "an output size of None is not emulated"

    def forward(self, x):
        return self._emu_call(
            lambda h, t, needs, tr: _core.layer_adaptive_avg_pool2d(h, *t, self.output_size, needs, tr), x)


class _BatchNormBase(_Emulated):

    @staticmethod
    def _emu_unsupported(m):
        return "momentum=None (a cumulative average) is not emulated" if m.momentum is None else None

    def forward(self, x):
        batch_stats = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
        track = self.track_running_stats
        rm = self.running_mean if track else None
        rv = self.running_var if track else None
        return self._emu_call(
            lambda h, t, needs, tr: _core.layer_batch_norm(h, t[0], t[1], t[2], rm, rv, batch_stats, self.momentum,
                                                           self.eps, needs, tr), x, self.weight, self.bias)


class BatchNorm2d(_BatchNormBase, _nn.BatchNorm2d):
    """nn.BatchNorm2d on the engine: batch statistics in training (the running ones updated in
    place), running statistics in evaluation (layers/batchnorm.h)."""

    def __init__(self, *args, policy=None, path="", context=None, **kwargs):
        _nn.BatchNorm2d.__init__(self, *args, **kwargs)
        self._emu_setup(policy, path, context)


class BatchNorm1d(_BatchNormBase, _nn.BatchNorm1d):
    """nn.BatchNorm1d on the engine."""

    def __init__(self, *args, policy=None, path="", context=None, **kwargs):
        _nn.BatchNorm1d.__init__(self, *args, **kwargs)
        self._emu_setup(policy, path, context)


class Dropout(_Emulated, _nn.Dropout):
    """nn.Dropout on the engine: the mask is Philox keyed by the path, seed and step, the kept
    values rounded to the out format (layers/dropout.h)."""

    def __init__(self, p=0.5, inplace=False, *, policy=None, path="", context=None):
        _nn.Dropout.__init__(self, p, inplace)
        self._emu_setup(policy, path, context)

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        return self._emu_call(lambda h, t, needs, tr: _core.layer_dropout(h, *t, self.p, needs, tr), x)


def _sub_path(path, name):
    return f"{path}.{name}" if path else name


class MultiheadAttention(_Emulated, _nn.MultiheadAttention):
    """nn.MultiheadAttention on the engine, as its MultiheadAttention (layers/attention.h): the
    q, k, v projections run as Linear layers at <path>.q_proj, .k_proj, .v_proj (rows of
    in_proj_weight), the attention core (Q K^T, softmax, dropout, P V) at <path>, and out_proj at
    <path>.out_proj. key_padding_mask: bool (True = ignored) or float 0 / -inf. attn_mask is not
    emulated except the causal mask (is_causal=True). The attention weights are not returned
    (None), whatever need_weights says."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None, *, policy=None, path="",
                 context=None):
        _nn.MultiheadAttention.__init__(self, embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn, kdim,
                                        vdim, batch_first, device=device, dtype=dtype)
        self._emu_setup(policy, path, context)

    @staticmethod
    def _emu_unsupported(m):
        if m.bias_k is not None or m.add_zero_attn:
            return "add_bias_kv and add_zero_attn are not emulated"
        return None

    def _emu_paths(self):
        return [self.emu_path] + [_sub_path(self.emu_path, n) for n in ("q_proj", "k_proj", "v_proj", "out_proj")]

    @property
    def emu_hosts(self):
        if self._emu_sub_hosts is None:
            self._emu_sub_hosts = {
                n: _core.LayerHost(_sub_path(self.emu_path, n), self.emu_policy, self.emu_context)
                for n in ("q_proj", "k_proj", "v_proj", "out_proj")
            }
        return self._emu_sub_hosts

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        if attn_mask is not None:
            raise ValueError(f"{self.emu_path or 'MultiheadAttention'}: attn_mask is not emulated "
                             "(a causal mask: is_causal=True)")
        self._emu_tick()
        core, hosts = self.emu_host, self.emu_hosts
        if not self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight.chunk(3)
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        bq, bk, bv = self.in_proj_bias.chunk(3) if self.in_proj_bias is not None else (None, None, None)

        def linear(name, x, w, b):
            return self._emu_run(hosts[name], lambda h, t, needs, tr: _core.layer_linear(h, *t, needs, tr), x, w, b)

        q, k, v = linear("q_proj", query, wq, bq), linear("k_proj", key, wk, bk), linear("v_proj", value, wv, bv)
        mask = None
        if key_padding_mask is not None:
            if key_padding_mask.dtype == _torch.bool:
                mask = key_padding_mask.float()
            else:
                if not _torch.all((key_padding_mask == 0) | (key_padding_mask == -float("inf"))):
                    raise ValueError("key_padding_mask: a float mask must hold 0 (attend) or -inf (ignore)")
                mask = (key_padding_mask == -float("inf")).float()
        out = self._emu_run(
            core, lambda h, t, needs, tr: _core.layer_attention(h, *t, self.num_heads, bool(is_causal), self.dropout,
                                                                needs, tr), q, k, v, mask)
        out = linear("out_proj", out, self.out_proj.weight, self.out_proj.bias)
        if not self.batch_first:
            out = out.transpose(0, 1)
        return out, None


class _RecurrentBase(_Emulated):
    """nn.LSTM / nn.GRU on the engine (layers/lstm.h, layers/gru.h): every layer and direction,
    dropout between layers, keyed by (path, layer, direction, step). The engine's one bias per
    reduction is formed from PyTorch's two in float32 (LSTM: b_ih + b_hh; GRU: [b_ir + b_hr,
    b_iz + b_hz, b_in, b_hn]), and the gradient flows back to both."""
    _emu_kind = None

    @staticmethod
    def _emu_unsupported(m):
        return "proj_size > 0 is not emulated" if getattr(m, "proj_size", 0) else None

    def _emu_bias(self, sfx):
        raise NotImplementedError

    def forward(self, input, hx=None):
        if isinstance(input, _nn.utils.rnn.PackedSequence):
            raise ValueError("PackedSequence inputs are not emulated: pass padded tensors")
        unbatched = input.dim() == 2
        x = input.unsqueeze(0 if self.batch_first else 1) if unbatched else input
        if not self.batch_first:
            x = x.transpose(0, 1)
        lstm = self._emu_kind == "lstm"
        h0, c0 = (hx if hx is not None else (None, None)) if lstm else (hx, None)
        if unbatched:
            h0 = h0.unsqueeze(1) if h0 is not None else None
            c0 = c0.unsqueeze(1) if c0 is not None else None
        D = 2 if self.bidirectional else 1
        sfx = [f"_l{l}{'_reverse' if d else ''}" for l in range(self.num_layers) for d in range(D)]
        tensors = [x, h0, c0] + [getattr(self, "weight_ih" + s) for s in sfx] + [getattr(self, "weight_hh" + s)
                                                                                for s in sfx]
        if self.bias:
            tensors += [self._emu_bias(s) for s in sfx]
        opts = (self._emu_kind, self.input_size, self.hidden_size, self.num_layers, self.bias, self.bidirectional,
                float(self.dropout))
        outs = self._emu_call(lambda h, t, needs, tr: _core.layer_recurrent(h, *opts, list(t), needs, tr), *tensors)
        output, h_n = outs[0], outs[1]
        if not self.batch_first:
            output = output.transpose(0, 1)
        if unbatched:
            output = output.squeeze(0 if self.batch_first else 1)
            h_n = h_n.squeeze(1)
        if not lstm:
            return output, h_n
        c_n = outs[2].squeeze(1) if unbatched else outs[2]
        return output, (h_n, c_n)


class LSTM(_RecurrentBase, _nn.LSTM):
    __doc__ = _RecurrentBase.__doc__
    _emu_kind = "lstm"

    def __init__(self, *args, policy=None, path="", context=None, **kwargs):
        _nn.LSTM.__init__(self, *args, **kwargs)
        self._emu_setup(policy, path, context)

    def _emu_bias(self, sfx):
        return getattr(self, "bias_ih" + sfx) + getattr(self, "bias_hh" + sfx)


class GRU(_RecurrentBase, _nn.GRU):
    __doc__ = _RecurrentBase.__doc__
    _emu_kind = "gru"

    def __init__(self, *args, policy=None, path="", context=None, **kwargs):
        _nn.GRU.__init__(self, *args, **kwargs)
        self._emu_setup(policy, path, context)

    def _emu_bias(self, sfx):
        b_ih, b_hh = getattr(self, "bias_ih" + sfx), getattr(self, "bias_hh" + sfx)
        h2 = 2 * self.hidden_size
        return _torch.cat([b_ih[:h2] + b_hh[:h2], b_ih[h2:], b_hh[h2:]])


class _CellBase(_Emulated):
    """nn.LSTMCell / nn.GRUCell on the engine: one step of lstm_layer / gru_layer (T = 1). The
    n-th call of a cell within a training step draws as layer n of a recurrent module would, so
    a loop over time steps draws from a new stream at every call; the biases are formed as for
    LSTM and GRU. A cell with a context of its own advances it at every training-mode call."""
    _emu_kind = None

    def _emu_setup(self, *args, **kwargs):
        super()._emu_setup(*args, **kwargs)
        self._emu_cell_step, self._emu_cell_calls = None, 0

    def _emu_call_index(self):
        if self._emu_cell_step != self.emu_context.step:
            self._emu_cell_step, self._emu_cell_calls = self.emu_context.step, 0
        self._emu_cell_calls += 1
        return self._emu_cell_calls - 1

    def forward(self, input, hx=None):
        unbatched = input.dim() == 1
        x = input.unsqueeze(0) if unbatched else input
        lstm = self._emu_kind == "lstm"
        zeros = x.new_zeros(x.shape[0], self.hidden_size)
        if lstm:
            h0, c0 = hx if hx is not None else (zeros, zeros)
        else:
            h0, c0 = (hx if hx is not None else zeros), None
        if unbatched:
            h0 = h0.unsqueeze(0)
            c0 = c0.unsqueeze(0) if c0 is not None else None
        bias = None
        if self.bias:
            if lstm:
                bias = self.bias_ih + self.bias_hh
            else:
                h2 = 2 * self.hidden_size
                bias = _torch.cat([self.bias_ih[:h2] + self.bias_hh[:h2], self.bias_ih[h2:], self.bias_hh[h2:]])
        self._emu_tick()
        index = self._emu_call_index()
        outs = self._emu_run(
            self.emu_host,
            lambda h, t, needs, tr: _core.layer_recurrent_cell(h, self._emu_kind, index, *t, needs, tr), x, h0, c0,
            self.weight_ih, self.weight_hh, bias)
        if not lstm:
            return outs.squeeze(0) if unbatched else outs
        h, c = outs
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class LSTMCell(_CellBase, _nn.LSTMCell):
    __doc__ = _CellBase.__doc__
    _emu_kind = "lstm"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None, *, policy=None, path="",
                 context=None):
        _nn.LSTMCell.__init__(self, input_size, hidden_size, bias, device=device, dtype=dtype)
        self._emu_setup(policy, path, context)


class GRUCell(_CellBase, _nn.GRUCell):
    __doc__ = _CellBase.__doc__
    _emu_kind = "gru"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None, *, policy=None, path="",
                 context=None):
        _nn.GRUCell.__init__(self, input_size, hidden_size, bias, device=device, dtype=dtype)
        self._emu_setup(policy, path, context)


# PyTorch layer type -> its emulated class. Only these exact types are replaced: a subclass
# may compute something else in its forward.
_REPLACEMENTS = {
    _nn.Linear: Linear,
    _nn.Conv1d: Conv1d,
    _nn.Conv2d: Conv2d,
    _nn.ReLU: ReLU,
    _nn.GELU: GELU,
    _nn.SiLU: SiLU,
    _nn.Tanh: Tanh,
    _nn.Sigmoid: Sigmoid,
    _nn.Softmax: Softmax,
    _nn.LogSoftmax: LogSoftmax,
    _nn.MaxPool2d: MaxPool2d,
    _nn.AvgPool2d: AvgPool2d,
    _nn.AdaptiveAvgPool2d: AdaptiveAvgPool2d,
    _nn.BatchNorm1d: BatchNorm1d,
    _nn.BatchNorm2d: BatchNorm2d,
    _nn.Dropout: Dropout,
    _nn.MultiheadAttention: MultiheadAttention,
    _nn.LSTM: LSTM,
    _nn.GRU: GRU,
    _nn.LSTMCell: LSTMCell,
    _nn.GRUCell: GRUCell,
}

# Leaf modules that compute nothing worth listing as not emulated.
_NO_ARITHMETIC = (_nn.Identity, _nn.Flatten, _nn.Unflatten)


class Emulation:
    """What emulate() did: replaced [(path, type)], not_replaced [(path, type, why)], and the
    policy and context the replaced layers share."""

    def __init__(self, policy, context, replaced, not_replaced, hook):
        self.policy, self.context = policy, context
        self.replaced, self.not_replaced = replaced, not_replaced
        self._hook = hook
        self._forwards = 0

    def __repr__(self):
        lines = [f"emutrain: {len(self.replaced)} layers emulated under {self.policy!r}"]
        lines += [f"  {p or '(root)'}: {t}" for p, t in self.replaced]
        lines.append(f"not emulated ({len(self.not_replaced)}): they compute in PyTorch's float32")
        lines += [f"  {p or '(root)'}: {t} ({why})" for p, t, why in self.not_replaced]
        return "\n".join(lines)


def emulate(model, policy=None, overrides=None, *, seed=0, context=None, only=None):
    """Puts the supported layers of `model` under `policy`, in place, and returns an Emulation.

    policy: a Policy, a dict of policy keys or a format spec; overrides: {glob: {key: value}}
    applied after the policy's own, to the layers whose module path (model.named_modules())
    matches, as a recipe's numerics.overrides (every glob must match some emulated layer).
    Each replaced layer keeps its parameters (the same Parameter objects: an optimizer built
    before still trains them), buffers and hooks. seed: the seed of every random draw;
    context: a Context to share instead (its seed wins). only: the names of the layer types
    to replace (e.g. ["Linear", "Conv2d"]), default every supported one. Calling emulate again
    re-points the layers to the new policy.
    """
    pol = _policy(policy).copy()
    for glob, keys in (overrides or {}).items():
        pol.override(glob, **keys)
    ctx = context if context is not None else Context(seed=seed)
    replaced, not_replaced, paths, inside = [], [], [], []
    for path, module in model.named_modules():
        if any(path.startswith(p + ".") if p else path for p in inside):
            continue  # a part of an emulated layer (MultiheadAttention's out_proj): it runs in the layer
        cls = type(module) if isinstance(module, _Emulated) else _REPLACEMENTS.get(type(module))
        if cls is not None and (only is None or cls.__name__ in only or isinstance(module, _Emulated)):
            reason = cls._emu_unsupported(module)
            if reason is None:
                module.__class__ = cls
                module._emu_setup(pol, path, ctx, auto_step=False)
                replaced.append((path, cls.__name__))
                paths += module._emu_paths()
                inside.append(path)
            else:
                not_replaced.append((path, type(module).__name__, reason))
            continue
        if next(module.children(), None) is None and not isinstance(module, _NO_ARITHMETIC):
            why = "not selected by only=" if cls is not None else "no emulated layer of this type"
            not_replaced.append((path, type(module).__name__, why))
    for glob in pol.override_globs:
        if not any(_core.glob_match(glob, p) for p in paths):
            shown = ", ".join(p or "(root)" for p in paths[:12]) + (", ..." if len(paths) > 12 else "")
            raise ValueError(f"numerics.overrides['{glob}']: matches no emulated layer of the model "
                             f"(emulated: {shown})")

    previous = getattr(model, "_emutrain", None)
    if previous is not None and previous._hook is not None:
        previous._hook.remove()
    report = Emulation(pol, ctx, replaced, not_replaced, None)
    report._hook = model.register_forward_pre_hook(_count_step)
    model._emutrain = report
    return report


def _count_step(model, inputs):
    """The step of every draw: the model's training-mode forwards, counted from 0. Looked up on
    the model at each call, so a deep copy counts its own (copied) context."""
    report = model._emutrain
    if model.training:
        if report._forwards:
            report.context.step += 1
        report._forwards += 1
