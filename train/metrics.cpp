#include "train/metrics.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "train/atomic_file.h"
#include "train/csv.h"
#include "train/json.h"

namespace emu::train {
namespace {

const char* const kSplits[] = {"train", "val", "test"};
const std::vector<std::string> kCsvColumns = {"epoch",    "step",    "train_loss",   "train_acc",
                                              "val_loss", "val_acc", "test_loss",    "test_acc",
                                              "lr",       "time_s",  "samples_per_s"};

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::string csv_number(double v) { return std::isfinite(v) ? json_number(v) : ""; }

}  // namespace

MetricsFiles::MetricsFiles(const std::string& run_dir, int64_t keep_until_step) {
  const std::string jsonl = (std::filesystem::path(run_dir) / "metrics.jsonl").string();
  const std::string csv = (std::filesystem::path(run_dir) / "metrics.csv").string();
  std::string keep_json, keep_csv = csv_row(kCsvColumns);
  if (keep_until_step >= 0) {
    for (const std::string& line : read_lines(jsonl)) {
      try {
        Json row = parse_json(line);
        const Json* step = row.find("step");
        const Json* epoch = row.find("epoch");
        if (!step || !epoch || static_cast<int64_t>(step->as_u64()) > keep_until_step) continue;
        keep_json += line + "\n";
        for (const char* split : kSplits) {
          const Json* acc = row.find(std::string(split) + "_acc");
          if (acc && acc->is_number())
            note(split, std::stod(acc->text), static_cast<int64_t>(epoch->as_u64()));
        }
      } catch (const std::exception&) {
        // a line cut short by the interruption: dropped
      }
    }
    const std::vector<CsvRecord> rows =
        std::filesystem::exists(csv) ? read_csv_file(csv) : std::vector<CsvRecord>();
    for (size_t i = 1; i < rows.size(); ++i) {
      // A row cut short by the interruption has fewer columns: dropped.
      if (rows[i].fields.size() != kCsvColumns.size()) continue;
      try {
        if (std::stoll(rows[i].fields[1]) <= keep_until_step) keep_csv += csv_row(rows[i].fields);
      } catch (const std::exception&) {
      }
    }
  }
  // The kept rows replace both files at once (an interruption here leaves the
  // old files); the epochs of this run are then appended line by line.
  write_file_atomic(jsonl, keep_json);
  write_file_atomic(csv, keep_csv);
  for (auto [stream, path] : {std::pair{&jsonl_, &jsonl}, std::pair{&csv_, &csv}}) {
    stream->open(*path, std::ios::app);
    if (!*stream) throw FileWriteError(fmt::format("cannot append to {}: {}", *path, std::strerror(errno)));
  }
}

void MetricsFiles::note(const std::string& split, double accuracy, int64_t epoch) {
  if (!std::isfinite(accuracy)) return;
  auto it = best_.by_split.find(split);
  if (it == best_.by_split.end() || accuracy > it->second.first) best_.by_split[split] = {accuracy, epoch};
}

std::string metrics_json(const MetricsRow& row) {
  std::string s = fmt::format("{{\"epoch\":{},\"step\":{}", row.epoch, row.step);
  for (const char* split : kSplits) {
    auto it = row.splits.find(split);
    if (it == row.splits.end()) continue;
    s += fmt::format(",\"{0}_loss\":{1},\"{0}_acc\":{2},\"{0}_count\":{3}", split,
                     json_number(it->second.loss), json_number(it->second.accuracy), it->second.counted);
  }
  s += fmt::format(",\"lr\":{},\"time_s\":{},\"samples_per_s\":{}}}", json_number(row.lr),
                   json_number(row.seconds), json_number(row.samples_per_second));
  return s;
}

void MetricsFiles::write(const MetricsRow& row) {
  jsonl_ << metrics_json(row) << "\n";
  std::vector<std::string> csv = {fmt::format("{}", row.epoch), fmt::format("{}", row.step)};
  for (const char* split : kSplits) {
    auto it = row.splits.find(split);
    if (it == row.splits.end())
      csv.insert(csv.end(), 2, std::string());
    else
      csv.insert(csv.end(), {csv_number(it->second.loss), csv_number(it->second.accuracy)});
  }
  csv.insert(csv.end(), {csv_number(row.lr), csv_number(row.seconds), csv_number(row.samples_per_second)});
  csv_ << csv_row(csv);
  jsonl_.flush();
  csv_.flush();
  for (const auto& [split, r] : row.splits) note(split, r.accuracy, row.epoch);
}

std::string describe_row(const MetricsRow& row, int64_t total_epochs) {
  std::string s = fmt::format("epoch {}/{} (step {}):", row.epoch, total_epochs, row.step);
  bool first = true;
  for (const char* split : kSplits) {
    auto it = row.splits.find(split);
    if (it == row.splits.end()) continue;
    s += fmt::format("{} {} loss {:.4f} acc {:.2f}%", first ? "" : " |", split, it->second.loss,
                     100 * it->second.accuracy);
    first = false;
  }
  s += fmt::format(" | lr {:.4g} | {:.1f} s, {:.0f} samples/s", row.lr, row.seconds, row.samples_per_second);
  return s;
}

}  // namespace emu::train
