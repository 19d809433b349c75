// The project's one CSV writer and reader (train/csv.h), its one atomic file
// write (train/atomic_file.h) and its one UTF-8 encoder (data/utf8.h):
// hostile fields through writer and reader compared with the original
// strings, the writer's exact bytes against hand-written text, the reader on
// hand-written files (CRLF, quoted line breaks, errors with line numbers),
// whole-file replacement and failures that leave the old file as it was.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "data/file_io.h"
#include "data/utf8.h"
#include "test_data_util.h"
#include "train/atomic_file.h"
#include "train/csv.h"
#include "train/safetensors.h"

using namespace emu::train;
namespace fs = std::filesystem;

namespace {

using emu::test::TempDir;
using emu::test::write_text;

std::string slurp(const std::string& path) {
  const std::vector<uint8_t> b = emu::data::read_bytes(path, "test file", "");
  return std::string(b.begin(), b.end());
}

std::vector<std::vector<std::string>> fields_of(const std::vector<CsvRecord>& records) {
  std::vector<std::vector<std::string>> out;
  for (const CsvRecord& r : records) out.push_back(r.fields);
  return out;
}

// Records no ad-hoc writer survives: every character the format gives a
// meaning to, at the start, middle and end of a field, alone, and doubled.
const std::vector<std::vector<std::string>> kHostile = {
    {"plain", "a,b", ",", ",,", ",lead", "trail,"},
    {"\"", "\"\"", "say \"hi\"", "\"quoted\"", "end\"", "\"start"},
    {"cr\rmid", "\r", "lf\nmid", "\n", "crlf\r\nmid", "\r\n", "\n\r", "\r\n\r\n"},
    {"", "", ""},
    {""},
    {"  lead", "trail  ", " ", "\t tab \t", " \" , \n "},
    {"d\xc3\xa9j\xc3\xa0", "\xe2\x82\xac 5", "\xf0\x9d\x84\x9e", "\xe4\xb8\xad,\xe6\x96\x87", "\xc2\xa0"},
    {"last", ""},
    {"mid", "ends in cr\r"},  // unquoted, its CR and the LF after it would read as CRLF
    {"", "first empty"},
};

}  // namespace

TEST_CASE("csv: hostile fields read back as written", "[csv]") {
  std::string text;
  for (const auto& r : kHostile) text += csv_row(r);
  CHECK(fields_of(parse_csv(text)) == kHostile);

  // Through a file too (the path every reader of the project takes).
  TempDir dir;
  write_file_atomic(dir / "t.csv", text);
  CHECK(fields_of(read_csv_file(dir / "t.csv")) == kHostile);

  // Each field alone as a one-field record, and as the only field of a
  // two-field record with an empty neighbour.
  for (const auto& r : kHostile)
    for (const std::string& f : r) {
      CHECK(fields_of(parse_csv(csv_row({f}))) == std::vector<std::vector<std::string>>{{f}});
      CHECK(fields_of(parse_csv(csv_row({"", f}))) == std::vector<std::vector<std::string>>{{"", f}});
    }
}

TEST_CASE("csv: the writer's exact bytes", "[csv]") {
  // Hand-written expected text (RFC 4180 quoting, LF record ends).
  CHECK(csv_row({"plain", "a,b", "say \"hi\"", "line\nbreak", "", " sp "}) ==
        "plain,\"a,b\",\"say \"\"hi\"\"\",\"line\nbreak\",, sp \n");
  CHECK(csv_row({"cr\rx", "\"", "\xc3\xa9t\xc3\xa9"}) == "\"cr\rx\",\"\"\"\",\xc3\xa9t\xc3\xa9\n");
  CHECK(csv_row({"crlf\r\n"}) == "\"crlf\r\n\"\n");
  CHECK(csv_row({""}) == "\"\"\n");  // not an empty line
  CHECK(csv_row({"", ""}) == ",\n");
  CHECK(csv_row({}) == "\n");
  CHECK(csv_field("1.5e-07") == "1.5e-07");
  CHECK(csv_field("x,y") == "\"x,y\"");
}

TEST_CASE("csv: the reader on hand-written text", "[csv]") {
  // CRLF and LF record ends, empty lines skipped, a quoted field across lines,
  // a doubled quote, an empty last field, no final line end.
  const std::string text = "h1,h2,h3\r\n\n1,\"two\r\nlines\",\r\n\"a\"\"b\",,\"\"\n\nlast,x,\"y\"";
  const std::vector<CsvRecord> r = parse_csv(text);
  REQUIRE(r.size() == 4);
  CHECK(r[0].fields == std::vector<std::string>{"h1", "h2", "h3"});
  CHECK(r[1].fields == std::vector<std::string>{"1", "two\r\nlines", ""});
  CHECK(r[2].fields == std::vector<std::string>{"a\"b", "", ""});
  CHECK(r[3].fields == std::vector<std::string>{"last", "x", "y"});
  CHECK(r[0].line == 1);
  CHECK(r[1].line == 3);
  CHECK(r[2].line == 5);
  CHECK(r[3].line == 7);
  CHECK(parse_csv("").empty());
  CHECK(parse_csv("\n\r\n").empty());
}

TEST_CASE("csv: malformed text is an error naming the line", "[csv]") {
  CHECK_THROWS_WITH(parse_csv("a,b\n\"open,c\nd\n"), Catch::Contains("line 2: a quoted field is not closed"));
  CHECK_THROWS_WITH(parse_csv("a,b\nc,d\"e\n"), Catch::Contains("line 2: a '\"' inside an unquoted field"));
  CHECK_THROWS_WITH(parse_csv("a\n\"x\ny\"z,1\n"), Catch::Contains("line 3: text after the closing '\"'"));
  TempDir dir;
  write_text(dir / "bad.csv", "a\n\"x\n");
  CHECK_THROWS_WITH(read_csv_file(dir / "bad.csv"), Catch::Contains((dir / "bad.csv") + " line 2:"));
  CHECK_THROWS_WITH(read_csv_file(dir / "missing.csv"),
                    Catch::Contains("cannot open " + (dir / "missing.csv") + ": No such file"));
}

TEST_CASE("atomic write: the target is replaced whole", "[atomic]") {
  TempDir dir;
  const std::string path = dir / "f.txt";
  write_file_atomic(path, "first version, long enough to be longer than the second\n");
  CHECK(slurp(path) == "first version, long enough to be longer than the second\n");
  write_file_atomic(path, "second\n");
  CHECK(slurp(path) == "second\n");  // no tail of the old bytes
  write_file_atomic(path, std::string("\0bin\0", 5));
  CHECK(slurp(path) == std::string("\0bin\0", 5));
  CHECK_FALSE(fs::exists(path + ".tmp"));

  // Piece by piece: nothing changes at the target before commit().
  {
    AtomicFile f(path);
    f.write("new ");
    f.write("content", 7);
    CHECK(slurp(path) == std::string("\0bin\0", 5));
    f.commit();
  }
  CHECK(slurp(path) == "new content");
  CHECK_FALSE(fs::exists(path + ".tmp"));
}

TEST_CASE("atomic write: a failure leaves the old file and names the path", "[atomic]") {
  TempDir dir;
  const std::string path = dir / "keep.txt";
  write_file_atomic(path, "old\n");

  // Abandoned before commit (an exception while writing): old file, no temp.
  try {
    AtomicFile f(path);
    f.write("half of the new");
    throw std::runtime_error("interrupted");
  } catch (const std::runtime_error&) {
  }
  CHECK(slurp(path) == "old\n");
  CHECK_FALSE(fs::exists(path + ".tmp"));

  // The temporary file cannot be created (its name is taken by a directory).
  fs::create_directory(path + ".tmp");
  CHECK_THROWS_AS(write_file_atomic(path, "new\n"), FileWriteError);
  CHECK_THROWS_WITH(write_file_atomic(path, "new\n"),
                    Catch::Contains("cannot write " + path + ".tmp: Is a directory"));
  CHECK(slurp(path) == "old\n");
  fs::remove(path + ".tmp");

  // The rename fails (the target is a non-empty directory): the directory
  // stays, the temporary file is removed.
  const std::string dir_target = dir / "sub";
  fs::create_directory(dir_target);
  write_text(dir_target + "/inside", "x");
  CHECK_THROWS_WITH(write_file_atomic(dir_target, "new\n"),
                    Catch::Contains("cannot rename " + dir_target + ".tmp to " + dir_target));
  CHECK(slurp(dir_target + "/inside") == "x");
  CHECK_FALSE(fs::exists(dir_target + ".tmp"));

  // A directory that does not exist.
  const std::string nowhere = dir / "no/such/dir/f.txt";
  CHECK_THROWS_WITH(write_file_atomic(nowhere, "x"),
                    Catch::Contains(nowhere + ".tmp: No such file or directory"));

  // A directory without write permission (root ignores permissions: skipped).
  if (geteuid() != 0) {
    fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec, fs::perm_options::replace);
    CHECK_THROWS_WITH(write_file_atomic(path, "new\n"), Catch::Contains(path + ".tmp: Permission denied"));
    fs::permissions(dir.path(), fs::perms::owner_all, fs::perm_options::add);
    CHECK(slurp(path) == "old\n");
  }

  // Checkpoints take the same path and keep their error type.
  TensorFile tf;
  CHECK_THROWS_AS(write_safetensors(nowhere, tf), CheckpointError);
  CHECK_THROWS_WITH(write_safetensors(nowhere, tf), Catch::Contains(nowhere));
}

TEST_CASE("utf8: the encoder's bytes and a round trip", "[utf8]") {
  // Expected bytes from the Unicode standard's table 3-6 worked by hand.
  const std::vector<std::pair<char32_t, std::string>> known = {
      {U'A', "A"},
      {0x7f, "\x7f"},
      {0x80, "\xc2\x80"},
      {0xe9, "\xc3\xa9"},
      {0x7ff, "\xdf\xbf"},
      {0x800, "\xe0\xa0\x80"},
      {0x20ac, "\xe2\x82\xac"},
      {0xffff, "\xef\xbf\xbf"},
      {0x10000, "\xf0\x90\x80\x80"},
      {0x1d11e, "\xf0\x9d\x84\x9e"},
      {0x10ffff, "\xf4\x8f\xbf\xbf"},
  };
  std::string all;
  std::vector<char32_t> cps;
  for (const auto& [cp, bytes] : known) {
    std::string out;
    emu::data::append_utf8(out, cp);
    CHECK(out == bytes);
    all += bytes;
    cps.push_back(cp);
  }
  CHECK(emu::data::decode_utf8(all) == cps);
  CHECK_THROWS_WITH(emu::data::decode_utf8("ab\xc3"), Catch::Contains("invalid UTF-8 at byte 2"));
  CHECK_THROWS_WITH(emu::data::decode_utf8("\x80"), Catch::Contains("invalid UTF-8 at byte 0"));
}
