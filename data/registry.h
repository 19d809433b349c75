// The recipe-facing factory: a dataset from the `data:` section of a recipe.
//
//   data:
//     type: cifar10            # cifar10, image_folder, mnist, ucr, cora, fra_eng
//     root: /data/cifar10      # optional, see below
//     batch_size: 128          # read by the trainer, accepted here
//     augment: {crop_padding: 4, hflip: true}
//
// root: data.root when given (relative paths are relative to the working
// directory); otherwise the data root ($EMUTRAIN_DATA_ROOT, else ./data:
// data/data_root.h) joined with the type's default sub-folder (cifar10/,
// mnist/, ucr/, cora/, fra-eng/; image_folder has none and needs data.root),
// the folders `emutrain data fetch` fills. The per-type keys and files are in docs/data.md.
// Unknown keys and types are errors naming the key path and the allowed names.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace emu::data {

// The dataset of `split` ("train", "val" or "test") described by `data_section`;
// `path` is the section's key path used in error messages. Returns nullptr for
// "val" when the section asks for no validation split (val_size 0, or
// val_fraction 0 for fra_eng). Cora gives the same one-graph dataset for every
// split, with the split's node mask in "mask".
std::unique_ptr<Dataset> make_dataset(const YAML::Node& data_section, const std::string& split,
                                      const std::string& path = "data");

// The accepted values of data.type.
std::vector<std::string> dataset_types();

// Keys every data section accepts because the trainer reads them (this module
// does not): batch_size, eval_batch_size, workers, shuffle, drop_last.
std::vector<std::string> trainer_data_keys();

// All keys data.type `type` accepts (type, root, the trainer's keys, its own);
// throws for an unknown type.
std::vector<std::string> dataset_keys(const std::string& type);

}  // namespace emu::data
