#include "data/text.h"

#include <stdexcept>

namespace emu::data {
namespace {

std::vector<char32_t> decode_utf8(const std::string& s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + static_cast<size_t>(len) > s.size())
      throw std::invalid_argument("invalid UTF-8 at byte " + std::to_string(i));
    char32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (int k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc >> 6) != 2) throw std::invalid_argument("invalid UTF-8 at byte " + std::to_string(i));
      cp = (cp << 6) | (cc & 0x3f);
    }
    out.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

char32_t map_code_point(char32_t cp) {
  switch (cp) {
    case U'\t': case 0x00A0: case 0x202F: case 0x2009: case 0x2007: return U' ';
    case 0x2019: case 0x2018: return U'\'';
    case 0x201C: case 0x201D: return U'"';
    case 0x0152: return 0x0153;  // Œ -> œ
    case 0x0178: return 0x00FF;  // Ÿ -> ÿ
    default: break;
  }
  if (cp >= U'A' && cp <= U'Z') return cp + 0x20;
  if (cp >= 0x00C0 && cp <= 0x00DE && cp != 0x00D7) return cp + 0x20;
  return cp;
}

bool is_split_punctuation(char32_t cp) {
  switch (cp) {
    case U'.': case U',': case U'!': case U'?': case U';': case U':': case U'"': case U'(': case U')':
    case 0x00AB: case 0x00BB: case 0x2026: return true;
    default: return false;
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
