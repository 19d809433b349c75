// The one CSV writer and reader of the project (RFC 4180 fields): every CSV
// emutrain writes goes through csv_field/csv_row, and every CSV it reads
// (results.csv, aggregate.csv, metrics.csv, ...) through parse_csv, so any
// field the writer writes reads back as the same string.
//
// Writer: a field holding a comma, a double quote, CR or LF is put in double
// quotes with its quotes doubled; any other field is written as it is
// (leading and trailing spaces included). Records end with "\n" (not RFC
// 4180's CRLF: the files stay diff- and grep-friendly, and the reader takes
// both). A record of one empty field is written as `""`, so it is not an empty
// line, which the reader skips.
//
// Reader: fields separated by commas, records by LF or CRLF; inside quotes,
// commas, CR and LF are data and "" is one quote. Empty lines are skipped. A
// quote inside an unquoted field, text after a closing quote or a quote left
// open are errors naming the line.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace emu::train {

class CsvError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One field as written into a record (quoted only when it must be).
std::string csv_field(const std::string& s);
// One record: the fields, escaped, joined by commas, ended by "\n".
std::string csv_row(const std::vector<std::string>& fields);

struct CsvRecord {
  int64_t line = 0;  // the 1-based line the record starts on (for messages)
  std::vector<std::string> fields;
};

// Every record of `text`; throws CsvError "line N: <problem>".
std::vector<CsvRecord> parse_csv(const std::string& text);
// Every record of the file at `path`; throws CsvError naming the path (and
// the OS error when the file cannot be read).
std::vector<CsvRecord> read_csv_file(const std::string& path);

}  // namespace emu::train
