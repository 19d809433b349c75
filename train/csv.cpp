#include "train/csv.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace emu::train {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string csv_row(const std::vector<std::string>& fields) {
  // One empty field alone would be an empty line, which the reader skips.
  if (fields.size() == 1 && fields[0].empty()) return "\"\"\n";
  std::string row;
  for (size_t i = 0; i < fields.size(); ++i) row += (i ? "," : "") + csv_field(fields[i]);
  return row + "\n";
}

namespace {

// Reads one record at a time, keeping the line count for messages.
class CsvParser {
 public:
  explicit CsvParser(const std::string& text) : s_(text) {}

  std::vector<CsvRecord> records() {
    std::vector<CsvRecord> out;
    while (pos_ < s_.size()) {
      if (at_line_end()) {  // an empty line
        skip_line_end();
        continue;
      }
      CsvRecord r;
      r.line = line_;
      r.fields.push_back(field());
      while (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        r.fields.push_back(field());
      }
      if (pos_ < s_.size()) skip_line_end();  // field() stops only at ',', a line end or the end
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  bool at_line_end() const {
    return s_[pos_] == '\n' || (s_[pos_] == '\r' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n');
  }
  void skip_line_end() {
    pos_ += s_[pos_] == '\r' ? 2 : 1;
    ++line_;
  }

  [[noreturn]] void fail(int64_t line, const std::string& problem) const {
    throw CsvError(fmt::format("line {}: {}", line, problem));
  }

  // One field, the cursor left on the ',' or line end after it (or the end).
  std::string field() {
    std::string out;
    if (pos_ < s_.size() && s_[pos_] == '"') {
      const int64_t start = line_;
      ++pos_;
      while (true) {
        if (pos_ >= s_.size()) fail(start, "a quoted field is not closed");
        const char c = s_[pos_++];
        if (c == '"') {
          if (pos_ < s_.size() && s_[pos_] == '"') {
            out += '"';
            ++pos_;
            continue;
          }
          break;
        }
        if (c == '\n') ++line_;
        out += c;
      }
      if (pos_ < s_.size() && s_[pos_] != ',' && !at_line_end())
        fail(line_, "text after the closing '\"' of a quoted field");
      return out;
    }
    while (pos_ < s_.size() && s_[pos_] != ',' && !at_line_end()) {
      if (s_[pos_] == '"')
        fail(line_, "a '\"' inside an unquoted field (quote the field and double the '\"')");
      out += s_[pos_++];
    }
    return out;
  }

  const std::string& s_;
  size_t pos_ = 0;
  int64_t line_ = 1;
};

}  // namespace

std::vector<CsvRecord> parse_csv(const std::string& text) { return CsvParser(text).records(); }

std::vector<CsvRecord> read_csv_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CsvError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw CsvError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  try {
    return parse_csv(ss.str());
  } catch (const CsvError& e) {
    throw CsvError(fmt::format("{} {}", path, e.what()));
  }
}

}  // namespace emu::train
