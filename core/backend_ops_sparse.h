// Op family: sparse. (Empty until its ops are added; see core/backend.h for the
// X(name, (parameters), (arguments)) entry format.)
#pragma once

#define EMU_OPS_SPARSE(X)
