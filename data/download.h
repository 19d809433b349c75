// Downloads through an installed command-line client (curl, else wget), so
// emutrain needs no TLS or HTTP library: the client brings the user's proxy
// settings, certificates and progress display.
#pragma once

#include <string>

namespace emu::data {

// "curl" or "wget": $EMUTRAIN_DOWNLOADER when set (it must name one of the
// two), else the first of them found on PATH. Throws std::runtime_error
// saying what to install (or to use --from) when there is none.
std::string find_downloader();

// Writes the body of `url` to `dest` with `tool` (curl or wget), following
// redirects, failing on HTTP errors. A progress bar goes to stderr when it is
// a terminal. Throws std::runtime_error, one line naming the address and the
// reason, on any failure (dest may then hold a partial file: the caller
// downloads into a folder it removes). SIGINT/SIGTERM during the download
// stop it and throw as well, so the caller's clean-up runs.
void download_file(const std::string& url, const std::string& dest, const std::string& tool);

}  // namespace emu::data
