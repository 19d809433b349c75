// Sentence normalisation and tokenisation for the translation data (fra.txt).
// normalize_sentence, in order:
//   1. spaces: tab, no-break space U+00A0, narrow no-break space U+202F (French
//      typography puts one before ! ? : ;), thin space U+2009, figure space
//      U+2007 -> ' ';
//   2. quotes: U+2019 and U+2018 -> '\'', U+201C and U+201D -> '"';
//   3. lowercase: A-Z, U+00C0..U+00DE except U+00D7 (+0x20: À -> à, É -> é),
//      Œ -> œ, Ÿ -> ÿ; everything else is left as it is;
//   4. word tokens only: a space before and after each of . , ! ? ; : " ( ) « »
//      and … (U+2026), so punctuation marks are tokens of their own; apostrophes
//      and hyphens stay inside words ("j'ai", "arrête-toi");
//   5. runs of spaces -> one space, none at either end.
// Tokens: words = the space-separated pieces; chars = the code points (spaces
// included), each as its UTF-8 string.
#pragma once

#include <string>
#include <vector>

namespace emu::data {

enum class TokenKind { Word, Char };

// Throws std::invalid_argument on invalid UTF-8.
std::string normalize_sentence(const std::string& utf8, TokenKind kind);
std::vector<std::string> tokenize(const std::string& normalized, TokenKind kind);

}  // namespace emu::data
