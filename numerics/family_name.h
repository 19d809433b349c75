// The name of a format family (numerics/format.h) as validate reports and the
// Python module print it: one spelling for every caller.
#pragma once

#include "numerics/format.h"

namespace emu {

inline const char* family_name(Family f) {
  switch (f) {
    case Family::Ieee:
      return "ieee";
    case Family::Posit:
      return "posit";
    case Family::Fixed:
      return "fixed";
  }
  return "?";
}

}  // namespace emu
