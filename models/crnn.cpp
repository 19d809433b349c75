// A convolutional-recurrent sequence-to-sequence translator (English -> French
// on fra_eng), trained with teacher forcing and scored by token accuracy:
//
//   encoder  src (N, S) ids  -> src_embed Embedding(src_vocab, embed_dim, padding 0)  (N, S, E)
//            -> dropout -> conv0..conv<k-1>: Conv1d(kernel, padding kernel/2) + ReLU over time
//               (N, E, S) -> (N, C, S)
//            -> encoder LSTM/GRU (bidirectional by default), lengths "src_len": padded steps
//               output +0 and leave the state alone -> outputs (N, S, D*H), final state (L*D, N, H)
//   decoder  tgt_in (N, T) ids (<bos> + target) -> tgt_embed Embedding(tgt_vocab, E, padding 0)
//            -> dropout -> decoder LSTM/GRU with hidden D*H, L layers, lengths "tgt_len";
//               layer l starts from the encoder's final state of layer l, its directions
//               concatenated (forward first): (N, D*H)
//            -> attention (default on): MultiheadAttention(query = decoder outputs, key = value =
//               encoder outputs, key padding mask = the source's padding) -> context (N, T, D*H);
//               combine Linear(2 D*H -> D*H) of [decoder output, context] -> Tanh (Luong et al.
//               2015's attentional hidden state)
//            -> dropout -> out Linear(D*H -> tgt_vocab)
//   prediction logits (N*T, tgt_vocab), targets tgt_out (N*T) with padding (id 0) as -1, so the
//            trainer's cross-entropy and accuracy are per real target token (<eos> included).
//
// The first convolution sees the padded steps as zeros (the padding row of the
// embedding is zero and never trained), which is zero padding at each
// sequence's own end; later convolutions get their padded steps zeroed again
// (index_select of a zero row), so no result depends on how a batch is padded.
#include <fmt/format.h>

#include "core/autograd.h"
#include "layers/activation.h"
#include "layers/attention.h"
#include "layers/conv1d.h"
#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/gru.h"
#include "layers/index_select.h"
#include "layers/linear.h"
#include "layers/lstm.h"
#include "layers/shape_ops.h"
#include "models/registry.h"

namespace emu::models {
namespace {

struct CrnnConfig {
  int64_t src_vocab = 0, tgt_vocab = 0, pad_id = 0;
  int64_t embed_dim = 128, conv_channels = 128, conv_layers = 1, kernel = 3;
  int64_t hidden = 128, layers = 1;
  bool gru = false, bidirectional = true, attention = true;
  int64_t attention_heads = 1;
  float dropout = 0.1f;
};

// x (N, A, B) -> (N, B, A), a copy; the gradient is transposed back. Values move, nothing is rounded.
Tensor swap_last_dims(const Tensor& x) {
  Tensor y = contiguous_copy(x.transpose(1, 2));
  record_lambda(y, "transpose", {x}, [](const Tensor& gy) -> std::vector<Tensor> {
    return {contiguous_copy(gy.transpose(1, 2))};
  });
  return y;
}

// (N, S) 0/1 float mask from lengths (N): `padded` true gives 1 at the padded steps (t >= length).
// Built on the host from the downloaded lengths, on the lengths' device.
Tensor step_mask(const Tensor& lengths, int64_t S, bool padded) {
  const std::vector<float> len = lengths.to_vector();
  const int64_t N = static_cast<int64_t>(len.size());
  std::vector<float> p(static_cast<size_t>(N * S));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < S; ++t)
      p[n * S + t] = (static_cast<float>(t) < len[static_cast<size_t>(n)]) != padded;
  return Tensor::from_vector({N, S}, p, lengths.device());
}

// Zeroes the padded steps of x (N, S, C): rows of a zero-row-extended copy picked by index_select,
// so no arithmetic happens and the padded steps get no gradient.
class PadSteps : public Module {
 public:
  Tensor forward(const Tensor& x, const Tensor& lengths) {
    const int64_t N = x.dim(0), S = x.dim(1), C = x.dim(2);
    const std::vector<float> len = lengths.to_vector();
    std::vector<float> index(static_cast<size_t>(N * S));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t t = 0; t < S; ++t)
        index[static_cast<size_t>(n * S + t)] =
            static_cast<float>(static_cast<float>(t) < len[static_cast<size_t>(n)] ? n * S + t : N * S);
    Tensor rows = concat({reshape(x, {N * S, C}), Tensor::zeros({1, C}, x.device())}, 0);
    return reshape(index_select(*this, rows, 0, Tensor::from_vector({N * S}, index, x.device())), {N, S, C});
  }
  std::string type_name() const override { return "PadSteps"; }
};

class Crnn : public Model {
 public:
  explicit Crnn(const CrnnConfig& c) : c_(c) {
    const int64_t D = c.bidirectional ? 2 : 1, Hd = D * c.hidden;
    src_embed = register_module("src_embed", std::make_shared<Embedding>(c.src_vocab, c.embed_dim, c.pad_id));
    src_drop = register_module("src_dropout", std::make_shared<Dropout>(c.dropout));
    int64_t width = c.embed_dim;
    for (int64_t i = 0; i < c.conv_layers; ++i) {
      convs.push_back(
          register_module(fmt::format("conv{}", i),
                          std::make_shared<Conv1d>(width, c.conv_channels, static_cast<int>(c.kernel), 1,
                                                   static_cast<int>(c.kernel / 2))));
      conv_acts.push_back(register_module(fmt::format("conv_act{}", i), std::make_shared<ReLU>()));
      width = c.conv_channels;
    }
    if (c.conv_layers > 1) pad_steps = register_module("pad_steps", std::make_shared<PadSteps>());
    RecurrentOptions enc;
    enc.input_size = width;
    enc.hidden_size = c.hidden;
    enc.num_layers = static_cast<int>(c.layers);
    enc.bidirectional = c.bidirectional;
    enc.dropout = c.dropout;
    RecurrentOptions dec = enc;
    dec.input_size = c.embed_dim;
    dec.hidden_size = Hd;
    dec.bidirectional = false;
    if (c.gru) {
      encoder_gru = register_module("encoder", std::make_shared<GRU>(enc));
    } else {
      encoder_lstm = register_module("encoder", std::make_shared<LSTM>(enc));
    }
    tgt_embed = register_module("tgt_embed", std::make_shared<Embedding>(c.tgt_vocab, c.embed_dim, c.pad_id));
    tgt_drop = register_module("tgt_dropout", std::make_shared<Dropout>(c.dropout));
    if (c.gru) {
      decoder_gru = register_module("decoder", std::make_shared<GRU>(dec));
    } else {
      decoder_lstm = register_module("decoder", std::make_shared<LSTM>(dec));
    }
    if (c.attention) {
      attention = register_module(
          "attention", std::make_shared<MultiheadAttention>(Hd, c.attention_heads, 0.0f, true, 0, Hd, Hd));
      combine = register_module("combine", std::make_shared<Linear>(2 * Hd, Hd));
      combine_act = register_module("combine_act", std::make_shared<Tanh>());
    }
    out_drop = register_module("out_dropout", std::make_shared<Dropout>(c.dropout));
    out = register_module("out", std::make_shared<Linear>(Hd, c.tgt_vocab));
  }

  Prediction predict(const data::Batch& batch, const std::string&) override {
    const Tensor& src = batch.at("src");
    const Tensor& tgt_in = batch.at("tgt_in");
    const Tensor& tgt_out = batch.at("tgt_out");
    const Tensor& src_len = batch.at("src_len");
    const Tensor& tgt_len = batch.at("tgt_len");
    if (src.ndim() != 2 || tgt_in.ndim() != 2 || tgt_out.shape() != tgt_in.shape() ||
        src.dim(0) != tgt_in.dim(0))
      throw std::invalid_argument(fmt::format(
          "crnn: src {}, tgt_in {}, tgt_out {}: want (N, S), (N, T), (N, T)", shape_string(src.shape()),
          shape_string(tgt_in.shape()), shape_string(tgt_out.shape())));
    const int64_t N = src.dim(0), S = src.dim(1), T = tgt_in.dim(1);

    // Encoder.
    Tensor x = probe(*src_embed, src_embed->forward(src));  // (N, S, E)
    x = probe(*src_drop, src_drop->forward(x));
    for (size_t i = 0; i < convs.size(); ++i) {
      if (i > 0) x = pad_steps->forward(x, src_len);
      x = swap_last_dims(x);  // (N, C, S)
      x = probe(*convs[i], convs[i]->forward(x));
      x = probe(*conv_acts[i], conv_acts[i]->forward(x));
      x = swap_last_dims(x);  // (N, S, C)
    }
    RecurrentOutput enc = c_.gru ? encoder_gru->forward(x, Tensor(), src_len)
                                 : encoder_lstm->forward(x, Tensor(), Tensor(), src_len);
    probe(c_.gru ? static_cast<Module&>(*encoder_gru) : *encoder_lstm, enc.output);

    // Decoder, from the encoder's final state.
    Tensor y = probe(*tgt_embed, tgt_embed->forward(tgt_in));  // (N, T, E)
    y = probe(*tgt_drop, tgt_drop->forward(y));
    Tensor h0 = bridge(enc.h_n, N);
    RecurrentOutput dec = c_.gru ? decoder_gru->forward(y, h0, tgt_len)
                                 : decoder_lstm->forward(y, h0, bridge(enc.c_n, N), tgt_len);
    Tensor h = probe(c_.gru ? static_cast<Module&>(*decoder_gru) : *decoder_lstm, dec.output);  // (N, T, Hd)

    if (attention) {
      Tensor context =
          probe(*attention, attention->forward(h, enc.output, enc.output, step_mask(src_len, S, true)));
      h = probe(*combine, combine->forward(concat({h, context}, 2)));
      h = probe(*combine_act, combine_act->forward(h));
    }
    h = probe(*out_drop, out_drop->forward(h));
    Tensor logits = probe(*out, out->forward(h));  // (N, T, V)

    // Targets: padding -> -1 (not counted); made on the host, put on the ids' device.
    std::vector<float> ids = tgt_out.to_vector();
    const float pad = static_cast<float>(c_.pad_id);
    for (float& id : ids) id = id == pad ? -1.0f : id;
    return {reshape(logits, {N * T, c_.tgt_vocab}), Tensor::from_vector({N * T}, ids, tgt_out.device())};
  }

  std::string type_name() const override { return "CRNN"; }

  std::shared_ptr<Embedding> src_embed, tgt_embed;
  std::shared_ptr<Dropout> src_drop, tgt_drop, out_drop;
  std::vector<std::shared_ptr<Conv1d>> convs;
  std::vector<std::shared_ptr<ReLU>> conv_acts;
  std::shared_ptr<PadSteps> pad_steps;
  std::shared_ptr<LSTM> encoder_lstm, decoder_lstm;
  std::shared_ptr<GRU> encoder_gru, decoder_gru;
  std::shared_ptr<MultiheadAttention> attention;
  std::shared_ptr<Linear> combine, out;
  std::shared_ptr<Tanh> combine_act;

 private:
  // Encoder state (L*D, N, H) -> decoder initial state (L, N, D*H): layer l's directions side by side.
  Tensor bridge(const Tensor& state, int64_t N) const {
    if (!c_.bidirectional) return state;
    const int64_t L = c_.layers, H = c_.hidden;
    Tensor flat = reshape(state, {L * 2 * N * H});
    std::vector<Tensor> layers;
    for (int64_t l = 0; l < L; ++l) {
      Tensor fwd = packed_slice(flat, (l * 2 + 0) * N * H, {N, H});
      Tensor bwd = packed_slice(flat, (l * 2 + 1) * N * H, {N, H});
      layers.push_back(reshape(concat({fwd, bwd}, 1), {1, N, 2 * H}));
    }
    return L == 1 ? layers[0] : concat(layers, 0);
  }

  CrnnConfig c_;
};

std::shared_ptr<Model> make_crnn(const config::Args& args, const DataMeta& meta) {
  CrnnConfig c;
  c.src_vocab = meta_at(meta, "src_vocab", "crnn");
  c.tgt_vocab = meta_at(meta, "tgt_vocab", "crnn");
  auto pad = meta.find("pad_id");
  c.pad_id = pad == meta.end() ? 0 : pad->second;
  c.embed_dim = args.integer("embed_dim");
  c.conv_channels = args.integer("conv_channels");
  c.conv_layers = args.integer("conv_layers");
  c.kernel = args.integer("kernel");
  if (c.kernel % 2 == 0)
    throw config::RecipeError(fmt::format("{}.kernel: {} is even; an odd kernel keeps the sequence length",
                                          args.where(), c.kernel));
  c.gru = args.string("rnn") == "gru";
  c.hidden = args.integer("hidden");
  c.layers = args.integer("layers");
  c.bidirectional = args.flag("bidirectional");
  c.attention = args.flag("attention");
  c.attention_heads = args.integer("attention_heads");
  if (c.attention && (c.bidirectional ? 2 : 1) * c.hidden % c.attention_heads != 0)
    throw config::RecipeError(fmt::format("{}.attention_heads: {} does not divide the decoder width {}",
                                          args.where(), c.attention_heads,
                                          (c.bidirectional ? 2 : 1) * c.hidden));
  c.dropout = static_cast<float>(args.number("dropout"));
  return std::make_shared<Crnn>(c);
}

}  // namespace

EMU_MODEL(
    crnn,
    "convolutional-recurrent seq2seq translator: embedding, Conv1d+ReLU, (bi)LSTM/GRU encoder, LSTM/GRU "
    "decoder with cross-attention, teacher forcing, token accuracy",
    make_crnn, config::int_key("embed_dim", "128", "source and target embedding width", 1),
    config::int_key("conv_channels", "128", "channels of each convolution", 1),
    config::int_key("conv_layers", "1",
                    "convolutions over the source embeddings (kernel, padding kernel/2, ReLU)", 0),
    config::int_key("kernel", "3", "convolution kernel width (odd)", 1),
    config::choice_key("rnn", "lstm", {"lstm", "gru"}, "recurrent cell of the encoder and the decoder"),
    config::int_key("hidden", "128",
                    "encoder hidden units per direction (the decoder has directions x hidden)", 1),
    config::int_key("layers", "1", "recurrent layers of the encoder and of the decoder", 1),
    config::bool_key("bidirectional", "true", "bidirectional encoder"),
    config::bool_key("attention", "true", "cross-attention of the decoder over the encoder outputs"),
    config::int_key("attention_heads", "1", "heads of the cross-attention", 1),
    config::number_key("dropout", "0.1",
                       "dropout on the embeddings, between recurrent layers and before the output layer", 0,
                       1));

}  // namespace emu::models
