// English-French sentence pairs from manythings.org/Tatoeba
// (https://www.manythings.org/anki/fra-eng.zip): fra.txt, one pair per line,
// "english<TAB>french", newer files with a third attribution column (ignored).
// Pipeline, each step deterministic:
//   1. normalise and tokenise both sides (data/text.h; word or char tokens);
//   2. drop pairs with an empty side or more than max_tokens tokens on either
//      side (0: no limit);
//   3. keep the first max_pairs remaining pairs in file order (0: all); the file
//      is ordered by English length, so this keeps the shortest pairs, as the
//      Keras character-level seq2seq example does with its first N lines;
//   4. split: philox_permutation(n, split_seed, data_stream(Split, 0)); its first
//      floor(test_fraction * n) pairs are the test split, the next
//      floor(val_fraction * n) validation, the rest training, each kept in file order;
//   5. vocabularies (data/vocab.h) of the source and the target side, built from
//      the training split only (an unseen token reads as <unk>).
// Batch: "src" (N, S) source ids + <eos>; "tgt_in" (N, T) <bos> + target ids;
// "tgt_out" (N, T) target ids + <eos>; "src_len", "tgt_len" (N) the unpadded
// lengths (S_i, T_i, counting <eos> / <bos>); padded with <pad> = 0 to the
// longest in the batch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/text.h"
#include "data/vocab.h"

namespace emu::data {

struct FraEngOptions {
  std::string root;  // folder holding fra.txt
  TokenKind tokens = TokenKind::Word;
  bool reverse = false;  // false: English -> French; true: French -> English
  int64_t max_tokens = 0;
  int64_t max_pairs = 0;
  double test_fraction = 0.1;
  double val_fraction = 0.0;
  uint64_t split_seed = 0;
  int64_t min_freq = 1;
  int64_t max_vocab = 0;  // 0: no limit (counts the 4 specials)
  std::string split = "train";
};

class FraEngDataset : public Dataset {
 public:
  struct Pair {
    std::vector<int64_t> src, tgt;  // ids, without <bos>/<eos>
  };
  FraEngDataset(std::string name, std::vector<Pair> pairs, Vocab src_vocab, Vocab tgt_vocab);
  int64_t size() const override { return static_cast<int64_t>(pairs_.size()); }
  Batch get(const std::vector<int64_t>& indices, uint64_t seed, int64_t epoch) const override;
  // src_vocab, tgt_vocab, pad_id, bos_id, eos_id, unk_id, max_src_len (with
  // <eos>), max_tgt_len (with <bos>)
  std::map<std::string, int64_t> meta() const override;
  std::string describe() const override;
  std::vector<std::string> vocab(const std::string& side) const override;
  const Vocab& src_vocab() const { return src_vocab_; }
  const Vocab& tgt_vocab() const { return tgt_vocab_; }
  const Pair& pair(int64_t i) const { return pairs_.at(static_cast<size_t>(i)); }

 private:
  std::string name_;
  std::vector<Pair> pairs_;
  Vocab src_vocab_, tgt_vocab_;
};

std::unique_ptr<FraEngDataset> load_fra_eng(const FraEngOptions& options);

}  // namespace emu::data
