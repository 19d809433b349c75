// Op family: recurrent. (Empty until its ops are added; see core/backend.h for the
// X(name, (parameters), (arguments)) entry format.)
#pragma once

#define EMU_OPS_RECURRENT(X)
