// emutrain.Format (a spec string of docs/numerics.md parsed once, with the properties
// `emutrain calc FORMAT info` prints), emutrain.quantize (the backends' quantize and
// quantize_blocks ops: the engine's bulk rounding), and codes (encode / decode).
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <vector>

#include "core/backend.h"
#include "core/draw_key.h"
#include "numerics/bulk.h"
#include "numerics/family_name.h"
#include "numerics/format_info.h"
#include "numerics/format_spec.h"
#include "numerics/read_layout.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "python/src/format_arg.h"

namespace emu::python {
namespace {

const char* rounding_name(Rounding r) {
  switch (r) {
    case Rounding::NearestEven:
      return "rne";
    case Rounding::TowardZero:
      return "rtz";
    case Rounding::Up:
      return "rup";
    case Rounding::Down:
      return "rdn";
    case Rounding::NearestAway:
      return "rna";
    case Rounding::Stochastic:
      return "sr";
  }
  return "?";
}

// The rows of a block format's blocks: layout=(outer, len, inner) as numerics/read_layout.h,
// or None for rows along the last dimension (what a layer's read of its input uses).
ReadLayout read_layout(py::handle layout, const Tensor& x) {
  if (layout.is_none()) return rows_along_last_dim(x.numel(), x.ndim() > 0 ? x.dim(x.ndim() - 1) : 1);
  Shape l = shape_of(layout, "layout");
  if (l.size() != 3 || l[0] < 1 || l[1] < 1 || l[2] < 1 || l[0] * l[1] * l[2] != x.numel())
    throw py::value_error(
        fmt::format("layout: want (outer, len, inner), positive, with outer*len*inner = {} "
                    "(the elements of x, numerics/read_layout.h)",
                    x.numel()));
  return ReadLayout{l[0], l[1], l[2]};
}

// x: any shape -> y: the same shape, y = R_f(x); element i (row-major) draws at
// philox_draw(seed, stream, i) under :sr (core/backend_ops_dense.h, core/backend_ops_blocks.h).
py::object quantize(py::handle x, py::handle format, uint64_t seed, uint64_t stream, py::handle layout) {
  const Format f = format_arg(format, "format");
  Borrowed b = borrow(x, "x");
  sync_before(b);
  const ReadLayout l = is_block(f) ? read_layout(layout, b.tensor) : ReadLayout{};
  if (!is_block(f) && !layout.is_none())
    throw py::value_error(
        fmt::format("layout: only block formats use one, and {} is not one", format_name(f)));
  Tensor y;
  {
    py::gil_scoped_release unlocked;
    Backend& be = backend_for(b.tensor.device());
    y = Tensor::zeros(b.tensor.shape(), b.tensor.device());
    if (is_block(f))
      be.quantize_blocks(f, b.tensor.contiguous(), y, l, DrawKey{seed, stream});
    else
      be.quantize(f, b.tensor, y, DrawKey{seed, stream});
    sync_after(y);
  }
  return hand_out(y, b);
}

// A row-major CPU copy of b's elements (or b itself when it is one).
Tensor host_floats(const Borrowed& b) {
  if (b.tensor.device() == Device::Cpu) return b.tensor.contiguous();
  return b.tensor.to(Device::Cpu);
}

// x: any shape -> codes: the same shape, unsigned integers of the narrowest of 8, 16, 32 bits
// that holds f's codes; a value without a code (not a value of f, NaN without a NaN code)
// raises ValueError unless `strict` is false (its code is then 0).
py::array encode(const Format& f, py::handle x, bool strict) {
  Borrowed b = borrow(x, "x");
  Tensor h = host_floats(b);
  const size_t n = static_cast<size_t>(h.numel());
  std::vector<py::ssize_t> shape(h.shape().begin(), h.shape().end());
  size_t missing = 0;
  py::array codes;
  auto run = [&](auto tag) {
    using Code = decltype(tag);
    py::array_t<Code> c(shape);
    {
      py::gil_scoped_release unlocked;
      missing = encode_array(f, h.data(), c.mutable_data(), n);
    }
    codes = c;
  };
  if (f.nbits <= 8)
    run(uint8_t{});
  else if (f.nbits <= 16)
    run(uint16_t{});
  else
    run(uint32_t{});
  if (strict && missing > 0)
    throw py::value_error(
        fmt::format("encode: {} of {} values have no code in {} (not values of the format: "
                    "quantize first; or NaN without a NaN code); strict=False gives them code 0",
                    missing, n, format_name(f)));
  return codes;
}

// codes: unsigned integers, any shape -> values: float32, the same shape.
py::array decode(const Format& f, py::array_t<uint32_t, py::array::c_style | py::array::forcecast> codes) {
  std::vector<py::ssize_t> shape(codes.shape(), codes.shape() + codes.ndim());
  py::array_t<float> out(shape);
  const size_t n = static_cast<size_t>(codes.size());
  {
    py::gil_scoped_release unlocked;
    decode_array(f, codes.data(), out.mutable_data(), n);
  }
  return std::move(out);
}

}  // namespace

Format format_arg(py::handle v, const char* what) {
  if (py::isinstance<Format>(v)) return v.cast<Format>();
  if (py::isinstance<py::str>(v)) return parse_format(v.cast<std::string>());
  throw py::type_error(fmt::format("{}: a Format or a format spec string, got {}", what,
                                   std::string(py::str(py::type::of(v).attr("__name__")))));
}

void bind_formats(py::module_& m) {
  py::class_<Format> format(m, "Format", R"(A number format parsed from a spec string (docs/numerics.md):
eXmY, fp32/tf32/bf16/fp16, OCP fp8_e5m2/fp8_e4m3/fp6_e3m2/fp6_e2m3/fp4_e2m1, posit<n>_<es>,
fixed<w>_<f>, int<w>, block formats (bfp, mxfp*, mxint8, nvfp4, afp), accumulator-only
formats (fp64, int32, ...), with modifiers :rne :rtz :rup :rdn :rna :sr :nosub :sat :wrap.
The properties are those of `emutrain calc FORMAT info`.)");
  format.def(py::init([](const std::string& spec) { return parse_format(spec); }), py::arg("spec"))
      .def_property_readonly("name", [](const Format& f) { return format_name(f); })
      .def_property_readonly("family", [](const Format& f) { return std::string(family_name(f.family)); })
      .def_property_readonly("description", [](const Format& f) { return describe_format(f).family; })
      .def_property_readonly("layout", [](const Format& f) { return describe_format(f).layout; })
      .def_property_readonly("width", [](const Format& f) { return describe_format(f).width; })
      .def_property_readonly("max", [](const Format& f) { return describe_format(f).max_finite; })
      .def_property_readonly("lowest", [](const Format& f) { return describe_format(f).lowest; })
      .def_property_readonly("min", [](const Format& f) { return describe_format(f).min_positive; })
      .def_property_readonly("min_normal", [](const Format& f) { return describe_format(f).min_normal; })
      .def_property_readonly("min_subnormal",
                             [](const Format& f) { return describe_format(f).min_subnormal; })
      .def_property_readonly("epsilon", [](const Format& f) { return describe_format(f).epsilon; })
      .def_property_readonly("codes",
                             [](const Format& f) {
                               const FormatInfo i = describe_format(f);
                               return py::dict(py::arg("finite") = i.finite_codes,
                                               py::arg("zero") = i.zero_codes, py::arg("nan") = i.nan_codes,
                                               py::arg("inf") = i.inf_codes);
                             })
      .def_property_readonly("rounding",
                             [](const Format& f) { return std::string(rounding_name(f.rounding)); })
      .def_property_readonly("stochastic", [](const Format& f) { return is_stochastic(f); })
      .def_property_readonly("accumulator_only", [](const Format& f) { return f.accumulator_only; })
      .def_property_readonly("is_block", [](const Format& f) { return is_block(f); })
      .def_property_readonly("block_size", [](const Format& f) { return f.block.size; })
      .def_property_readonly("specials", [](const Format& f) { return describe_format(f).specials; })
      .def("info",
           [](const Format& f) {
             const FormatInfo i = describe_format(f);
             py::dict d;
             d["name"] = i.name, d["family"] = i.family, d["layout"] = i.layout, d["width"] = i.width;
             d["max"] = i.max_finite, d["lowest"] = i.lowest, d["min_normal"] = i.min_normal;
             d["min_subnormal"] = i.min_subnormal, d["min"] = i.min_positive, d["epsilon"] = i.epsilon;
             d["finite_codes"] = i.finite_codes, d["zero_codes"] = i.zero_codes, d["nan_codes"] = i.nan_codes;
             d["inf_codes"] = i.inf_codes, d["accumulator_only"] = i.accumulator_only;
             d["accumulator_reason"] = i.accumulator_reason, d["specials"] = i.specials,
             d["rounding"] = i.rounding;
             return d;
           })
      .def("encode", &encode, py::arg("x"), py::arg("strict") = true,
           "The codes of x's values (x must hold values of the format): NumPy unsigned integers")
      .def("decode", &decode, py::arg("codes"), "The values of codes, as float32")
      .def("__eq__",
           [](const Format& a, py::handle b) {
             // A spec string compares as the Format it parses to; anything else is unequal.
             if (!py::isinstance<Format>(b) && !py::isinstance<py::str>(b)) return false;
             try {
               return a == format_arg(b, "other");
             } catch (const FormatError&) {
               return false;
             }
           })
      .def("__hash__", [](const Format& f) { return py::hash(py::str(format_name(f))); })
      .def("__str__", [](const Format& f) { return format_name(f); })
      .def("__repr__", [](const Format& f) { return "Format('" + format_name(f) + "')"; })
      .def(py::pickle([](const Format& f) { return format_name(f); },
                      [](const std::string& s) { return parse_format(s); }));

  m.def("quantize", &quantize, py::arg("x"), py::arg("format"), py::arg("seed") = 0, py::arg("stream") = 0,
        py::arg("layout") = py::none(),
        R"(R_format(x), element-wise, as the engine's bulk rounding (the backend op quantize; block
formats: quantize_blocks with blocks along the rows of `layout`, default the last dimension).
Under :sr element i (row-major) draws philox_draw(seed, stream, i). Returns the type of x.)");

  py::enum_<DrawSite>(m, "DrawSite", "The places inside a layer that draw random bits (core/draw_key.h)")
      .value("forward", DrawSite::Forward)
      .value("grad_input", DrawSite::GradInput)
      .value("grad_weight", DrawSite::GradWeight)
      .value("grad_bias", DrawSite::GradBias)
      .value("read_weights", DrawSite::ReadWeights)
      .value("read_input", DrawSite::ReadInput)
      .value("read_grad", DrawSite::ReadGrad)
      .value("dropout", DrawSite::Dropout)
      .value("init", DrawSite::Init)
      .value("update", DrawSite::Update)
      .value("read_bias", DrawSite::ReadBias);
  m.def(
      "layer_draw_key",
      [](uint64_t seed, const std::string& path, DrawSite site, uint64_t step) {
        DrawKey k = layer_draw_key(seed, path, site, step);
        return py::make_tuple(k.seed, k.stream);
      },
      py::arg("seed"), py::arg("path"), py::arg("site"), py::arg("step"),
      "The (seed, stream) key of a layer's draws at `site` in training step `step` (core/draw_key.h)");
}

}  // namespace emu::python
