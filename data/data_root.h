// Where datasets live when a recipe gives no data.root: $EMUTRAIN_DATA_ROOT,
// else ./data (relative to the working directory), the folder a user would
// put them in and the one `emutrain data fetch` fills. Each dataset has its
// own sub-folder there (data/catalog.h, data/registry.h).
#pragma once

#include <string>

namespace emu::data {

// $EMUTRAIN_DATA_ROOT when set and not empty, else "data".
std::string data_root();

// How data_root() was chosen, for messages: "EMUTRAIN_DATA_ROOT" or
// "the default; EMUTRAIN_DATA_ROOT is not set".
std::string data_root_origin();

}  // namespace emu::data
