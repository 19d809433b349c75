// Running the real `emutrain` binary from a test: the binary named by
// $EMUTRAIN_BIN (each tests/*.cmake sets it), output captured into files.
//
//   CliResult r = run_cli({"train", recipe, "--out", dir}, dir);   // r.code, r.out, r.err
//   pid_t pid = spawn_cli(args, dir, /*own_group=*/true);           // to kill it mid-run
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace emu::testing {

inline std::string emutrain_bin() {
  const char* b = std::getenv("EMUTRAIN_BIN");
  if (!b || !*b) FAIL("EMUTRAIN_BIN is not set (the test's tests/*.cmake sets it to the emutrain binary)");
  return b;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts `emutrain args...` with stdout/stderr into dir/stdout.txt and dir/stderr.txt
// and CI=true (no progress bar). own_group: the child leads its own process group,
// so a test can kill it together with the processes it starts.
inline pid_t spawn_cli(const std::vector<std::string>& args, const std::string& dir, bool own_group = false) {
  const std::string bin = emutrain_bin();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (own_group) setpgid(0, 0);
    FILE* o = std::freopen((dir + "/stdout.txt").c_str(), "w", stdout);
    FILE* e = std::freopen((dir + "/stderr.txt").c_str(), "w", stderr);
    if (!o || !e) _exit(126);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(bin.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    setenv("CI", "true", 1);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  if (own_group) setpgid(pid, pid);  // also from the parent: no race with a kill right after
  return pid;
}

struct CliResult {
  int code = -1;  // exit status; -1 when killed by a signal
  std::string out, err;
};

inline CliResult wait_cli(pid_t pid, const std::string& dir) {
  int status = 0;
  waitpid(pid, &status, 0);
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir + "/stdout.txt");
  r.err = slurp(dir + "/stderr.txt");
  return r;
}

inline CliResult run_cli(const std::vector<std::string>& args, const std::string& dir) {
  return wait_cli(spawn_cli(args, dir), dir);
}

}  // namespace emu::testing
