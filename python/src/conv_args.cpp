#include "python/src/conv_args.h"

#include <fmt/format.h>

#include "core/conv_checks.h"

namespace emu::python {

std::pair<int64_t, int64_t> int_pair(py::handle v, const char* what) {
  try {
    if (py::isinstance<py::int_>(v)) {
      const int64_t n = v.cast<int64_t>();
      return {n, n};
    }
    py::tuple t = py::tuple(py::reinterpret_borrow<py::object>(v));
    if (t.size() == 2) return {t[0].cast<int64_t>(), t[1].cast<int64_t>()};
  } catch (const py::error_already_set&) {
  } catch (const py::cast_error&) {
  }
  throw py::type_error(
      fmt::format("{}: an int or a pair of ints (h, w), got {}", what, std::string(py::repr(v))));
}

Conv2dParams conv2d_params(py::handle stride, py::handle padding, py::handle dilation, int groups) {
  Conv2dParams cp;
  const auto s = int_pair(stride, "stride"), p = int_pair(padding, "padding"),
             d = int_pair(dilation, "dilation");
  cp.stride_h = static_cast<int>(s.first), cp.stride_w = static_cast<int>(s.second);
  cp.pad_h = static_cast<int>(p.first), cp.pad_w = static_cast<int>(p.second);
  cp.dilation_h = static_cast<int>(d.first), cp.dilation_w = static_cast<int>(d.second);
  cp.groups = groups;
  return cp;
}

Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& cp) {
  const ConvShape c = conv_shape("conv2d", cp, x, w);
  return {c.N, c.C_out, c.OH, c.OW};
}

}  // namespace emu::python
