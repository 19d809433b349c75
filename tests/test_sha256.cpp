// SHA-256 against the FIPS 180-4 example digests and against coreutils
// sha256sum (an independent implementation) on every length of 0..200 bytes,
// which crosses the one- and two-block padding cases (55/56/64 bytes).
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/sha256.h"
#include "tests/test_data_util.h"

namespace {

using emu::data::Sha256;
using emu::data::sha256_file;
using emu::data::sha256_hex;

std::string hex_of(const std::string& s) { return sha256_hex(s.data(), s.size()); }

std::vector<uint8_t> test_bytes(size_t n, uint64_t seed) {
  emu::test::ByteSource src(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = src.next();
  return v;
}

// Output of a shell command (sha256sum here), or a test failure.
std::string run_command(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  REQUIRE(pclose(p) == 0);
  return out;
}

}  // namespace

TEST_CASE("sha256: FIPS 180-4 / NIST example digests") {
  CHECK(hex_of("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex_of("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a', fed in uneven pieces so block boundaries fall mid-piece.
  Sha256 h;
  std::string piece(997, 'a');
  size_t left = 1000000;
  while (left > 0) {
    size_t n = std::min(left, piece.size());
    h.update(piece.data(), n);
    left -= n;
  }
  CHECK(h.hex_digest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: a message split anywhere hashes as one piece") {
  std::vector<uint8_t> m = test_bytes(200, 7);
  const std::string whole = sha256_hex(m.data(), m.size());
  for (size_t cut = 0; cut <= m.size(); ++cut) {
    Sha256 h;
    h.update(m.data(), cut);
    h.update(m.data() + cut, m.size() - cut);
    INFO("cut at " << cut);
    CHECK(h.hex_digest() == whole);
  }
  Sha256 bytewise;
  for (uint8_t b : m) bytewise.update(&b, 1);
  CHECK(bytewise.hex_digest() == whole);
}

TEST_CASE("sha256: hex_digest finishes the hash") {
  Sha256 h;
  h.update("abc", 3);
  std::string d = h.hex_digest();
  CHECK(d.size() == 64);
  CHECK(h.hex_digest() == d);
  CHECK_THROWS_AS(h.update("x", 1), std::logic_error);
}

TEST_CASE("sha256: lengths 0..200 agree with coreutils sha256sum") {
  emu::test::TempDir dir;
  std::vector<uint8_t> m = test_bytes(200, 11);
  std::string cmd = "sha256sum";
  std::vector<std::string> expected;
  for (size_t n = 0; n <= m.size(); ++n) {
    std::string path = dir / ("m" + std::to_string(n));
    emu::test::write_file(path, std::vector<uint8_t>(m.begin(), m.begin() + n));
    cmd += " '" + path + "'";
    expected.push_back(sha256_hex(m.data(), n));
  }
  // One line per file: "<64 hex>  <path>".
  std::istringstream lines(run_command(cmd));
  std::string line;
  size_t n = 0;
  for (; std::getline(lines, line); ++n) {
    REQUIRE(n < expected.size());
    INFO("length " << n);
    CHECK(line.substr(0, 64) == expected[n]);
  }
  CHECK(n == expected.size());
}

TEST_CASE("sha256_file: streams a multi-MB file to the same digest") {
  emu::test::TempDir dir;
  // Not a multiple of the 1 MiB read chunk, so the last read is short.
  std::vector<uint8_t> m = test_bytes((3u << 20) + 12345, 3);
  std::string path = dir / "big.bin";
  emu::test::write_file(path, m);
  std::string digest = sha256_file(path);
  CHECK(digest == sha256_hex(m.data(), m.size()));
  CHECK(run_command("sha256sum '" + path + "'").substr(0, 64) == digest);
}

TEST_CASE("sha256_file: errors name the file and the problem") {
  emu::test::TempDir dir;
  std::string missing = dir / "missing.bin";
  CHECK_THROWS_WITH(sha256_file(missing), missing + ": cannot open (No such file or directory)");
  // A folder opens but cannot be read.
  CHECK_THROWS_WITH(sha256_file(dir.path()), Catch::Contains(dir.path() + ": read error ("));
}
