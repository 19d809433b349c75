// Key paths and lists of allowed names, as error messages and help texts show them.
#pragma once

#include <string>
#include <vector>

namespace emu::config {

// "optimizer.lr" for key "lr" of the section at "optimizer"; just the key at the top level ("").
std::string key_path(const std::string& where, const std::string& key);

// "a, b, c"; "none" for an empty list, so "(allowed: none)" never reads as a cut-off message.
std::string join_names(const std::vector<std::string>& names);

}  // namespace emu::config
