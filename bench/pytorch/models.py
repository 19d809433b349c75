"""The five models of emutrain's recipes in plain PyTorch, layer for layer.

Same layer shapes, parameter counts (trainable parameters; batch-norm running
statistics are buffers on both sides) and module names as models/*.cpp, so a
step of each costs the same arithmetic as emutrain's. Initialisation is
PyTorch's default (emutrain's layers use the same distributions, not the
same draws); the timing does not depend on it.

Parameter counts, checked against `emutrain cost RECIPE` (its first line:
"<model> (N parameters)") on the shipped recipes' data:

    model        recipe                     emutrain    this file
    resnet18     resnet18_cifar10.yaml    11,173,962   11,173,962
    lenet5       lenet5_mnist.yaml            61,706       61,706
    crnn         crnn_fra_eng.yaml         3,020,487    3,020,487  (vocabularies 2076 / 4295)
    gcn          gcn_cora.yaml                23,063       23,063
    transformer  transformer_forda.yaml        93,130       93,130

`python3 bench_pytorch.py MODEL --check` prints this file's count for a recipe.

Where plain PyTorch differs and how it is matched:
- LSTM: emutrain has ONE bias per gate (4H, PyTorch's b_ih + b_hh); nn.LSTM has
  two. bias_hh_* is zeroed and frozen (requires_grad False), so the trainable
  parameters and the arithmetic match (the fused kernel adds both biases either
  way). GRU: emutrain's bias is [b_r, b_z, b_in, b_hn] (4H), nn.GRU's 6H; the
  extra 2H per layer and direction stay trainable (counted: see gru_extra).
- The Transformer's attention has head_size x num_heads != embed_dim (4 x 256
  over 1 channel), which nn.MultiheadAttention cannot express: q/k/v/out_proj
  Linear layers and the attention written out (scaled_dot_product_attention
  where this PyTorch has it, >= 2.0).
- CRNN: variable lengths through pack_padded_sequence (emutrain's recurrent
  layers skip padded steps and leave the state alone, which is what packing
  computes), the cross-attention through nn.MultiheadAttention with a key
  padding mask.
- GCN: sparse features and the normalised adjacency as torch sparse COO
  tensors (torch.sparse.mm), input dropout on the stored feature values, as
  models/gcn.cpp and Kipf's sparse_dropout.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def parameter_count(model):
    """Trainable parameters (what emutrain counts: its parameters are all trainable)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# --- resnet18: models/resnet18.cpp ------------------------------------------------------

class BasicBlock(nn.Module):
    """conv1 3x3 (stride) bn1 relu1 conv2 3x3 bn2 (+ downsample 1x1 conv + bn) add relu2."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):  # (N, in, H, W) -> (N, out, H / stride, W / stride)
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        s = self.downsample(x) if self.downsample is not None else x
        return F.relu(h + s)


class ResNet18(nn.Module):
    """CIFAR ResNet-18: 3x3 stem, no max-pool, 4 stages of 2 BasicBlocks, global average pool, fc."""

    def __init__(self, channels=3, classes=10, width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        cin = width
        for stage in range(4):
            cout = width << stage
            first = BasicBlock(cin, cout, 2 if stage > 0 else 1)  # the stage's stride on its first block
            setattr(self, f"layer{stage + 1}", nn.Sequential(first, BasicBlock(cout, cout, 1)))
            cin = cout
        self.fc = nn.Linear(cin, classes)

    def forward(self, batch):
        x = F.relu(self.bn1(self.conv1(batch["x"])))  # (N, width, 32, 32)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))  # (N, 8 width, 4, 4)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)), batch["y"]


# --- lenet5: models/lenet5.cpp ----------------------------------------------------------

class LeNet5(nn.Module):
    """conv1 5x5 pad 2 (C -> 6) act pool, conv2 5x5 (6 -> 16) act pool, fc1 -> 120, fc2 -> 84, fc3."""

    def __init__(self, channels=1, height=28, width=28, classes=10, activation="relu", pool="max"):
        super().__init__()
        h, w = (height // 2 - 4) // 2, (width // 2 - 4) // 2
        self.act = torch.tanh if activation == "tanh" else F.relu
        self.pool = (lambda x: F.avg_pool2d(x, 2)) if pool == "avg" else (lambda x: F.max_pool2d(x, 2))
        self.conv1 = nn.Conv2d(channels, 6, 5, 1, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * h * w, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, batch):
        x = self.pool(self.act(self.conv1(batch["x"])))  # (N, 6, 14, 14)
        x = self.pool(self.act(self.conv2(x)))  # (N, 16, 5, 5)
        x = self.act(self.fc1(torch.flatten(x, 1)))
        x = self.act(self.fc2(x))
        return self.fc3(x), batch["y"]


# --- crnn: models/crnn.cpp --------------------------------------------------------------

def _freeze_hh_biases(rnn):
    """emutrain's LSTM has one bias per gate: keep b_ih trainable, b_hh at zero and frozen."""
    for name, p in rnn.named_parameters():
        if name.startswith("bias_hh"):
            with torch.no_grad():
                p.zero_()
            p.requires_grad_(False)


class Crnn(nn.Module):
    """Embedding, Conv1d + ReLU over time, (bi)LSTM/GRU encoder, LSTM/GRU decoder from the encoder's
    final state, cross-attention, combine Linear + Tanh, output Linear; teacher forcing."""

    def __init__(self, src_vocab, tgt_vocab, embed_dim=128, conv_channels=128, conv_layers=1, kernel=3, rnn="lstm",
                 hidden=128, layers=1, bidirectional=True, attention=True, attention_heads=1, dropout=0.1,
                 pad_id=0):
        super().__init__()
        D = 2 if bidirectional else 1
        hd = D * hidden
        self.gru, self.bidirectional, self.layers, self.hidden = rnn == "gru", bidirectional, layers, hidden
        self.pad_id = pad_id
        self.src_embed = nn.Embedding(src_vocab, embed_dim, padding_idx=pad_id)
        self.tgt_embed = nn.Embedding(tgt_vocab, embed_dim, padding_idx=pad_id)
        self.drop = nn.Dropout(dropout)
        convs, width = [], embed_dim
        for _ in range(conv_layers):
            convs.append(nn.Conv1d(width, conv_channels, kernel, 1, kernel // 2))
            width = conv_channels
        self.convs = nn.ModuleList(convs)
        cell = nn.GRU if self.gru else nn.LSTM
        inner_dropout = dropout if layers > 1 else 0.0  # between layers only (PyTorch warns otherwise)
        self.encoder = cell(width, hidden, layers, batch_first=True, bidirectional=bidirectional,
                            dropout=inner_dropout)
        self.decoder = cell(embed_dim, hd, layers, batch_first=True, dropout=inner_dropout)
        if not self.gru:
            _freeze_hh_biases(self.encoder)
            _freeze_hh_biases(self.decoder)
        self.attention = nn.MultiheadAttention(hd, attention_heads, batch_first=True) if attention else None
        self.combine = nn.Linear(2 * hd, hd) if attention else None
        self.out = nn.Linear(hd, tgt_vocab)

    def gru_extra(self):
        """Trainable parameters nn.GRU has beyond emutrain's GRU (b_hr, b_hz per layer and direction)."""
        if not self.gru:
            return 0
        return sum(p.numel() // 3 * 2 for n, p in self.named_parameters() if "bias_hh" in n)

    def _bridge(self, state, n):
        """(L*D, N, H) -> (L, N, D*H): layer l's directions side by side, forward first."""
        if not self.bidirectional:
            return state
        return state.view(self.layers, 2, n, self.hidden).permute(0, 2, 1, 3).reshape(self.layers, n, 2 * self.hidden)

    def forward(self, batch):
        src, tgt_in, tgt_out = batch["src"], batch["tgt_in"], batch["tgt_out"]
        src_len, tgt_len = batch["src_len"], batch["tgt_len"]  # (N) int64 on the CPU
        n, s, t = src.shape[0], src.shape[1], tgt_in.shape[1]
        x = self.drop(self.src_embed(src))  # (N, S, E)
        for i, conv in enumerate(self.convs):
            if i > 0:  # zero the padded steps again (emutrain's PadSteps)
                x = x * batch["src_valid"].unsqueeze(2)
            x = F.relu(conv(x.transpose(1, 2))).transpose(1, 2)  # (N, S, C)
        packed = pack_padded_sequence(x, src_len, batch_first=True, enforce_sorted=False)
        if self.gru:
            enc_out, h_n = self.encoder(packed)
        else:
            enc_out, (h_n, c_n) = self.encoder(packed)
        enc_out, _ = pad_packed_sequence(enc_out, batch_first=True, total_length=s)  # (N, S, D*H)
        y = self.drop(self.tgt_embed(tgt_in))  # (N, T, E)
        packed = pack_padded_sequence(y, tgt_len, batch_first=True, enforce_sorted=False)
        if self.gru:
            dec_out, _ = self.decoder(packed, self._bridge(h_n, n))
        else:
            dec_out, _ = self.decoder(packed, (self._bridge(h_n, n), self._bridge(c_n, n)))
        h, _ = pad_packed_sequence(dec_out, batch_first=True, total_length=t)  # (N, T, D*H)
        if self.attention is not None:
            context, _ = self.attention(h, enc_out, enc_out, key_padding_mask=batch["src_pad"], need_weights=False)
            h = torch.tanh(self.combine(torch.cat([h, context], 2)))
        logits = self.out(self.drop(h))  # (N, T, V)
        targets = tgt_out.masked_fill(tgt_out == self.pad_id, -1)
        return logits.reshape(n * t, -1), targets.reshape(n * t)


# --- gcn: models/gcn.cpp ----------------------------------------------------------------

def _with_values(x, values):
    """x's structure (coalesced sparse COO) with other stored values, without re-checking or
    re-sorting the indices (what emutrain's csr_with_values does)."""
    if hasattr(torch, "_sparse_coo_tensor_unsafe"):
        y = torch._sparse_coo_tensor_unsafe(x._indices(), values, x.shape)
    else:
        y = torch.sparse_coo_tensor(x._indices(), values, x.shape)
    return y._coalesced_(True)


class Gcn(nn.Module):
    """input dropout (on the stored feature values) -> GCNConv(F, hidden) -> ReLU -> dropout -> GCNConv(hidden, C);
    GCNConv: y = A_hat (x W^T) + b, A_hat = D^-1/2 (A + I) D^-1/2 (prepared once by the data)."""

    def __init__(self, features, hidden=16, classes=7, dropout=0.5, input_dropout=0.5, bias=True):
        super().__init__()
        # Weights as emutrain's GCNConv: (out, in), bias (out).
        self.w1 = nn.Parameter(torch.empty(hidden, features))
        self.w2 = nn.Parameter(torch.empty(classes, hidden))
        self.b1 = nn.Parameter(torch.zeros(hidden)) if bias else None
        self.b2 = nn.Parameter(torch.zeros(classes)) if bias else None
        for w in (self.w1, self.w2):  # Glorot, as PyG's GCNConv
            bound = math.sqrt(6.0 / (w.shape[0] + w.shape[1]))
            nn.init.uniform_(w, -bound, bound)
        self.p, self.p_in = dropout, input_dropout

    def forward(self, batch, split="train"):
        x, adj = batch["x"], batch["adj"]  # sparse COO (V, F), sparse COO (V, V) normalised
        if self.training and self.p_in > 0:
            x = _with_values(x, F.dropout(x._values(), self.p_in, True))
        h = torch.sparse.mm(adj, torch.sparse.mm(x, self.w1.t()))  # (V, hidden)
        if self.b1 is not None:
            h = h + self.b1
        h = F.dropout(F.relu(h), self.p, self.training)
        h = torch.sparse.mm(adj, h @ self.w2.t())  # (V, classes)
        if self.b2 is not None:
            h = h + self.b2
        return h, batch["y"].masked_fill(~batch[split + "_mask"], -1)


# --- transformer: models/transformer.cpp ------------------------------------------------

class HeadAttention(nn.Module):
    """Self-attention with num_heads heads of head_dim features over embed_dim inputs (Keras'
    MultiHeadAttention(key_dim=head_size)): q/k/v_proj embed -> H*D, out_proj H*D -> embed."""

    def __init__(self, embed_dim, num_heads, head_dim, dropout):
        super().__init__()
        inner = num_heads * head_dim
        self.h, self.d, self.p = num_heads, head_dim, dropout
        self.q_proj = nn.Linear(embed_dim, inner)
        self.k_proj = nn.Linear(embed_dim, inner)
        self.v_proj = nn.Linear(embed_dim, inner)
        self.out_proj = nn.Linear(inner, embed_dim)

    def forward(self, x):  # (N, T, E) -> (N, T, E)
        n, t, _ = x.shape
        q, k, v = (proj(x).view(n, t, self.h, self.d).transpose(1, 2) for proj in (self.q_proj, self.k_proj, self.v_proj))
        p = self.p if self.training else 0.0
        if hasattr(F, "scaled_dot_product_attention"):  # PyTorch >= 2.0
            ctx = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        else:
            w = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d)), dim=-1)  # (N, H, T, T)
            ctx = F.dropout(w, p, self.training) @ v
        return self.out_proj(ctx.transpose(1, 2).reshape(n, t, self.h * self.d))


class EncoderBlock(nn.Module):
    """Pre-norm: a = x + dropout1(self_attn(norm1(x))); y = a + linear2(dropout(relu(linear1(norm2(a)))))."""

    def __init__(self, embed_dim, num_heads, head_dim, ff_dim, dropout, eps):
        super().__init__()
        self.self_attn = HeadAttention(embed_dim, num_heads, head_dim, dropout)
        self.linear1 = nn.Linear(embed_dim, ff_dim)
        self.linear2 = nn.Linear(ff_dim, embed_dim)
        self.norm1 = nn.LayerNorm(embed_dim, eps=eps)
        self.norm2 = nn.LayerNorm(embed_dim, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.dropout1 = nn.Dropout(dropout)

    def forward(self, x):
        a = x + self.dropout1(self.self_attn(self.norm1(x)))
        return a + self.linear2(self.dropout(F.relu(self.linear1(self.norm2(a)))))


class TimeSeriesTransformer(nn.Module):
    """The Keras time-series Transformer (FordA example): encoder blocks, average pooling, MLP, head."""

    def __init__(self, channels=1, length=500, classes=2, num_blocks=4, head_size=256, num_heads=4, ff_dim=4,
                 dropout=0.25, mlp_units=(128,), mlp_dropout=0.4, eps=1e-6, pool="features"):
        super().__init__()
        self.blocks = nn.ModuleList(EncoderBlock(channels, num_heads, head_size, ff_dim, dropout, eps)
                                    for _ in range(num_blocks))
        self.pool_dim = 2 if pool == "features" else 1
        width, mlp = (length if pool == "features" else channels), []
        for u in mlp_units:
            mlp += [nn.Linear(width, u), nn.ReLU(), nn.Dropout(mlp_dropout)]
            width = u
        self.mlp = nn.Sequential(*mlp)
        self.head = nn.Linear(width, classes)

    def forward(self, batch):
        x = batch["x"]  # (N, T, C)
        for b in self.blocks:
            x = b(x)
        return self.head(self.mlp(x.mean(self.pool_dim))), batch["y"]


# --- construction from a recipe ---------------------------------------------------------

def _f(v):
    return float(v)  # PyYAML reads 1e-6 as a string (YAML 1.1); emutrain's reader as a number


def build_model(recipe, meta):
    """The recipe's model.type with its arguments (recipe.model, defaults filled) and the data sizes."""
    m, t = recipe.model, recipe.model_type
    if t == "resnet18":
        return ResNet18(meta["channels"], meta["classes"], int(m["width"]))
    if t == "lenet5":
        return LeNet5(meta["channels"], meta["height"], meta["width"], meta["classes"], m["activation"], m["pool"])
    if t == "crnn":
        return Crnn(meta["src_vocab"], meta["tgt_vocab"], int(m["embed_dim"]), int(m["conv_channels"]),
                    int(m["conv_layers"]), int(m["kernel"]), m["rnn"], int(m["hidden"]), int(m["layers"]),
                    bool(m["bidirectional"]), bool(m["attention"]), int(m["attention_heads"]), _f(m["dropout"]),
                    meta.get("pad_id", 0))
    if t == "gcn":
        return Gcn(meta["features"], int(m["hidden"]), meta["classes"], _f(m["dropout"]), _f(m["input_dropout"]),
                   bool(m["bias"]))
    if t == "transformer":
        return TimeSeriesTransformer(meta["channels"], meta["length"], meta["classes"], int(m["num_blocks"]),
                                     int(m["head_size"]), int(m["num_heads"]), int(m["ff_dim"]), _f(m["dropout"]),
                                     [int(u) for u in m["mlp_units"]], _f(m["mlp_dropout"]), _f(m["eps"]), m["pool"])
    raise ValueError(f"no PyTorch model for '{t}'")


def build_optimizer(recipe, model):
    """train/recipe_optimizer.cpp: sgd (momentum, dampening, nesterov, weight decay), adam (L2), adamw."""
    o, params = recipe.optimizer, [p for p in model.parameters() if p.requires_grad]
    if recipe.optimizer_type == "sgd":
        return torch.optim.SGD(params, lr=_f(o["lr"]), momentum=_f(o["momentum"]), dampening=_f(o["dampening"]),
                               weight_decay=_f(o["weight_decay"]), nesterov=bool(o["nesterov"]))
    cls = torch.optim.AdamW if recipe.optimizer_type == "adamw" else torch.optim.Adam
    return cls(params, lr=_f(o["lr"]), betas=(_f(o["beta1"]), _f(o["beta2"])), eps=_f(o["eps"]),
               weight_decay=_f(o["weight_decay"]))
