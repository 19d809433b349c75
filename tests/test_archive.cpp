// Extraction of .tar.gz and .zip members, on archives written by independent
// tools: Python's tarfile (pax, GNU and ustar formats) and zipfile (stored,
// deflated, streamed with data descriptors), plus GNU tar and Info-ZIP zip
// where installed. Extracted bytes are compared with the files the archives
// were made from; damaged archives must give a one-line error naming the
// archive, never a crash or a hang.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/archive.h"
#include "tests/test_data_util.h"

namespace {

namespace fs = std::filesystem;
using emu::data::archive_kind_for;
using emu::data::archive_members;
using emu::data::ArchiveKind;
using emu::data::extract_members;
using emu::data::MemberTarget;
using emu::test::TempDir;

const std::string kLongName =
    "deep/" + std::string(60, 'd') + "/" + std::string(60, 'e') + "/long_file_name.bin";  // 146 chars

// Source files, in the order the script adds them.
const std::vector<std::string> kMembers = {"empty.bin", "one.bin",          "random.bin",
                                           "text.txt",  "nested/a/b/c.txt", kLongName};

// argv: src dir, out dir. Writes every archive the tests read; members are
// added in kMembers order (read from members.txt) with a directory entry too.
const char* kScript = R"PY(
import io, os, sys, tarfile, zipfile
src, out = sys.argv[1], sys.argv[2]
names = open(os.path.join(src, "..", "members.txt")).read().split("\n")
def tar(path, fmt, mode):
    with tarfile.open(os.path.join(out, path), mode, format=fmt) as t:
        t.add(os.path.join(src, "nested"), "nested", recursive=False)
        for n in names:
            t.add(os.path.join(src, n), n)
tar("pax.tar.gz", tarfile.PAX_FORMAT, "w:gz")
tar("gnu.tgz", tarfile.GNU_FORMAT, "w:gz")
tar("ustar.tar.gz", tarfile.USTAR_FORMAT, "w:gz")
tar("plain.tar", tarfile.GNU_FORMAT, "w")
def add_zip(z):
    z.write(os.path.join(src, "nested"), "nested/")
    for n in names:
        method = zipfile.ZIP_STORED if n == "random.bin" else zipfile.ZIP_DEFLATED
        z.write(os.path.join(src, n), n, compress_type=method)
with zipfile.ZipFile(os.path.join(out, "py.zip"), "w") as z:
    add_zip(z)
    with open(os.path.join(out, "offsets.txt"), "w") as f:
        for i in z.infolist():
            f.write("%s %d\n" % (i.filename, i.header_offset))
# Hostile and odd entries: names that would escape a folder, a symlink.
with tarfile.open(os.path.join(out, "hostile.tar.gz"), "w:gz") as t:
    for n, data in (("../evil.txt", b"evil"), ("/abs/evil.txt", b"abs")):
        info = tarfile.TarInfo(n)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    link = tarfile.TarInfo("link.txt")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    t.addfile(link)
# Unseekable output: zipfile writes data descriptors (flag bit 3).
if len(sys.argv) > 3:
    with zipfile.ZipFile(sys.stdout.buffer, "w") as z:
        add_zip(z)
)PY";

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

bool tool_exists(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

void run(const std::string& cmd) {
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
}

// The source files and every archive made from them, once for all tests.
struct Fixture {
  TempDir dir;
  std::string src = dir / "src";
  std::string arc = dir / "arc";

  Fixture() {
    emu::test::ByteSource bytes(21);
    auto random = [&](size_t n) {
      std::vector<uint8_t> v(n);
      for (auto& b : v) b = bytes.next();
      return v;
    };
    std::string text;
    for (int i = 0; text.size() < 300000; ++i)
      text += "line " + std::to_string(i) + " of a compressible text\n";
    emu::test::write_file(src + "/empty.bin", {});
    emu::test::write_file(src + "/one.bin", {0x5a});
    emu::test::write_file(src + "/random.bin", random(1 << 20));
    emu::test::write_text(src + "/text.txt", text);
    emu::test::write_text(src + "/nested/a/b/c.txt", "nested\n");
    emu::test::write_file(src + "/" + kLongName, random(1000));
    std::string list;
    for (const std::string& m : kMembers) list += (list.empty() ? "" : "\n") + m;
    emu::test::write_text(dir / "members.txt", list);
    emu::test::write_text(dir / "make.py", kScript);
    fs::create_directories(arc);
    std::string script = "python3 '" + dir / "make.py" + "' '" + src + "' '" + arc + "'";
    run(script);
    // Through a pipe, so zipfile cannot seek back to fill in sizes.
    run(script + " stream | cat > '" + arc + "/stream.zip'");
  }
  std::string archive(const std::string& name) const { return arc + "/" + name; }
};

const Fixture& fixture() {
  static Fixture f;
  return f;
}

// Extracts `members` into a fresh folder and compares each with its source.
void check_extracts(const std::string& archive, const std::string& prefix,
                    const std::vector<std::string>& members) {
  const Fixture& fx = fixture();
  TempDir out;
  std::vector<MemberTarget> targets;
  for (size_t i = 0; i < members.size(); ++i)
    targets.push_back({prefix + members[i], out / ("m" + std::to_string(i))});
  extract_members(archive, archive_kind_for(archive), targets);
  for (size_t i = 0; i < members.size(); ++i) {
    INFO(archive << ": " << members[i]);
    CHECK(read_all(targets[i].dest) == read_all(fx.src + "/" + members[i]));
  }
  // Only the dest files were written.
  CHECK(static_cast<size_t>(std::distance(fs::directory_iterator(out.path()), fs::directory_iterator())) ==
        members.size());
}

// The error of `f`, checked to be one line starting with the archive's name.
template <class F>
std::string error_of(const std::string& archive, F f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.rfind(archive + ": ", 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
    return msg;
  }
  FAIL("no error from " << archive);
  return "";
}

std::string extract_error(const std::string& archive, const std::vector<std::string>& members) {
  TempDir out;
  std::vector<MemberTarget> targets;
  for (const std::string& m : members) targets.push_back({m, out / "x"});
  return error_of(archive, [&] { extract_members(archive, archive_kind_for(archive), targets); });
}

std::string write_copy(const std::string& to, const std::vector<uint8_t>& bytes) {
  emu::test::write_file(to, bytes);
  return to;
}

void put_le16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}
uint16_t get_le16(const std::vector<uint8_t>& b, size_t at) { return uint16_t(b[at] | (b[at + 1] << 8)); }

// Offset of the central-directory entry of `name` ("PK\1\2" + name at 46).
size_t central_entry(const std::vector<uint8_t>& zip, const std::string& name) {
  for (size_t i = 0; i + 46 + name.size() <= zip.size(); ++i)
    if (zip[i] == 'P' && zip[i + 1] == 'K' && zip[i + 2] == 1 && zip[i + 3] == 2 &&
        get_le16(zip, i + 28) == name.size() &&
        std::equal(name.begin(), name.end(), zip.begin() + static_cast<long>(i + 46)))
      return i;
  FAIL("no central entry for " << name);
  return 0;
}

// Where a member's data starts, from the local header Python reported.
size_t zip_data_start(const std::vector<uint8_t>& zip, const std::string& name) {
  std::ifstream offsets(fixture().archive("offsets.txt"));
  std::string n;
  size_t off = 0;
  while (offsets >> n >> off)
    if (n == name) return off + 30 + get_le16(zip, off + 26) + get_le16(zip, off + 28);
  FAIL("no offset for " << name);
  return 0;
}

}  // namespace

TEST_CASE("archive: kind from the file name") {
  CHECK(archive_kind_for("cora.tgz") == ArchiveKind::TarGz);
  CHECK(archive_kind_for("/x/cifar-10-binary.tar.gz") == ArchiveKind::TarGz);
  CHECK(archive_kind_for("fra-eng.zip") == ArchiveKind::Zip);
  CHECK(archive_kind_for("UCR.ZIP") == ArchiveKind::Zip);
  CHECK_THROWS_AS(archive_kind_for("x.tar"), std::invalid_argument);
  CHECK_THROWS_WITH(archive_kind_for("data.gz"), Catch::StartsWith("data.gz: "));
}

TEST_CASE("archive: members of Python-made archives, in order, files only") {
  const Fixture& fx = fixture();
  for (const char* name : {"pax.tar.gz", "gnu.tgz", "ustar.tar.gz", "py.zip", "stream.zip"}) {
    INFO(name);
    std::string a = fx.archive(name);
    CHECK(archive_members(a, archive_kind_for(a)) == kMembers);
  }
  // stream.zip really has data descriptors (sizes only in the central directory).
  std::vector<uint8_t> stream = read_all(fx.archive("stream.zip"));
  CHECK((get_le16(stream, central_entry(stream, "one.bin") + 8) & 0x8) != 0);
  std::string hostile = fx.archive("hostile.tar.gz");
  CHECK(archive_members(hostile, ArchiveKind::TarGz) ==
        std::vector<std::string>{"../evil.txt", "/abs/evil.txt"});
}

TEST_CASE("archive: extracted members equal their sources") {
  const Fixture& fx = fixture();
  // A subset: text.txt is left in the archive and must be skipped.
  std::vector<std::string> subset = {"one.bin", "empty.bin", "random.bin", kLongName, "nested/a/b/c.txt"};
  for (const char* name : {"pax.tar.gz", "gnu.tgz", "ustar.tar.gz", "py.zip", "stream.zip"})
    check_extracts(fx.archive(name), "", subset);
  // Deflate output much larger than one chunk of input.
  check_extracts(fx.archive("py.zip"), "", {"text.txt"});
  check_extracts(fx.archive("stream.zip"), "", {"text.txt"});
  check_extracts(fx.archive("pax.tar.gz"), "", {"text.txt"});
}

TEST_CASE("archive: dests are overwritten; one member may go to two dests") {
  const Fixture& fx = fixture();
  TempDir out;
  emu::test::write_text(out / "a", std::string(5000, 'x'));  // longer than the member: must be truncated
  for (const char* name : {"gnu.tgz", "py.zip"}) {
    std::string a = fx.archive(name);
    extract_members(a, archive_kind_for(a),
                    {{"nested/a/b/c.txt", out / "a"}, {"nested/a/b/c.txt", out / "b"}});
    CHECK(read_all(out / "a") == read_all(fx.src + "/nested/a/b/c.txt"));
    CHECK(read_all(out / "b") == read_all(fx.src + "/nested/a/b/c.txt"));
  }
}

TEST_CASE("archive: hostile member names only ever reach the dest path") {
  const Fixture& fx = fixture();
  TempDir out;
  fs::create_directories(out / "in");
  extract_members(fx.archive("hostile.tar.gz"), ArchiveKind::TarGz, {{"../evil.txt", out / "in/x"}});
  CHECK(read_all(out / "in/x") == std::vector<uint8_t>{'e', 'v', 'i', 'l'});
  CHECK(!fs::exists(out / "evil.txt"));
  CHECK(!fs::exists(fx.arc + "/../evil.txt"));
  // A symlink is not a file to extract.
  CHECK_THAT(extract_error(fx.archive("hostile.tar.gz"), {"link.txt"}),
             Catch::Contains("no member 'link.txt'"));
}

TEST_CASE("archive: GNU base-256 size fields") {
  // GNU tar writes sizes of 8 GiB and more in base-256; rewrite one.bin's
  // octal size (header at block 2: nested/, empty.bin, one.bin) that way.
  const Fixture& fx = fixture();
  TempDir tmp;
  std::vector<uint8_t> tar = read_all(fx.archive("plain.tar"));
  uint8_t* h = tar.data() + 1024;
  REQUIRE(std::string(reinterpret_cast<char*>(h)) == "one.bin");
  std::fill(h + 124, h + 136, uint8_t(0));
  h[124] = 0x80;
  h[135] = 1;
  std::fill(h + 148, h + 156, uint8_t(' '));
  unsigned sum = 0;
  for (int i = 0; i < 512; ++i) sum += h[i];
  std::snprintf(reinterpret_cast<char*>(h + 148), 8, "%06o", sum);  // "dddddd\0" then the space left in place
  emu::test::write_gzip(tmp / "b256.tar.gz", tar);
  extract_members(tmp / "b256.tar.gz", ArchiveKind::TarGz, {{"one.bin", tmp / "one"}});
  CHECK(read_all(tmp / "one") == std::vector<uint8_t>{0x5a});
}

TEST_CASE("archive: GNU tar and Info-ZIP archives, where installed") {
  const Fixture& fx = fixture();
  std::vector<std::string> subset = {"random.bin", kLongName, "empty.bin"};
  if (tool_exists("tar")) {
    std::string a = fx.archive("cli.tar.gz");
    run("tar -czf '" + a + "' -C '" + fx.src + "' .");
    std::vector<std::string> names = archive_members(a, ArchiveKind::TarGz);
    std::set<std::string> expected;
    for (const std::string& m : kMembers) expected.insert("./" + m);
    CHECK(std::set<std::string>(names.begin(), names.end()) == expected);
    check_extracts(a, "./", subset);
  } else {
    WARN("GNU tar not installed: its archives untested");
  }
  if (tool_exists("zip")) {
    std::string a = fx.archive("cli.zip");
    run("cd '" + fx.src + "' && zip -qr '" + a + "' .");
    std::vector<std::string> names = archive_members(a, ArchiveKind::Zip);
    CHECK(std::set<std::string>(names.begin(), names.end()) ==
          std::set<std::string>(kMembers.begin(), kMembers.end()));
    check_extracts(a, "", subset);
  } else {
    WARN("Info-ZIP zip not installed: its archives untested");
  }
}

TEST_CASE("archive: a missing member is named, with what the archive holds") {
  const Fixture& fx = fixture();
  for (const char* name : {"pax.tar.gz", "py.zip"}) {
    std::string msg = extract_error(fx.archive(name), {"one.bin", "nope.bin"});
    CHECK_THAT(msg, Catch::Contains("no member 'nope.bin' (it holds: empty.bin, one.bin, random.bin"));
  }
}

TEST_CASE("archive: truncated archives are errors") {
  const Fixture& fx = fixture();
  TempDir tmp;
  for (const char* name : {"pax.tar.gz", "py.zip"}) {
    std::vector<uint8_t> bytes = read_all(fx.archive(name));
    bytes.resize(bytes.size() / 2);
    std::string cut = write_copy(tmp / name, bytes);
    CHECK_THAT(extract_error(cut, {"one.bin"}), Catch::Contains("truncated"));
    error_of(cut, [&] { archive_members(cut, archive_kind_for(cut)); });
  }
  // Valid gzip around a tar cut short, inside a member's data and at a header.
  std::vector<uint8_t> tar = read_all(fx.archive("plain.tar"));
  std::vector<uint8_t> half(tar.begin(), tar.begin() + static_cast<long>(tar.size() / 2));
  emu::test::write_gzip(tmp / "half.tar.gz", half);
  CHECK_THAT(extract_error(tmp / "half.tar.gz", {"text.txt"}), Catch::Contains("truncated"));
  // The headers of nested/ and the empty empty.bin, then nothing: no end blocks.
  std::vector<uint8_t> headers(tar.begin(), tar.begin() + 512 * 2);
  emu::test::write_gzip(tmp / "headers.tar.gz", headers);
  CHECK_THAT(extract_error(tmp / "headers.tar.gz", {"one.bin"}),
             Catch::Contains("truncated (the tar data ends without its end-of-archive blocks)"));
}

TEST_CASE("archive: damaged data is detected") {
  const Fixture& fx = fixture();
  TempDir tmp;
  // A flipped byte in a tar header: its checksum no longer matches.
  std::vector<uint8_t> tar = read_all(fx.archive("plain.tar"));
  tar[3] ^= 0x01;
  emu::test::write_gzip(tmp / "badsum.tar.gz", tar);
  CHECK_THAT(extract_error(tmp / "badsum.tar.gz", {"one.bin"}),
             Catch::Contains("bad tar header checksum at offset 0"));
  // A flipped byte inside the gzip stream: a deflate error or the gzip CRC.
  std::vector<uint8_t> gz = read_all(fx.archive("pax.tar.gz"));
  gz[gz.size() / 3] ^= 0x10;
  CHECK_THAT(extract_error(write_copy(tmp / "flip.tar.gz", gz), {"one.bin"}), Catch::Contains("gzip data"));

  std::vector<uint8_t> zip = read_all(fx.archive("py.zip"));
  // Stored member: the bytes come out changed, and CRC-32 says so.
  std::vector<uint8_t> stored = zip;
  stored[zip_data_start(zip, "random.bin") + 1000] ^= 0x01;
  CHECK_THAT(extract_error(write_copy(tmp / "stored.zip", stored), {"random.bin"}),
             Catch::Contains("member 'random.bin': CRC-32 mismatch"));
  // Deflated member: either the deflate stream or the CRC-32 breaks.
  std::vector<uint8_t> deflated = zip;
  deflated[zip_data_start(zip, "text.txt") + 100] ^= 0x01;
  CHECK_THAT(extract_error(write_copy(tmp / "deflated.zip", deflated), {"text.txt"}),
             Catch::Contains("member 'text.txt'"));
}

TEST_CASE("archive: unsupported zip entries say so") {
  const Fixture& fx = fixture();
  TempDir tmp;
  std::vector<uint8_t> zip = read_all(fx.archive("py.zip"));
  size_t cd = central_entry(zip, "one.bin");
  std::vector<uint8_t> method = zip;
  put_le16(method, cd + 10, 12);  // bzip2
  CHECK_THAT(extract_error(write_copy(tmp / "method.zip", method), {"one.bin"}),
             Catch::Contains("member 'one.bin' uses compression method 12 (unsupported"));
  std::vector<uint8_t> encrypted = zip;
  put_le16(encrypted, cd + 8, get_le16(zip, cd + 8) | 1);
  CHECK_THAT(extract_error(write_copy(tmp / "encrypted.zip", encrypted), {"one.bin"}),
             Catch::Contains("member 'one.bin' is encrypted (unsupported)"));
  std::vector<uint8_t> zip64 = zip;
  put_le16(zip64, cd + 20, 0xffff);
  put_le16(zip64, cd + 22, 0xffff);
  CHECK_THAT(extract_error(write_copy(tmp / "zip64.zip", zip64), {"one.bin"}),
             Catch::Contains("member 'one.bin' is a ZIP64 entry (unsupported)"));
  // Members that are fine still extract from such an archive.
  extract_members(tmp / "method.zip", ArchiveKind::Zip, {{"empty.bin", tmp / "e"}});
  CHECK(read_all(tmp / "e").empty());
}

TEST_CASE("archive: non-archives, empty and missing files") {
  TempDir tmp;
  emu::test::write_text(tmp / "text.tar.gz", "this is not an archive\n");
  emu::test::write_text(tmp / "text.zip", "this is not an archive\n");
  emu::test::write_file(tmp / "empty.tgz", {});
  emu::test::write_file(tmp / "empty.zip", {});
  CHECK_THAT(extract_error(tmp / "text.tar.gz", {"a"}), Catch::Contains("not a gzip file"));
  CHECK_THAT(extract_error(tmp / "text.zip", {"a"}), Catch::Contains("not a zip archive"));
  CHECK_THAT(extract_error(tmp / "empty.tgz", {"a"}), Catch::Contains("empty file"));
  CHECK_THAT(extract_error(tmp / "empty.zip", {"a"}), Catch::Contains("empty file"));
  // gzip, but of something that is not tar.
  emu::test::write_gzip(tmp / "notar.tar.gz", std::vector<uint8_t>(2000, 'q'));
  CHECK_THAT(extract_error(tmp / "notar.tar.gz", {"a"}), Catch::Contains("bad tar header checksum"));
  CHECK_THAT(extract_error(tmp / "missing.zip", {"a"}), Catch::Contains("cannot open"));
  CHECK_THAT(extract_error(tmp / "missing.tgz", {"a"}), Catch::Contains("cannot open"));
}
