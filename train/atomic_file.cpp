#include "train/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace emu::train {
namespace {

[[noreturn]] void fail(const char* what, const std::string& path, int err) {
  throw FileWriteError(fmt::format("cannot {} {}: {}", what, path, std::strerror(err)));
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("write", tmp_, errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ < 0) return;  // committed (or never opened)
  ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write", tmp_, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("sync", tmp_, errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp_.c_str());
    fail("write", tmp_, e);
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp_.c_str());
    throw FileWriteError(fmt::format("cannot rename {} to {}: {}", tmp_, path_, std::strerror(e)));
  }
  // The rename itself reaches the disk. A directory that cannot be opened for
  // reading (rare) only loses this guarantee, not the file.
  const int dfd = ::open(directory_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, std::string_view text) {
  AtomicFile f(path);
  f.write(text);
  f.commit();
}

}  // namespace emu::train
