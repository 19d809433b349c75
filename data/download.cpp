#include "data/download.h"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace emu::data {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void note_signal(int sig) { g_stop_signal = sig; }

// Catches SIGINT and SIGTERM while a client runs, so an interrupted download
// ends in an exception (and the caller's clean-up) instead of killing the
// process with the temporary folder left behind.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = note_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

bool on_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    std::string file = (dir.empty() ? "." : dir) + "/" + tool;
    struct stat st {};
    if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(file.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::string curl_reason(int code) {
  switch (code) {
    case 6:
      return "could not resolve the host (no network, or a wrong address)";
    case 7:
      return "could not connect to the server";
    case 18:
      return "the transfer ended before the whole file arrived";
    case 22:
      return "the server answered with an HTTP error (e.g. 404: not there)";
    case 23:
      return "could not write the file";
    case 28:
      return "timed out";
    case 35:
    case 60:
      return "TLS failure (certificates?)";
    case 56:
      return "the connection broke during the transfer";
    default:
      return "curl exit status " + std::to_string(code);
  }
}

std::string wget_reason(int code) {
  switch (code) {
    case 3:
      return "could not write the file";
    case 4:
      return "network failure (no network, the connection broke, or a wrong address)";
    case 5:
      return "TLS failure (certificates?)";
    case 8:
      return "the server answered with an error (e.g. 404: not there)";
    default:
      return "wget exit status " + std::to_string(code);
  }
}

}  // namespace

std::string find_downloader() {
  const char* env = std::getenv("EMUTRAIN_DOWNLOADER");
  if (env != nullptr && *env != '\0') {
    std::string tool = env;
    if (tool != "curl" && tool != "wget")
      throw std::runtime_error("EMUTRAIN_DOWNLOADER='" + tool + "': must be curl or wget");
    if (!on_path(tool))
      throw std::runtime_error("EMUTRAIN_DOWNLOADER=" + tool + ": " + tool + " is not on PATH");
    return tool;
  }
  for (const char* tool : {"curl", "wget"})
    if (on_path(tool)) return tool;
  throw std::runtime_error(
      "neither curl nor wget is installed: install one (apt-get install curl), or fetch from a local copy "
      "with "
      "--from DIR");
}

void download_file(const std::string& url, const std::string& dest, const std::string& tool) {
  const bool tty = isatty(STDERR_FILENO) == 1;
  std::vector<std::string> args;
  if (tool == "curl") {
    args = {"curl", "--fail", "--location", "--connect-timeout", "30", "--retry", "2", "--output", dest};
    if (tty)
      args.push_back("--progress-bar");
    else {
      args.push_back("--silent");
      args.push_back("--show-error");
    }
  } else if (tool == "wget") {
    args = {"wget", "--tries=3", "--timeout=30", "--output-document=" + dest};
    args.push_back(tty ? "--progress=bar:force:noscroll" : "--no-verbose");
  } else {
    throw std::invalid_argument("download_file: unknown client '" + tool + "'");
  }
  args.push_back("--");  // the address is never read as an option
  args.push_back(url);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  StopSignals stop;
  pid_t pid = 0;
  if (int rc = posix_spawnp(&pid, tool.c_str(), nullptr, nullptr, argv.data(), environ); rc != 0)
    throw std::runtime_error(url + ": cannot start " + tool + " (" + std::strerror(rc) + ")");
  int status = 0;
  bool forwarded = false;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw std::runtime_error(url + ": lost track of " + tool + " (" + std::strerror(errno) + ")");
    if (g_stop_signal != 0 && !forwarded) {  // a SIGTERM reaches only us; pass it on
      kill(pid, SIGTERM);
      forwarded = true;
    }
  }
  if (g_stop_signal != 0)
    throw std::runtime_error(url + ": download interrupted (signal " + std::to_string(g_stop_signal) + ")");
  if (WIFSIGNALED(status))
    throw std::runtime_error(url + ": " + tool + " was stopped by signal " +
                             std::to_string(WTERMSIG(status)));
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0)
    throw std::runtime_error("download of " + url +
                             " failed: " + (tool == "curl" ? curl_reason(code) : wget_reason(code)) +
                             "; try again, or fetch from a mirror or a local copy with --from");
}

}  // namespace emu::data
