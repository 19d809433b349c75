// Recipes and checkpoints from Python: the trainer behind `emutrain train` (train/trainer.h),
// safetensors files (train/safetensors.h), and the process-wide settings (CPU threads, device).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_select.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "train/safetensors.h"
#include "train/trainer.h"

namespace emu::python {
namespace {

// The trainer's log lines, written to Python's sys.stdout (so notebooks show them) one
// line at a time; the trainer runs without the GIL and takes it for each line.
class PythonLines : public std::streambuf {
 public:
  ~PythonLines() override { flush_line(); }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return 0;
    line_.push_back(static_cast<char>(c));
    if (c == '\n') flush_line();
    return c;
  }
  int sync() override {
    flush_line();
    return 0;
  }

 private:
  void flush_line() {
    if (line_.empty()) return;
    py::gil_scoped_acquire locked;
    py::module_::import("sys").attr("stdout").attr("write")(line_);
    line_.clear();
  }
  std::string line_;
};

class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c == traits_type::eof() ? 0 : c; }
};

py::dict split_dict(const train::SplitResult& r) {
  return py::dict(py::arg("loss") = r.loss, py::arg("accuracy") = r.accuracy, py::arg("counted") = r.counted);
}

py::dict run_training(const std::string& recipe, bool is_text, const std::vector<std::string>& sets,
                      const std::string& out, const std::string& resume, bool quiet) {
  train::Recipe r = is_text ? train::parse_recipe(recipe, "<recipe from Python>", sets, "python")
                            : train::load_recipe(recipe, sets);
  PythonLines lines;
  NullBuffer null;
  std::ostream log(quiet ? static_cast<std::streambuf*>(&null) : &lines);
  train::TrainOptions o;
  o.out_dir = out;
  o.resume = resume;
  o.log = &log;
  // Ctrl-C stops a run between steps (KeyboardInterrupt), as it would a Python loop.
  o.after_step = [](const train::TrainPosition&) {
    py::gil_scoped_acquire locked;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  };
  // The trainer sets the CPU threads and the device of its recipe; the caller's come back after.
  const int threads = cpu_backend().threads();
  const std::string device_before = device();
  train::TrainSummary s;
  try {
    py::gil_scoped_release unlocked;
    s = train::train_recipe(r, o);
  } catch (...) {
    cpu_backend().set_threads(threads);
    if (device_before != "cpu") set_device(device_before);
    throw;
  }
  log.flush();
  cpu_backend().set_threads(threads);
  if (device_before != "cpu") set_device(device_before);
  py::dict final_results;
  for (const auto& [split, result] : s.final_results) final_results[py::str(split)] = split_dict(result);
  return py::dict(py::arg("run_dir") = s.run_dir, py::arg("final_checkpoint") = s.final_checkpoint,
                  py::arg("steps") = s.steps, py::arg("epochs") = s.epochs, py::arg("seconds") = s.seconds,
                  py::arg("final") = final_results);
}

// name -> float32 NumPy array (no copy of what the reader loaded), and the metadata.
py::tuple read_checkpoint(const std::string& path) {
  train::TensorFile f;
  {
    py::gil_scoped_release unlocked;
    f = train::read_safetensors(path);
  }
  py::dict tensors, metadata;
  for (const auto& [name, t] : f.tensors) tensors[py::str(name)] = hand_out_numpy(t);
  for (const auto& [k, v] : f.metadata) metadata[py::str(k)] = v;
  return py::make_tuple(tensors, metadata);
}

}  // namespace

void bind_train(py::module_& m) {
  m.def("_train", &run_training, py::arg("recipe"), py::arg("is_text"), py::arg("sets"), py::arg("out"),
        py::arg("resume"), py::arg("quiet"));
  m.def("_read_checkpoint", &read_checkpoint, py::arg("path"));
  m.def(
      "set_threads",
      [](int n) {
        if (n < 0) throw py::value_error("set_threads: a thread count >= 0 (0: every hardware thread)");
        cpu_backend().set_threads(n);
      },
      py::arg("n"),
      "Worker threads of the CPU backend (0: all hardware threads); the bits do not depend on it");
  m.def(
      "threads", []() { return cpu_backend().threads(); }, "The CPU backend's worker threads (0: all)");
  m.def(
      "set_device", &set_device, py::arg("name"),
      "cpu (default), cuda-host (the CUDA kernels on the CPU: CPU tensors run through the host executor) or "
      "cuda (GPU tensors; chosen by itself when a CUDA tensor arrives)");
  m.def("device", &device, "The device set_device chose");
  m.def("devices", &device_names, "The device names this build knows");
}

}  // namespace emu::python
