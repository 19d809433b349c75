// The SVG back-end of plot/plot.h: a Figure's primitives as SVG elements, in
// drawing order, with text as text (monospace, stretched by textLength to the
// width the layout gave it, so nothing the layout kept apart can overlap).
#include <fmt/format.h>

#include <string>
#include <type_traits>

#include "plot/layout.h"

namespace emu::plot {
namespace {

std::string hex(Rgb c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }

// Shortest decimal that keeps a tenth of a pixel.
std::string num(double v) {
  std::string s = fmt::format("{:.2f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string dash(bool dashed, double width) {
  return dashed ? fmt::format(" stroke-dasharray=\"{},{}\"", num(4 * width), num(3 * width)) : "";
}

std::string element(const LinePrim& l) {
  return fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>",
                     num(l.x1), num(l.y1), num(l.x2), num(l.y2), hex(l.color), num(l.width),
                     dash(l.dashed, l.width));
}

std::string element(const PathPrim& p) {
  std::string pts;
  for (const auto& [x, y] : p.points) pts += (pts.empty() ? "" : " ") + num(x) + "," + num(y);
  return fmt::format(
      "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\"{}/>",
      pts, hex(p.color), num(p.width), dash(p.dashed, p.width));
}

std::string element(const RectPrim& r) {
  std::string cls = r.tag.empty() ? "" : " class=\"" + escape(r.tag) + "\"";
  std::string out;
  if (r.filled)
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>", num(r.x),
                       num(r.y), num(r.w), num(r.h), hex(r.fill), cls);
  if (r.stroked) {  // inside the rectangle, as the PNG back-end draws it
    const double h = r.stroke_width / 2;
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"{}\"{}/>",
        num(r.x + h), num(r.y + h), num(r.w - 2 * h), num(r.h - 2 * h), hex(r.stroke), num(r.stroke_width),
        r.filled ? "" : cls);
  }
  return out;
}

std::string element(const DotPrim& d) {
  return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"/>", num(d.cx), num(d.cy), num(d.r),
                     hex(d.fill));
}

std::string element(const TextPrim& t) {
  const char* anchor = t.anchor == Anchor::Start ? "start" : t.anchor == Anchor::Middle ? "middle" : "end";
  // The anchor is at mid capital height; the baseline lies half a capital height below.
  const double baseline = text_cap_height(t.scale) / 2;
  std::string place = t.vertical ? fmt::format("transform=\"translate({},{}) rotate(-90)\" x=\"0\" y=\"{}\"",
                                               num(t.x), num(t.y), num(baseline))
                                 : fmt::format("x=\"{}\" y=\"{}\"", num(t.x), num(t.y + baseline));
  std::string cls = t.tag.empty() ? "" : " class=\"" + escape(t.tag) + "\"";
  return fmt::format(
      "<text {} font-size=\"{}\" text-anchor=\"{}\" fill=\"{}\" textLength=\"{}\" "
      "lengthAdjust=\"spacingAndGlyphs\"{}>{}</text>",
      place, num(10.0 * t.scale), anchor, hex(t.color), num(text_width(t.text, t.scale)), cls,
      escape(t.text));
}

}  // namespace

std::string to_svg(const Figure& figure) {
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\">\n",
      figure.width, figure.height);
  for (const Prim& p : figure.prims) {
    out += std::visit([](const auto& e) { return element(e); }, p);
    out += "\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace emu::plot
