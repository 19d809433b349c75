// The plot library (plot/plot.h, plot/*.cpp):
//  - PNG files read back with stb_image: size of the layout, heatmap cells in
//    the colour scale's colour for their value (ends checked against viridis'
//    published end colours), missing cells grey, baseline outlines, text pixels
//    where the layout put labels and none in an empty margin, dashed baselines;
//  - SVG files: balanced tags, one rect per cell, every tick and label as text;
//  - nice tick values and their texts; errors name the file or the series.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "plot/layout.h"
#include "plot/plot.h"

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

using namespace emu::plot;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("emutrain_test_plot_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> px;
  Rgb at(double x, double y) const {
    const int i = static_cast<int>(x), j = static_cast<int>(y);
    const unsigned char* p = &px[(static_cast<size_t>(j) * w + i) * 3];
    return {p[0], p[1], p[2]};
  }
};

Image load_png(const fs::path& path) {
  Image img;
  int c = 0;
  unsigned char* data = stbi_load(path.string().c_str(), &img.w, &img.h, &c, 3);
  REQUIRE(data != nullptr);
  img.px.assign(data, data + static_cast<size_t>(img.w) * img.h * 3);
  stbi_image_free(data);
  return img;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const RectPrim* find_rect(const Figure& f, const std::string& tag) {
  for (const Prim& p : f.prims)
    if (const auto* r = std::get_if<RectPrim>(&p); r && r->tag == tag) return r;
  return nullptr;
}

const TextPrim* find_text(const Figure& f, const std::string& text) {
  for (const Prim& p : f.prims)
    if (const auto* t = std::get_if<TextPrim>(&p); t && t->text == text) return t;
  return nullptr;
}

// Pixels of colour c inside the box the text occupies (horizontal text).
int text_pixels(const Image& img, const TextPrim& t, Rgb c) {
  const double w = text_width(t.text, t.scale), hgt = text_cap_height(t.scale);
  const double x0 = t.anchor == Anchor::Start ? t.x : t.anchor == Anchor::Middle ? t.x - w / 2 : t.x - w;
  int n = 0;
  for (int y = static_cast<int>(t.y - hgt / 2); y < static_cast<int>(t.y + hgt / 2); ++y)
    for (int x = static_cast<int>(x0); x < static_cast<int>(x0 + w); ++x) n += img.at(x, y) == c;
  return n;
}

// Tags balance: every <x ...> is closed by </x> in order, or self-closed.
bool balanced_tags(const std::string& s, std::string* why) {
  std::vector<std::string> stack;
  size_t i = 0;
  while ((i = s.find('<', i)) != std::string::npos) {
    const size_t end = s.find('>', i);
    if (end == std::string::npos) return *why = "unterminated tag", false;
    const std::string tag = s.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return *why = "empty tag", false;
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag.back() == '/') continue;
    const std::string name =
        tag.substr(tag[0] == '/' ? 1 : 0, tag.find_first_of(" \t\n") - (tag[0] == '/' ? 1 : 0));
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != name) return *why = "unexpected </" + name + ">", false;
      stack.pop_back();
    } else {
      stack.push_back(name);
    }
  }
  if (!stack.empty()) return *why = "unclosed <" + stack.back() + ">", false;
  return true;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

Heatmap sample_heatmap() {
  Heatmap h;
  h.title = "accuracy by format";
  h.x_label = "mantissa bits";
  h.y_label = "exponent bits";
  h.value_label = "test acc";
  h.x_ticks = {"m1", "m2", "m3"};
  h.y_ticks = {"e4", "e5"};
  // row 0 (e4) at the bottom: 10, 20, 30; row 1 (e5): 40, missing, 60.
  h.values = {10, 20, 30, 40, std::nan(""), 60};
  h.baseline = 45;
  h.baseline_label = "fp32";
  return h;
}

}  // namespace

TEST_CASE("heatmap PNG: cell colours, missing cell, baseline outlines, text", "[plot]") {
  const Heatmap h = sample_heatmap();
  const fs::path png = temp_dir() / "heat.png";
  save(h, png.string());
  const Image img = load_png(png);
  const Figure f = layout(h);
  REQUIRE(img.w == f.width);
  REQUIRE(img.h == f.height);

  // Each cell, a few pixels in from its corner (clear of the 1-pixel separators,
  // inside the 3-pixel outline, away from the centred value text).
  for (size_t yi = 0; yi < 2; ++yi)
    for (size_t xi = 0; xi < 3; ++xi) {
      const double v = h.values[yi * 3 + xi];
      const RectPrim* r = find_rect(f, "cell " + std::to_string(xi) + " " + std::to_string(yi));
      REQUIRE(r != nullptr);
      const Rgb want = std::isnan(v) ? Rgb{200, 200, 200} : colour_scale((v - 10) / (60 - 10));
      INFO("cell " << xi << " " << yi);
      CHECK(img.at(r->x + 5, r->y + 5) == want);
      CHECK(img.at(r->x + r->w - 6, r->y + r->h - 6) == want);
      // Outline of cells >= 45 (40 is below, 60 above): red at the very edge.
      const Rgb edge = img.at(r->x + 1, r->y + 1);
      if (!std::isnan(v) && v >= 45)
        CHECK(edge == Rgb{228, 26, 28});
      else
        CHECK(edge != Rgb{228, 26, 28});
    }
  // Row 0 is drawn at the bottom.
  CHECK(find_rect(f, "cell 0 0")->y > find_rect(f, "cell 0 1")->y);
  // The scale's ends are viridis' published end colours #440154 and #fde725.
  CHECK(img.at(find_rect(f, "cell 0 0")->x + 5, find_rect(f, "cell 0 0")->y + 5) == Rgb{0x44, 0x01, 0x54});
  CHECK(img.at(find_rect(f, "cell 2 1")->x + 5, find_rect(f, "cell 2 1")->y + 5) == Rgb{0xfd, 0xe7, 0x25});

  // Text: the value of the darkest cell in white, labels in dark grey, nothing in the corner margin.
  const TextPrim* ten = find_text(f, "10.0");
  REQUIRE(ten != nullptr);
  CHECK(text_pixels(img, *ten, {255, 255, 255}) > 20);
  const TextPrim* sixty = find_text(f, "60.0");
  REQUIRE(sixty != nullptr);
  CHECK(text_pixels(img, *sixty, {0, 0, 0}) > 20);
  for (const char* label : {"m1", "m3", "e4", "e5", "accuracy by format", "mantissa bits"}) {
    const TextPrim* t = find_text(f, label);
    REQUIRE(t != nullptr);
    INFO(label);
    CHECK(text_pixels(img, *t, {25, 25, 25}) > 10);
  }
  int ink = 0;
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x) ink += img.at(x, y) != Rgb{255, 255, 255};
  CHECK(ink == 0);
  // The legend note explains the outline.
  CHECK(find_text(f, "outlined: test acc >= 45.0 (fp32)") != nullptr);
  CHECK(find_rect(f, "baseline-legend") != nullptr);
}

TEST_CASE("heatmap SVG: balanced tags, one rect per cell, labels and ticks as text", "[plot]") {
  const Heatmap h = sample_heatmap();
  const fs::path svg = temp_dir() / "heat.svg";
  save(h, svg.string());
  const std::string s = read_text(svg);
  std::string why;
  CHECK(balanced_tags(s, &why));
  INFO(why);
  CHECK(s.rfind("<?xml", 0) == 0);
  CHECK(count(s, "class=\"cell ") == 6);
  CHECK(count(s, "class=\"baseline ") == 1);  // only 60 >= 45
  for (const char* t : {">m1<", ">m2<", ">m3<", ">e4<", ">e5<", ">accuracy by format<", ">mantissa bits<",
                        ">exponent bits<", ">test acc<", ">10.0<", ">60.0<", ">-<"})
    CHECK(count(s, t) == 1);
  // Colour-bar ticks: nice values inside [10, 60].
  for (const char* t : {">10<", ">20<", ">30<", ">40<", ">50<", ">60<"}) CHECK(count(s, t) == 1);
  // The darkest cell's fill is viridis' first colour.
  CHECK(s.find("fill=\"#440154\" class=\"cell 0 0\"") != std::string::npos);
}

TEST_CASE("line plot PNG: series colours, dashed baseline, axis labels", "[plot]") {
  LinePlot p;
  p.title = "curves";
  p.x_label = "epoch";
  p.y_label = "acc";
  Series a{"first", {0, 1, 2, 3, 4, 5}, {10, 20, 30, 40, 50, 60}};
  Series b{"second", {0, 1, 2, 3, 4, 5}, {60, 50, std::nan(""), 30, 20, 10}, true};
  p.series = {a, b};
  p.baseline_y = 35;
  p.baseline_label = "fp32";
  const fs::path png = temp_dir() / "line.png";
  save(p, png.string());
  const Image img = load_png(png);
  const Figure f = layout(p);
  REQUIRE(img.w == f.width);

  // The baseline: a horizontal dashed line (alternating runs of its grey) at its y.
  const LinePrim* base = nullptr;
  for (const Prim& q : f.prims)
    if (const auto* l = std::get_if<LinePrim>(&q); l && l->dashed && !base)
      base = l;  // the legend's sample comes later
  REQUIRE(base != nullptr);
  CHECK(base->y1 == base->y2);
  int runs = 0;
  bool on = false;
  for (int x = static_cast<int>(base->x1) + 2; x < static_cast<int>(base->x2) - 2; ++x) {
    const Rgb c = img.at(x, base->y1);
    const bool grey = c == Rgb{90, 90, 90};
    if (grey && !on) ++runs;
    on = grey;
  }
  CHECK(runs >= 10);
  // Each series colour is drawn, and the two series' legend labels are text.
  for (size_t i = 0; i < 2; ++i) {
    int n = 0;
    for (size_t k = 0; k < img.px.size(); k += 3)
      n += Rgb{img.px[k], img.px[k + 1], img.px[k + 2]} == series_colour(i);
    CHECK(n > 200);
  }
  for (const char* t : {"first", "second", "fp32", "epoch", "curves"}) {
    const TextPrim* tp = find_text(f, t);
    REQUIRE(tp != nullptr);
    if (!tp->vertical) CHECK(text_pixels(img, *tp, {25, 25, 25}) > 5);
  }
  // The NaN splits series two into two polylines.
  int paths = 0;
  for (const Prim& q : f.prims) paths += std::holds_alternative<PathPrim>(q);
  CHECK(paths == 3);
}

TEST_CASE("bar chart PNG: bars in their group colours", "[plot]") {
  BarChart b;
  b.title = "errors";
  b.categories = {"bf16", "fp16"};
  b.group_labels = {"layer", "op"};
  b.values = {{1, 2}, {3, 4}};
  const fs::path png = temp_dir() / "bar.png";
  save(b, png.string());
  const Image img = load_png(png);
  const Figure f = layout(b);
  for (size_t g = 0; g < 2; ++g)
    for (size_t c = 0; c < 2; ++c) {
      const RectPrim* r = find_rect(f, "bar " + std::to_string(g) + " " + std::to_string(c));
      REQUIRE(r != nullptr);
      CHECK(img.at(r->x + r->w / 2, r->y + r->h / 2) == series_colour(g));
    }
  // Taller value, taller bar: 4 is twice 2.
  CHECK(find_rect(f, "bar 1 1")->h == Approx(2 * find_rect(f, "bar 0 1")->h));

  // Log scale: every decade adds the same height, and the smallest bar is visible.
  BarChart lg;
  lg.categories = {"a", "b", "c"};
  lg.group_labels = {"g"};
  lg.values = {{0.001, 0.01, 0.1}};
  lg.log_y = true;
  const Figure fl = layout(lg);
  const double h0 = find_rect(fl, "bar 0 0")->h, h1 = find_rect(fl, "bar 0 1")->h,
               h2 = find_rect(fl, "bar 0 2")->h;
  CHECK(h0 > 10);
  CHECK(h1 - h0 == Approx(h2 - h1));
  save(lg, (temp_dir() / "log.svg").string());
}

TEST_CASE("nice ticks and tick texts", "[plot]") {
  CHECK(nice_ticks(0, 1, 6) == std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1});
  const std::vector<double> t = nice_ticks(13, 87, 5);
  CHECK(t.front() <= 13);
  CHECK(t.back() >= 87);
  CHECK(t[1] - t[0] == 20);
  CHECK(tick_text(0.25, 0.25) == "0.25");
  CHECK(tick_text(2.5, 2.5) == "2.5");
  CHECK(tick_text(40, 20) == "40");
  CHECK(tick_text(0.6000000000000001, 0.2) == "0.6");
  CHECK(tick_text(1e7, 1e6) == "1e+07");
}

TEST_CASE("plot errors name the file or the series", "[plot]") {
  LinePlot p;
  p.series.push_back({"bad", {1, 2, 3}, {1, 2}});
  CHECK_THROWS_WITH(save(p, (temp_dir() / "x.svg").string()),
                    Catch::Contains("'bad'") && Catch::Contains("3 x values"));
  Heatmap h = sample_heatmap();
  h.values.pop_back();
  CHECK_THROWS_WITH(save(h, (temp_dir() / "h.png").string()), Catch::Contains("5 values for 3 x 2 cells"));
  CHECK_THROWS_WITH(save(sample_heatmap(), (temp_dir() / "h.jpg").string()),
                    Catch::Contains("unknown extension"));
  CHECK_THROWS_WITH(save(sample_heatmap(), "/nonexistent-dir/h.svg"),
                    Catch::Contains("/nonexistent-dir/h.svg"));
}
