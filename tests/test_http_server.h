// tests/fetch/serve.py (Python's http.server on 127.0.0.1) run for the
// lifetime of one object: the fetch tests download from it.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace emu::test {

class LocalHttpServer {
 public:
  // Serves `dir`; each request's path is appended to `log`.
  LocalHttpServer(const std::string& script, const std::string& dir, const std::string& log) : log_(log) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      execlp("python3", "python3", script.c_str(), dir.c_str(), log.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    char line[64] = {0};
    const bool got = f != nullptr && std::fgets(line, sizeof line, f) != nullptr;
    if (f) std::fclose(f);
    if (!got || std::sscanf(line, "PORT %d", &port_) != 1) {
      stop();
      throw std::runtime_error("tests/fetch/serve.py did not start (is python3 installed?)");
    }
  }
  ~LocalHttpServer() { stop(); }
  LocalHttpServer(const LocalHttpServer&) = delete;
  LocalHttpServer& operator=(const LocalHttpServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // The request paths so far, in order.
  std::vector<std::string> requests() const {
    std::vector<std::string> out;
    std::ifstream in(log_);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }

 private:
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace emu::test
