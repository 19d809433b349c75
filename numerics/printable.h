// Echoing user input in an error message: a message is one line of text
// whatever the input held (a newline or a control byte in a spec, a key, a
// tensor name or a file must not break it across lines or into the terminal).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace emu {

// s with every byte outside printable ASCII (0x20..0x7e) written as \xHH, cut
// to max_len bytes of input with "..." after: for tokens echoed on their own.
std::string printable(std::string_view s, size_t max_len = 200);

// s with every control byte (below 0x20, and 0x7f) written as \xHH and every
// other byte (UTF-8 included) kept: for whole messages.
std::string one_line(std::string_view s);

// The base of the errors a parser or loader throws on bad input (FormatError,
// RecipeError, SweepError, JsonError, CheckpointError): what() is one line by
// construction, so no echoed value can break it (tests/fuzz checks this).
class OneLineError : public std::runtime_error {
 public:
  explicit OneLineError(const std::string& what) : std::runtime_error(one_line(what)) {}
  explicit OneLineError(const char* what) : OneLineError(std::string(what)) {}
};

}  // namespace emu
