// SHA-256 (FIPS 180-4) of byte strings and files, for checking downloaded
// datasets against pinned checksums. Written here rather than taken from
// OpenSSL so the project needs no crypto library for one hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace emu::data {

// Incremental hash: update() any number of times with consecutive pieces of
// the message, then hex_digest() once; the pieces may be split anywhere.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  // Lowercase, 64 hex characters. Finishes the hash: later calls return the
  // same digest, and update() after it throws std::logic_error (the padding
  // has already been hashed, so more data could not extend the message).
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  uint32_t h_[8];
  uint8_t block_[64];
  size_t buffered_ = 0;  // bytes waiting in block_
  uint64_t length_ = 0;  // message length so far, in bytes
  std::string digest_;   // set once finished
};

std::string sha256_hex(const void* data, size_t n);

// The digest of a file's bytes, read in fixed chunks so a multi-GB archive
// never sits in memory. Throws std::runtime_error "<path>: cannot open
// (<strerror>)" or "<path>: read error (<strerror>)".
std::string sha256_file(const std::string& path);

}  // namespace emu::data
