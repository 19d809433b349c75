#include "train/sweep_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "train/atomic_file.h"
#include "train/recipe.h"
#include "train/sweep_cost.h"

namespace emu::train {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_signal = 0;
int g_last_signal = 0;

void on_signal(int sig) { g_signal = sig; }

// Installs the interrupt handlers for the lifetime of the object (no
// SA_RESTART: a blocking call returns EINTR and the loop notices).
class SignalGuard {
 public:
  SignalGuard() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalGuard() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

void append_line(const std::string& path, const std::string& line) {
  if (path.empty()) return;
  std::ofstream out(path, std::ios::app);
  out << line << "\n";
}

// The reason a child gives on its way out: its last "emutrain: ..." line,
// else its last non-empty line.
std::string last_error_line(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, last, last_error;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last = line;
    if (line.rfind("emutrain: ", 0) == 0) last_error = line.substr(10);
  }
  return last_error.empty() ? last : last_error;
}

struct Child {
  size_t job = 0;
  pid_t pid = -1;
  Clock::time_point start;
};

pid_t spawn_child(const RunnerOptions& o, const RunJob& job, const std::string& run_dir) {
  std::error_code ec;
  fs::remove_all(run_dir, ec);  // an interrupted run starts again from scratch
  fs::create_directories(run_dir, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create {}: {}", run_dir, ec.message()));
  const std::string log = (fs::path(run_dir) / "output.log").string();
  std::vector<std::string> args = child_args(o, job);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGINT, &dfl, nullptr);
    sigaction(SIGTERM, &dfl, nullptr);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = open("/dev/null", O_RDONLY);
    if (fd < 0 || null < 0) _exit(126);
    dup2(null, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(o.exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

RunRecord record_of(int status, const std::string& run_dir, double wall) {
  RunRecord r;
  const std::string log = (fs::path(run_dir) / "output.log").string();
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    if (r.exit_code == 0) {
      r.status = fs::exists(fs::path(run_dir) / "summary.json") ? "ok" : "failed";
      if (r.status == "failed") r.reason = "exited with code 0 but wrote no summary.json";
    } else {
      r.status = r.exit_code == 3 ? "diverged" : "failed";
      r.reason = last_error_line(log);
      if (r.exit_code == 127) r.reason = "could not start the emutrain binary";
    }
  } else {
    r.status = "failed";
    r.exit_code = -1;
    r.reason = fmt::format("killed by signal {}", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
  r.wall_s = wall;
  return r;
}

void stop_children(std::map<pid_t, Child>* running) {
  for (auto& [pid, c] : *running) kill(pid, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (!running->empty()) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      running->erase(pid);
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (Clock::now() > deadline) {
      for (auto& [p, c] : *running) kill(p, SIGKILL);
    }
    usleep(50 * 1000);
  }
}

std::string describe(const RunRecord& r) {
  if (r.status == "diverged") return "diverged (" + r.reason + ")";
  if (r.status == "failed") return "failed (" + r.reason + ")";
  if (r.final_test_acc) return fmt::format("test {:.1f}%", 100 * *r.final_test_acc);
  if (r.final_val_acc) return fmt::format("val {:.1f}%", 100 * *r.final_val_acc);
  if (r.final_train_loss) return fmt::format("train loss {:.4g}", *r.final_train_loss);
  return "ok";
}

}  // namespace

int interrupting_signal() { return g_last_signal; }

std::vector<std::string> child_args(const RunnerOptions& o, const RunJob& job) {
  std::vector<std::string> args = {"emutrain", "train", o.recipe};
  for (const std::string& s : job.sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  args.push_back("--out");
  args.push_back((fs::path(o.runs_dir) / job.id).string());
  return args;
}

bool run_jobs(const RunnerOptions& o, const std::vector<RunJob>& jobs,
              std::vector<std::optional<RunRecord>>* records,
              const std::function<void(size_t)>& on_finished) {
  SignalGuard guard;
  g_last_signal = 0;
  std::vector<size_t> pending;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (!(*records)[i] || (o.retry_failed && (*records)[i]->status == "failed")) pending.push_back(i);
  size_t next = 0;
  std::map<pid_t, Child> running;
  const int width = std::max(1, o.jobs);
  while (next < pending.size() || !running.empty()) {
    if (g_signal) {
      g_last_signal = g_signal;
      stop_children(&running);
      return false;
    }
    while (running.size() < static_cast<size_t>(width) && next < pending.size()) {
      const size_t i = pending[next++];
      (*records)[i].reset();
      const std::string dir = (fs::path(o.runs_dir) / jobs[i].id).string();
      append_line(o.start_log, "start " + jobs[i].id);
      const pid_t pid = spawn_child(o, jobs[i], dir);
      running[pid] = Child{i, pid, Clock::now()};
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      usleep(100 * 1000);
      continue;
    }
    if (pid < 0) throw std::runtime_error(fmt::format("waitpid failed: {}", std::strerror(errno)));
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const Child c = it->second;
    running.erase(it);
    const std::string dir = (fs::path(o.runs_dir) / jobs[c.job].id).string();
    const double wall = std::chrono::duration<double>(Clock::now() - c.start).count();
    if (g_signal && WIFSIGNALED(status)) continue;  // killed with us: not a result
    RunRecord r = record_of(status, dir, wall);
    write_run_status(dir, r);
    std::optional<RunRecord> back = read_run(dir);  // with the figures of summary.json
    (*records)[c.job] = back ? back : std::optional<RunRecord>(r);
    append_line(o.start_log, "end " + jobs[c.job].id + " " + r.status);
    on_finished(c.job);
  }
  return true;
}

std::string eta_text(double s) {
  if (s < 90) return fmt::format("{:.0f} s", s);
  if (s < 3600) return fmt::format("{:.0f} min", s / 60);
  const int64_t m = static_cast<int64_t>(s / 60 + 0.5);
  return fmt::format("{} h {:02d} min", m / 60, m % 60);
}

int run_sweep(const SweepSpec& spec, const SweepOptions& options) {
  std::ostream& log = options.log ? *options.log : std::cout;
  SweepSpec s = spec;
  if (options.jobs > 0) s.jobs = options.jobs;
  if (options.threads >= 0) s.threads = options.threads;
  const std::vector<SweepPoint> points = expand_sweep(s);
  std::vector<SweepRun> runs = sweep_runs(s, points);
  for (SweepRun& r : runs) r.sets.insert(r.sets.end() - 1, options.sets.begin(), options.sets.end());

  // Every run's recipe is checked before anything runs.
  for (const SweepRun& r : runs) {
    try {
      load_recipe(s.recipe, r.sets);
    } catch (const std::exception& e) {
      throw SweepError(fmt::format("sweep {}: point {}: {}", s.source, r.label, e.what()));
    }
  }
  const std::string out = options.out.empty() ? (fs::path("sweeps") / s.name).string() : options.out;
  RunnerOptions ro;
  ro.exe = options.exe;
  ro.recipe = fs::absolute(s.recipe).lexically_normal().string();
  ro.runs_dir = (fs::path(out) / "runs").string();
  ro.start_log = (fs::path(out) / "sweep_log.txt").string();
  ro.jobs = s.jobs;
  ro.retry_failed = options.retry_failed;
  std::vector<RunJob> jobs;
  for (const SweepRun& r : runs) jobs.push_back({r.id, r.label, r.sets});

  if (options.dry_run) {
    for (const RunJob& j : jobs) {
      std::string cmd;
      for (const std::string& a : child_args(ro, j)) cmd += (cmd.empty() ? "" : " ") + a;
      log << j.id << ": " << cmd << "\n";
    }
    log << fmt::format("{} points x {} seeds = {} runs; {} at once, {} threads each; out {}\n", points.size(),
                       s.seeds.size(), runs.size(), s.jobs, s.threads, out)
        << std::flush;
    return 0;
  }

  fs::create_directories(ro.runs_dir);
  const int lock = open((fs::path(out) / "sweep.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) != 0)
    throw SweepError(
        fmt::format("sweep {}: another sweep is running in {} (sweep.lock is held)", s.source, out));
  {
    std::ifstream in(s.source);
    std::stringstream ss;
    ss << in.rdbuf();
    write_file_atomic((fs::path(out) / "sweep.yaml").string(), ss.str());
  }

  std::vector<std::optional<RunRecord>> records(runs.size());
  size_t done = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    records[i] = read_run((fs::path(ro.runs_dir) / runs[i].id).string());
    if (records[i] && !(options.retry_failed && records[i]->status == "failed")) ++done;
  }
  const std::string results = (fs::path(out) / "results.csv").string();
  const std::string aggregate = (fs::path(out) / "aggregate.csv").string();
  // Counts depend on the point, not the seed or the training: one counted step per point.
  std::vector<std::optional<CostColumns>> costs;
  if (options.cost) costs = sweep_point_costs(s, points, runs, out, options.cost_model, log);
  const std::vector<std::optional<CostColumns>>* cost_ptr = options.cost ? &costs : nullptr;
  auto write_tables = [&]() {
    write_file_atomic(results, results_csv(s, points, runs, records, ro.runs_dir, cost_ptr));
    write_file_atomic(aggregate, aggregate_csv(s, points, runs, records, cost_ptr));
  };
  write_tables();
  log << fmt::format(
             "sweep {}: {} points x {} seeds = {} runs, {} finished before; {} at once, {} threads each; "
             "out {}\n",
             s.name, points.size(), s.seeds.size(), runs.size(), done, s.jobs, s.threads, out)
      << std::flush;

  const auto t0 = Clock::now();
  double session_wall = 0;
  size_t session_done = 0;
  const size_t total = runs.size();
  const bool complete = run_jobs(ro, jobs, &records, [&](size_t i) {
    ++done;
    ++session_done;
    session_wall += records[i]->wall_s.value_or(0);
    write_tables();
    const double per_run = session_wall / static_cast<double>(session_done);
    const double eta = per_run * static_cast<double>(total - done) / std::max(1, s.jobs);
    log << fmt::format("[{}/{}] {}: {} in {:.1f} s, ETA {}\n", done, total, runs[i].label,
                       describe(*records[i]), records[i]->wall_s.value_or(0),
                       done == total ? "0 s" : eta_text(eta))
        << std::flush;
  });
  if (!complete) {
    log << fmt::format(
               "sweep interrupted (signal {}): {} of {} runs finished; run the same command again to "
               "finish the rest\n",
               interrupting_signal(), done, total)
        << std::flush;
    close(lock);
    return 128 + interrupting_signal();
  }
  int ok = 0, diverged = 0, failed = 0;
  for (const auto& r : records) {
    ok += r && r->status == "ok";
    diverged += r && r->status == "diverged";
    failed += r && r->status == "failed";
  }
  log << fmt::format("sweep done: {} runs ({} ok, {} diverged, {} failed); this session {} runs in {}; {}\n",
                     total, ok, diverged, failed, session_done,
                     eta_text(std::chrono::duration<double>(Clock::now() - t0).count()), results)
      << std::flush;
  close(lock);
  return 0;
}

}  // namespace emu::train
