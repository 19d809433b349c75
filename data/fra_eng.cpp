#include "data/fra_eng.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "data/draws.h"
#include "data/errors.h"
#include "data/file_io.h"

namespace emu::data {
namespace {

const char* kFraEngWhat = "UTF-8 lines 'english<TAB>french[<TAB>attribution]'";

struct TokenPair {
  std::vector<std::string> src, tgt;
};

}  // namespace

FraEngDataset::FraEngDataset(std::string name, std::vector<Pair> pairs, Vocab src_vocab, Vocab tgt_vocab)
    : name_(std::move(name)),
      pairs_(std::move(pairs)),
      src_vocab_(std::move(src_vocab)),
      tgt_vocab_(std::move(tgt_vocab)) {}

Batch FraEngDataset::get(const std::vector<int64_t>& indices, uint64_t, int64_t) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  int64_t s_len = 0, t_len = 0;
  for (int64_t index : indices) {
    if (index < 0 || index >= size())
      throw std::out_of_range(name_ + ": example " + std::to_string(index) + " out of range (size " +
                              std::to_string(size()) + ")");
    const Pair& p = pairs_[static_cast<size_t>(index)];
    s_len = std::max<int64_t>(s_len, static_cast<int64_t>(p.src.size()) + 1);
    t_len = std::max<int64_t>(t_len, static_cast<int64_t>(p.tgt.size()) + 1);
  }
  Tensor src = Tensor::zeros({n, s_len}), tgt_in = Tensor::zeros({n, t_len}),
         tgt_out = Tensor::zeros({n, t_len});
  Tensor src_len = Tensor::zeros({n}), tgt_len = Tensor::zeros({n});
  for (int64_t i = 0; i < n; ++i) {
    const Pair& p = pairs_[static_cast<size_t>(indices[static_cast<size_t>(i)])];
    const int64_t ns = static_cast<int64_t>(p.src.size()), nt = static_cast<int64_t>(p.tgt.size());
    float* s = src.data() + i * s_len;
    for (int64_t k = 0; k < ns; ++k) s[k] = static_cast<float>(p.src[static_cast<size_t>(k)]);
    s[ns] = static_cast<float>(kEosId);
    float* ti = tgt_in.data() + i * t_len;
    float* to = tgt_out.data() + i * t_len;
    ti[0] = static_cast<float>(kBosId);
    for (int64_t k = 0; k < nt; ++k) {
      ti[k + 1] = static_cast<float>(p.tgt[static_cast<size_t>(k)]);
      to[k] = static_cast<float>(p.tgt[static_cast<size_t>(k)]);
    }
    to[nt] = static_cast<float>(kEosId);
    src_len.data()[i] = static_cast<float>(ns + 1);
    tgt_len.data()[i] = static_cast<float>(nt + 1);
  }
  Batch b;
  b.tensors["src"] = src;
  b.tensors["tgt_in"] = tgt_in;
  b.tensors["tgt_out"] = tgt_out;
  b.tensors["src_len"] = src_len;
  b.tensors["tgt_len"] = tgt_len;
  b.size = n;
  return b;
}

std::map<std::string, int64_t> FraEngDataset::meta() const {
  int64_t ms = 0, mt = 0;
  for (const Pair& p : pairs_) {
    ms = std::max<int64_t>(ms, static_cast<int64_t>(p.src.size()) + 1);
    mt = std::max<int64_t>(mt, static_cast<int64_t>(p.tgt.size()) + 1);
  }
  return {{"src_vocab", src_vocab_.size()},
          {"tgt_vocab", tgt_vocab_.size()},
          {"pad_id", kPadId},
          {"bos_id", kBosId},
          {"eos_id", kEosId},
          {"unk_id", kUnkId},
          {"max_src_len", ms},
          {"max_tgt_len", mt}};
}

std::string FraEngDataset::describe() const {
  auto m = meta();
  return name_ + ", " + std::to_string(size()) + " pairs, vocabularies " + std::to_string(m["src_vocab"]) +
         " / " + std::to_string(m["tgt_vocab"]) + ", longest " + std::to_string(m["max_src_len"]) + " / " +
         std::to_string(m["max_tgt_len"]) + " ids";
}

std::vector<std::string> FraEngDataset::vocab(const std::string& side) const {
  if (side == "src") return src_vocab_.tokens();
  if (side == "tgt") return tgt_vocab_.tokens();
  throw std::invalid_argument(name_ + ": no vocabulary '" + side + "' (have: src, tgt)");
}

std::unique_ptr<FraEngDataset> load_fra_eng(const FraEngOptions& o) {
  if (o.split != "train" && o.split != "val" && o.split != "test")
    throw std::invalid_argument("fra_eng: split must be train, val or test, got '" + o.split + "'");
  if (!(o.test_fraction >= 0 && o.val_fraction >= 0 && o.test_fraction + o.val_fraction < 1))
    throw std::invalid_argument("fra_eng: test_fraction and val_fraction must be >= 0 with a sum below 1");
  const std::string path = join_path(o.root, "fra.txt");
  std::vector<std::string> lines = read_lines(path, kFraEngWhat, kFraEngUrl);

  std::vector<TokenPair> pairs;
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    const std::string& line = lines[ln];
    if (line.empty()) continue;
    size_t t1 = line.find('\t');
    if (t1 == std::string::npos)
      file_error(path, "line " + std::to_string(ln + 1) + ": no tab (expected " + kFraEngWhat + ")",
                 kFraEngUrl);
    size_t t2 = line.find('\t', t1 + 1);
    std::string en = line.substr(0, t1);
    std::string fr = line.substr(t1 + 1, t2 == std::string::npos ? std::string::npos : t2 - t1 - 1);
    TokenPair p;
    try {
      p.src = tokenize(normalize_sentence(o.reverse ? fr : en, o.tokens), o.tokens);
      p.tgt = tokenize(normalize_sentence(o.reverse ? en : fr, o.tokens), o.tokens);
    } catch (const std::invalid_argument& e) {
      file_error(path, "line " + std::to_string(ln + 1) + ": " + e.what() + " (expected " + kFraEngWhat + ")",
                 kFraEngUrl);
    }
    if (p.src.empty() || p.tgt.empty()) continue;
    if (o.max_tokens > 0 && (static_cast<int64_t>(p.src.size()) > o.max_tokens ||
                             static_cast<int64_t>(p.tgt.size()) > o.max_tokens))
      continue;
    pairs.push_back(std::move(p));
    if (o.max_pairs > 0 && static_cast<int64_t>(pairs.size()) == o.max_pairs) break;
  }
  const int64_t n = static_cast<int64_t>(pairs.size());
  if (n == 0)
    file_error(path, "no sentence pairs left after filtering (expected " + std::string(kFraEngWhat) + ")",
               kFraEngUrl);

  const int64_t n_test = static_cast<int64_t>(std::floor(o.test_fraction * static_cast<double>(n)));
  const int64_t n_val = static_cast<int64_t>(std::floor(o.val_fraction * static_cast<double>(n)));
  std::vector<int64_t> perm = philox_permutation(n, o.split_seed, data_stream(DataDraw::Split, 0));
  std::vector<uint8_t> part(static_cast<size_t>(n), 0);  // 0 train, 1 val, 2 test
  for (int64_t i = 0; i < n_test + n_val; ++i)
    part[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i < n_test ? 2 : 1;
  const uint8_t want = o.split == "train" ? 0 : o.split == "val" ? 1 : 2;

  std::vector<std::vector<std::string>> train_src, train_tgt;
  for (int64_t i = 0; i < n; ++i)
    if (part[static_cast<size_t>(i)] == 0) {
      train_src.push_back(pairs[static_cast<size_t>(i)].src);
      train_tgt.push_back(pairs[static_cast<size_t>(i)].tgt);
    }
  Vocab src_vocab = Vocab::build(train_src, o.min_freq, o.max_vocab);
  Vocab tgt_vocab = Vocab::build(train_tgt, o.min_freq, o.max_vocab);

  std::vector<FraEngDataset::Pair> encoded;
  for (int64_t i = 0; i < n; ++i) {
    if (part[static_cast<size_t>(i)] != want) continue;
    FraEngDataset::Pair p;
    for (const auto& t : pairs[static_cast<size_t>(i)].src) p.src.push_back(src_vocab.id(t));
    for (const auto& t : pairs[static_cast<size_t>(i)].tgt) p.tgt.push_back(tgt_vocab.id(t));
    encoded.push_back(std::move(p));
  }
  std::string name = std::string(o.reverse ? "fra->eng " : "eng->fra ") + o.split + " (" +
                     (o.tokens == TokenKind::Word ? "word" : "char") + " tokens)";
  return std::make_unique<FraEngDataset>(name, std::move(encoded), std::move(src_vocab),
                                         std::move(tgt_vocab));
}

}  // namespace emu::data
