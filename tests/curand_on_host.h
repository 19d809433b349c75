#pragma once
#include <string>

namespace emu::test {
// True when cuRAND's curand_init + curand(), compiled for the host, give the
// same words as emu::PhiloxStream and emu::philox_draw; else *why says where not.
bool curand_host_matches_philox(std::string* why);
}  // namespace emu::test
