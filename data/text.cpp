#include "data/text.h"

#include <stdexcept>

#include "data/utf8.h"

namespace emu::data {
namespace {

char32_t map_code_point(char32_t cp) {
  switch (cp) {
    case U'\t':
    case 0x00A0:
    case 0x202F:
    case 0x2009:
    case 0x2007:
      return U' ';
    case 0x2019:
    case 0x2018:
      return U'\'';
    case 0x201C:
    case 0x201D:
      return U'"';
    case 0x0152:
      return 0x0153;  // Œ -> œ
    case 0x0178:
      return 0x00FF;  // Ÿ -> ÿ
    default:
      break;
  }
  if (cp >= U'A' && cp <= U'Z') return cp + 0x20;
  if (cp >= 0x00C0 && cp <= 0x00DE && cp != 0x00D7) return cp + 0x20;
  return cp;
}

bool is_split_punctuation(char32_t cp) {
  switch (cp) {
    case U'.':
    case U',':
    case U'!':
    case U'?':
    case U';':
    case U':':
    case U'"':
    case U'(':
    case U')':
    case 0x00AB:
    case 0x00BB:
    case 0x2026:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string normalize_sentence(const std::string& utf8, TokenKind kind) {
  std::vector<char32_t> mapped;
  for (char32_t cp : decode_utf8(utf8)) {
    cp = map_code_point(cp);
    bool pad = kind == TokenKind::Word && is_split_punctuation(cp);
    if (pad) mapped.push_back(U' ');
    mapped.push_back(cp);
    if (pad) mapped.push_back(U' ');
  }
  std::string out;
  bool pending_space = false;
  for (char32_t cp : mapped) {
    if (cp == U' ') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    append_utf8(out, cp);
  }
  return out;
}

std::vector<std::string> tokenize(const std::string& normalized, TokenKind kind) {
  std::vector<std::string> tokens;
  if (kind == TokenKind::Char) {
    for (char32_t cp : decode_utf8(normalized)) {
      tokens.emplace_back();
      append_utf8(tokens.back(), cp);
    }
    return tokens;
  }
  size_t start = 0;
  while (start < normalized.size()) {
    size_t sp = normalized.find(' ', start);
    if (sp == std::string::npos) sp = normalized.size();
    if (sp > start) tokens.push_back(normalized.substr(start, sp - start));
    start = sp + 1;
  }
  return tokens;
}

}  // namespace emu::data
