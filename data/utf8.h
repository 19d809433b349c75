// UTF-8 to code points and back: the one encoder of the project (the
// translation data's tokenizer in data/text.cpp and JSON's \u escapes in
// train/json.cpp both use it).
#pragma once

#include <string>
#include <vector>

namespace emu::data {

// The code points of `s`; throws std::invalid_argument naming the byte offset
// of a malformed sequence (bad lead byte, bad continuation byte, cut short).
std::vector<char32_t> decode_utf8(const std::string& s);

// Appends the 1..4-byte UTF-8 encoding of `cp` (< 0x110000) to `out`. Like
// JSON's \u escapes, a lone surrogate code point is encoded as it is.
void append_utf8(std::string& out, char32_t cp);

}  // namespace emu::data
