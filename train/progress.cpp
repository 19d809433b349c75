#include "train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace emu::train {

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02d}:{:02d}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02d}", s / 60, s % 60);
}

Progress::Progress(const std::string& mode, int64_t total_steps, int64_t first_step)
    : total_steps_(total_steps), first_step_(first_step), start_(std::chrono::steady_clock::now()) {
  if (mode == "on" || mode == "true")
    active_ = true;
  else if (mode == "auto") {
    const char* ci = std::getenv("CI");
    active_ = isatty(STDERR_FILENO) && (ci == nullptr || *ci == '\0');
  }
  last_draw_ = start_ - std::chrono::seconds(1);
}

void Progress::update(const TrainPosition& pos, int64_t total_epochs, int64_t per_epoch, double loss,
                      double accuracy, double samples_per_second) {
  if (!active_) return;
  auto now = std::chrono::steady_clock::now();
  if (pos.batch < per_epoch && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  constexpr int kWidth = 24;
  const int filled = static_cast<int>(kWidth * pos.batch / std::max<int64_t>(per_epoch, 1));
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kWidth) bar += '>' + std::string(static_cast<size_t>(kWidth - filled - 1), ' ');
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const int64_t done = pos.step - first_step_;
  const double eta =
      done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total_steps_ - pos.step) : -1;
  std::fprintf(stderr,
               "\r\033[Kepoch %lld/%lld [%s] %lld/%lld | loss %.4f acc %.2f%% | %.0f samples/s | ETA %s",
               static_cast<long long>(pos.epoch + 1), static_cast<long long>(total_epochs), bar.c_str(),
               static_cast<long long>(pos.batch), static_cast<long long>(per_epoch), loss, 100 * accuracy,
               samples_per_second, eta < 0 ? "?" : format_duration(eta).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::clear() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

RunLog::RunLog(std::ostream& out, const std::string& file, bool append)
    : out_(out), file_(file, append ? std::ios::app : std::ios::trunc) {}

void RunLog::line(const std::string& s) {
  if (progress_) progress_->clear();
  out_ << s << std::endl;
  file_ << s << std::endl;
}

}  // namespace emu::train
