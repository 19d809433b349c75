// Checkpoints: the safetensors layout checked by an independent reader (the
// header parsed by yaml-cpp, offsets and bytes checked by hand against the
// format's rules), round trips of model and optimizer state, and one-line
// errors for every kind of damage.
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/registry.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "train/checkpoint.h"
#include "train/json.h"

using namespace emu;
using namespace emu::train;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/emutrain_ckpt_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// A safetensors file built by hand: header text as given, then `data`.
std::string raw_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string error_of(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const CheckpointError& e) {
    std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find(path) != std::string::npos);
    return msg;
  }
  FAIL("no error reading " << path);
  return "";
}

std::shared_ptr<models::Model> small_mlp() {
  models::DataMeta meta = {{"classes", 3}, {"features", 5}};
  auto m = models::make_model(YAML::Load("{type: mlp, hidden: [4]}"), meta);
  m->initialize(11);
  return m;
}

}  // namespace

TEST_CASE("safetensors files follow the format, read by an independent parser", "[checkpoint]") {
  TempDir dir;
  TensorFile f;
  f.tensors["b.weight"] = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, -0.0f});
  f.tensors["a.bias"] = Tensor::from_vector({3}, {0.5f, 1e-40f, 3e38f});
  f.tensors["c.scalar"] = Tensor::scalar(7);
  f.metadata["format"] = "emutrain-checkpoint";
  f.metadata["recipe"] = "model:\n  type: \"mlp\"\n";
  const std::string path = dir.file("x.safetensors");
  write_safetensors(path, f);
  CHECK_FALSE(fs::exists(path + ".tmp"));

  const std::string bytes = slurp(path);
  REQUIRE(bytes.size() >= 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  REQUIRE(8 + n <= bytes.size());
  CHECK((8 + n) % 8 == 0);  // the data starts aligned
  const std::string header = bytes.substr(8, n);
  CHECK(header.front() == '{');
  // JSON is YAML: yaml-cpp is a parser that shares no code with ours.
  YAML::Node h = YAML::Load(header);
  REQUIRE(h.IsMap());
  CHECK(h["__metadata__"]["format"].as<std::string>() == "emutrain-checkpoint");
  CHECK(h["__metadata__"]["recipe"].as<std::string>() == "model:\n  type: \"mlp\"\n");
  const uint64_t data_size = bytes.size() - 8 - n;
  uint64_t covered = 0;
  for (const char* name : {"a.bias", "b.weight", "c.scalar"}) {  // written in name order, back to back
    INFO(name);
    YAML::Node e = h[name];
    REQUIRE(e.IsMap());
    CHECK(e["dtype"].as<std::string>() == "F32");
    const Tensor& t = f.tensors[name];
    REQUIRE(e["shape"].size() == t.shape().size());
    for (size_t i = 0; i < t.shape().size(); ++i) CHECK(e["shape"][i].as<int64_t>() == t.shape()[i]);
    const uint64_t begin = e["data_offsets"][0].as<uint64_t>(), end = e["data_offsets"][1].as<uint64_t>();
    CHECK(begin == covered);
    CHECK(end - begin == static_cast<uint64_t>(t.numel()) * 4);
    covered = end;
    // Little-endian binary32, row-major.
    std::vector<float> v = t.to_vector();
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &v[i], 4);
      uint32_t got = 0;
      for (int k = 3; k >= 0; --k)
        got = (got << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(8 + n + begin + 4 * i + k)]);
      CHECK(got == bits);
    }
  }
  CHECK(covered == data_size);

  TensorFile back = read_safetensors(path);
  CHECK(back.metadata == f.metadata);
  REQUIRE(back.tensors.size() == 3);
  for (const auto& [name, t] : f.tensors) {
    REQUIRE(back.tensors.count(name));
    CHECK(back.tensors[name].shape() == t.shape());
    CHECK(std::memcmp(back.tensors[name].data(), t.data(), static_cast<size_t>(t.numel()) * 4) == 0);
  }
}

TEST_CASE("damaged checkpoints are one-line errors naming the file and the problem", "[checkpoint]") {
  TempDir dir;
  const std::string p = dir.file("bad.safetensors");
  const std::string ok_header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data(8, '\0');

  spit(p, "abc");
  CHECK_THAT(error_of(p), Catch::Contains("corrupt checkpoint " + p + ": file is 3 bytes, too short"));

  {
    std::string b(4096, ' ');
    const uint64_t n = 123456789;
    for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
    spit(p, b);
  }
  CHECK_THAT(error_of(p), Catch::Contains("header length 123456789 exceeds file size 4096"));

  spit(p, raw_file("{\"w\":", data));
  CHECK_THAT(error_of(p), Catch::Contains("header is not valid JSON"));

  spit(p, raw_file(R"({"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})", data));
  CHECK_THAT(error_of(p), Catch::Contains("tensor 'w' has dtype BF16"));

  spit(p, raw_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data));
  CHECK_THAT(error_of(p), Catch::Contains("tensor 'w' has 8 data bytes but shape (3,) needs 12"));

  spit(p, raw_file(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data));
  CHECK_THAT(error_of(p), Catch::Contains("lie outside the 8 data bytes"));

  spit(p, raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data));
  CHECK_THAT(error_of(p), Catch::Contains("4 data bytes before tensor 'w' belong to no tensor"));

  spit(p, raw_file(ok_header, data + "xxxx"));
  CHECK_THAT(error_of(p), Catch::Contains("file has 12 data bytes but the tensors cover 8"));

  spit(p, raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})", data));
  CHECK_THAT(error_of(p), Catch::Contains("unknown field 'extra'"));

  spit(p, raw_file(R"({"__metadata__":{"a":1}})", ""));
  CHECK_THAT(error_of(p), Catch::Contains("__metadata__ value of 'a' is not a string"));

  // A valid file that is not a checkpoint of emutrain.
  spit(p, raw_file(ok_header, data));
  CHECK(read_safetensors(p).tensors.size() == 1);
  auto model = small_mlp();
  CHECK_THROWS_WITH(load_checkpoint(p, *model, nullptr), Catch::Contains("metadata lacks 'format'"));

  const std::string missing = dir.file("none.safetensors");
  CHECK_THROWS_WITH(read_safetensors(missing), Catch::Contains("cannot open checkpoint " + missing));
}

TEST_CASE("checkpoints restore model and optimizer state exactly", "[checkpoint]") {
  TempDir dir;
  auto model = small_mlp();
  AdamOptions ao;
  ao.lr = 0.01f;
  Adam adam(model->named_parameters(), ao);
  // A few updates so the moments hold something.
  for (int s = 0; s < 3; ++s) {
    adam.zero_grad();
    data::Batch b;
    b.tensors["x"] = Tensor::from_vector({2, 5}, {1, 2, 3, 4, 5, -1, -2, 0.5f, 0.25f, 3});
    b.tensors["y"] = Tensor::from_vector({2}, {0, 2});
    b.size = 2;
    model->loss(model->predict(b, "train")).backward();
    adam.step();
  }
  CheckpointState st;
  st.position = {7, 1, 3};
  st.seed = 11;
  st.totals.loss_sum = 1.0 / 3;
  st.totals.counted = 5;
  st.recipe_yaml = "model: {type: mlp}\n";
  st.model_type = "mlp";
  st.optimizer_type = "adam";
  const std::string path = dir.file("c.safetensors");
  save_checkpoint(path, *model, &adam, st);

  auto other = small_mlp();
  other->initialize(99);  // different weights, to be overwritten
  Adam adam2(other->named_parameters(), ao);
  CheckpointState back = load_checkpoint(path, *other, &adam2);
  CHECK(back.position.step == 7);
  CHECK(back.position.epoch == 1);
  CHECK(back.position.batch == 3);
  CHECK(back.seed == 11);
  CHECK(back.totals.loss_sum == 1.0 / 3);  // exactly: stored as a hex float
  CHECK(back.recipe_yaml == st.recipe_yaml);
  auto same = [](const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
    REQUIRE(a.size() == b.size());
    for (const auto& [k, t] : a) {
      INFO(k);
      REQUIRE(b.count(k));
      std::vector<float> x = t.to_vector(), y = b.at(k).to_vector();
      REQUIRE(x.size() == y.size());
      CHECK(std::memcmp(x.data(), y.data(), x.size() * 4) == 0);
    }
  };
  same(model->state_dict(), other->state_dict());
  same(adam.state_dict(), adam2.state_dict());

  // A model of another shape, or a file without some tensor: one-line errors.
  models::DataMeta meta = {{"classes", 3}, {"features", 5}};
  auto wider = models::make_model(YAML::Load("{type: mlp, hidden: [6]}"), meta);
  CHECK_THROWS_WITH(
      load_checkpoint(path, *wider, nullptr),
      Catch::Contains("checkpoint " + path + ": tensor model.fc0.bias has shape (4,), the model wants (6,)"));
  TensorFile f = read_safetensors(path);
  f.tensors.erase("model.fc1.weight");
  const std::string cut = dir.file("cut.safetensors");
  write_safetensors(cut, f);
  CHECK_THROWS_WITH(
      load_checkpoint(cut, *other, nullptr),
      Catch::Equals("checkpoint " + cut + ": missing tensor model.fc1.weight (the model has it)"));
  f = read_safetensors(path);
  f.tensors.erase("optimizer.fc0.weight.exp_avg");
  write_safetensors(cut, f);
  CHECK_THROWS_WITH(load_checkpoint(cut, *other, &adam2), Catch::Contains("lacks 'fc0.weight.exp_avg'"));
}
