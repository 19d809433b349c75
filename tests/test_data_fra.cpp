// English-French pairs (fra.txt), written here: normalisation, filtering,
// split, vocabularies from the training split, padded batches.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "data/fra_eng.h"
#include "test_data_util.h"

using namespace emu;
using emu::test::TempDir;

namespace {

const char* kFra =
    "Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272 (CM) & #1158250 (Wittydev)\n"
    "Hi.\tSalut !\n"
    "Run!\tCours\xe2\x80\xaf!\n"  // narrow no-break space before '!'
    "Go now.\tVas-y maintenant.\n"
    "I see.\tJe comprends.\n"
    "I try.\tJ\xe2\x80\x99"
    "essaye.\n"  // typographic apostrophe
    "I WON!\tJ'ai gagn\xc3\xa9 !\n"
    "\n"
    "Go on.\tPoursuis.\r\n"
    "This sentence is far too long to keep.\tCette phrase est beaucoup trop longue.\n"
    "Hello!\t\xc3\x80 bient\xc3\xb4t !\n";

// The kept pairs, normalised (max_tokens 4 drops the long one).
const std::vector<std::pair<std::string, std::string>> kPairs = {{"go .", "va !"},
                                                                 {"hi .", "salut !"},
                                                                 {"run !", "cours !"},
                                                                 {"go now .", "vas-y maintenant ."},
                                                                 {"i see .", "je comprends ."},
                                                                 {"i try .", "j'essaye ."},
                                                                 {"i won !", "j'ai gagné !"},
                                                                 {"go on .", "poursuis ."},
                                                                 {"hello !", "à bientôt !"}};

std::string decode(const std::vector<float>& ids, const std::vector<std::string>& vocab, size_t skip_front) {
  std::string s;
  for (size_t k = skip_front; k < ids.size(); ++k) {
    int64_t id = static_cast<int64_t>(ids[k]);
    if (id == data::kEosId || id == data::kPadId) break;
    s += (s.empty() ? "" : " ") + vocab[static_cast<size_t>(id)];
  }
  return s;
}

}  // namespace

TEST_CASE("sentence normalisation and tokens", "[data][fra]") {
  using data::TokenKind;
  CHECK(data::normalize_sentence("Run!", TokenKind::Word) == "run !");
  CHECK(data::normalize_sentence("Cours\xe2\x80\xaf!", TokenKind::Word) == "cours !");
  CHECK(data::normalize_sentence("  Qui \xc3\x8aTES-vous\xc2\xa0?  ", TokenKind::Word) == "qui êtes-vous ?");
  CHECK(data::normalize_sentence("It\xe2\x80\x99s \xc2\xab"
                                 "OK\xc2\xbb, \xc5\x92uvre.",
                                 TokenKind::Word) == "it's « ok » , œuvre .");
  CHECK(data::normalize_sentence("Va  !", TokenKind::Char) == "va !");
  CHECK(data::tokenize("va !", TokenKind::Char) == std::vector<std::string>{"v", "a", " ", "!"});
  CHECK(data::tokenize("à bientôt", TokenKind::Char).size() == 9);
  CHECK(data::tokenize("j'ai gagné !", TokenKind::Word) == std::vector<std::string>{"j'ai", "gagné", "!"});
  CHECK_THROWS_WITH(data::normalize_sentence("bad \xc3", TokenKind::Word), Catch::Contains("invalid UTF-8"));
}

TEST_CASE("fra_eng: filtered pairs, seeded split, training vocabulary, padded batches", "[data][fra]") {
  TempDir dir;
  emu::test::write_text(dir / "fra.txt", kFra);
  data::FraEngOptions o;
  o.root = dir.path();
  o.max_tokens = 4;
  o.test_fraction = 0.25;  // floor(9 * 0.25) = 2
  o.val_fraction = 0.2;    // floor(9 * 0.2) = 1
  o.split_seed = 3;

  std::map<std::string, std::unique_ptr<data::FraEngDataset>> ds;
  for (const char* split : {"train", "val", "test"}) {
    o.split = split;
    ds[split] = data::load_fra_eng(o);
  }
  CHECK(ds["train"]->size() == 6);
  CHECK(ds["val"]->size() == 1);
  CHECK(ds["test"]->size() == 2);

  // Decoding the training split gives back the normalised pairs exactly.
  const auto src_vocab = ds["train"]->vocab("src");
  const auto tgt_vocab = ds["train"]->vocab("tgt");
  CHECK(std::vector<std::string>(src_vocab.begin(), src_vocab.begin() + 4) ==
        std::vector<std::string>{"<pad>", "<bos>", "<eos>", "<unk>"});
  std::vector<int64_t> all(6);
  for (int i = 0; i < 6; ++i) all[i] = i;
  data::Batch b = ds["train"]->get(all, 0, 0);
  std::vector<float> src = emu::test::field(b, "src"), tin = emu::test::field(b, "tgt_in"),
                     tout = emu::test::field(b, "tgt_out");
  const int64_t S = b.at("src").dim(1), T = b.at("tgt_in").dim(1);
  CHECK(b.at("tgt_out").dim(1) == T);
  std::set<std::pair<std::string, std::string>> train_pairs;
  std::map<std::string, int> src_counts;
  int64_t max_s = 0, max_t = 0;
  std::vector<float> src_len = emu::test::field(b, "src_len"), tgt_len = emu::test::field(b, "tgt_len");
  for (int i = 0; i < 6; ++i) {
    std::vector<float> s(src.begin() + i * S, src.begin() + (i + 1) * S);
    std::vector<float> ti(tin.begin() + i * T, tin.begin() + (i + 1) * T);
    std::vector<float> to(tout.begin() + i * T, tout.begin() + (i + 1) * T);
    std::string en = decode(s, src_vocab, 0), fr = decode(to, tgt_vocab, 0);
    CHECK(std::find(kPairs.begin(), kPairs.end(), std::make_pair(en, fr)) != kPairs.end());
    train_pairs.insert({en, fr});
    CHECK(ti[0] == float(data::kBosId));
    CHECK(decode(ti, tgt_vocab, 1) == fr);
    // src: tokens, <eos>, then padding; tgt_out: tokens, <eos>; tgt_in is tgt_out shifted right.
    int64_t ns = static_cast<int64_t>(src_len[i]), nt = static_cast<int64_t>(tgt_len[i]);
    CHECK(s[ns - 1] == float(data::kEosId));
    for (int64_t k = ns; k < S; ++k) CHECK(s[k] == 0.0f);
    CHECK(to[nt - 1] == float(data::kEosId));
    for (int64_t k = 1; k < nt; ++k) CHECK(ti[k] == to[k - 1]);
    for (int64_t k = nt; k < T; ++k) CHECK((ti[k] == 0.0f && to[k] == 0.0f));
    max_s = std::max(max_s, ns);
    max_t = std::max(max_t, nt);
    size_t pos = 0;
    while (pos <= en.size()) {
      size_t sp = std::min(en.find(' ', pos), en.size());
      ++src_counts[en.substr(pos, sp - pos)];
      pos = sp + 1;
    }
  }
  CHECK(train_pairs.size() == 6);
  CHECK(S == max_s);  // padded to the batch's longest
  CHECK(T == max_t);
  // The vocabulary: training tokens only, by count then bytewise.
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& [tok, n] : src_counts) ranked.push_back({-n, tok});
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> want = {"<pad>", "<bos>", "<eos>", "<unk>"};
  for (const auto& r : ranked) want.push_back(r.second);
  CHECK(src_vocab == want);

  // Held-out splits: pairs not in training, unseen tokens read as <unk>.
  for (const char* split : {"val", "test"}) {
    CHECK(ds[split]->vocab("src") == src_vocab);
    for (int64_t i = 0; i < ds[split]->size(); ++i) {
      data::Batch hb = ds[split]->get({i}, 0, 0);
      std::string en = decode(emu::test::field(hb, "src"), src_vocab, 0);
      std::string fr = decode(emu::test::field(hb, "tgt_out"), tgt_vocab, 0);
      bool found = false;
      for (const auto& p : kPairs) {
        if (train_pairs.count(p)) continue;
        // Compare token by token, <unk> matching an unseen token.
        auto same = [&](const std::string& got, const std::string& ref,
                        const std::vector<std::string>& vocab) {
          std::vector<std::string> g, r;
          for (size_t a = 0, e; a <= got.size(); a = e + 1)
            g.push_back(got.substr(a, (e = std::min(got.find(' ', a), got.size())) - a));
          for (size_t a = 0, e; a <= ref.size(); a = e + 1)
            r.push_back(ref.substr(a, (e = std::min(ref.find(' ', a), ref.size())) - a));
          if (g.size() != r.size()) return false;
          for (size_t k = 0; k < g.size(); ++k) {
            bool known = std::find(vocab.begin(), vocab.end(), r[k]) != vocab.end();
            if (g[k] != (known ? r[k] : std::string("<unk>"))) return false;
          }
          return true;
        };
        found = found || (same(en, p.first, src_vocab) && same(fr, p.second, tgt_vocab));
      }
      CHECK(found);
    }
  }

  // The split is a function of split_seed: another seed gives another training set.
  int changed = 0;
  for (uint64_t seed : {4, 5, 6}) {
    o.split_seed = seed;
    o.split = "test";
    auto other = data::load_fra_eng(o);
    std::vector<float> a = emu::test::field(other->get({0, 1}, 0, 0), "src");
    o.split_seed = 3;
    changed += a != emu::test::field(ds["test"]->get({0, 1}, 0, 0), "src");
  }
  CHECK(changed >= 1);
}

TEST_CASE("fra_eng: max_pairs, char tokens, reverse, errors", "[data][fra]") {
  TempDir dir;
  emu::test::write_text(dir / "fra.txt", kFra);
  data::FraEngOptions o;
  o.root = dir.path();
  o.max_pairs = 3;  // the first three: go . / hi . / run !
  o.test_fraction = 0;
  o.tokens = data::TokenKind::Char;
  auto ds = data::load_fra_eng(o);
  REQUIRE(ds->size() == 3);
  data::Batch b = ds->get({2}, 0, 0);
  CHECK(decode(emu::test::field(b, "src"), ds->vocab("src"), 0) == "r u n !");  // no space added in char mode
  CHECK(decode(emu::test::field(b, "tgt_out"), ds->vocab("tgt"), 0) == "c o u r s   !");
  CHECK(ds->meta()["max_src_len"] == 5);  // "run!" + <eos>
  o.reverse = true;
  auto rev = data::load_fra_eng(o);
  CHECK(decode(emu::test::field(rev->get({0}, 0, 0), "src"), rev->vocab("src"), 0) == "v a   !");

  CHECK_THROWS_WITH(data::load_fra_eng(data::FraEngOptions{}),
                    Catch::Contains("fra.txt") && Catch::Contains("manythings.org"));
  emu::test::write_text(dir / "fra.txt", "Go.\tVa !\nno tab here\n");
  CHECK_THROWS_WITH(data::load_fra_eng(o), Catch::Contains("line 2: no tab"));
  emu::test::write_text(dir / "fra.txt", "Go.\tVa \xff!\n");
  CHECK_THROWS_WITH(data::load_fra_eng(o), Catch::Contains("line 1: invalid UTF-8"));
}
