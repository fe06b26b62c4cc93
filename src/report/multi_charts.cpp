// Charts of several plans (docs/cli.md#charts): search's Pareto front, a sweep's lines, a
// diff's paired bars. Okabe and Ito's colours; every mark has a tooltip and its values in data
// attributes; fixed precision, so the output is deterministic.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "trainledger/report.hpp"

namespace trainledger::report {

namespace {

const char* const k_colours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                 "#CC79A7", "#56B4E9", "#F0E442", "#000000"};

std::size_t chars_of(const std::string& text) {
  std::size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

// The SVG's opening and its title: 13 px bold (at most about 8 px a character). A title longer
// than the chart is wide puts its parenthesis on a second, smaller line; what still does not fit
// widens the chart.
std::string head(const std::string& id, int w, int h, const std::string& title) {
  std::string first = title, second;
  const std::size_t paren = title.find(" (");
  if (16 + 8 * chars_of(title) > static_cast<std::size_t>(w) && paren != std::string::npos &&
      title.back() == ')') {
    first = title.substr(0, paren);
    second = title.substr(paren + 2, title.size() - paren - 3);
  }
  w = std::max(
      {w, 16 + 8 * static_cast<int>(chars_of(first)), 16 + 6 * static_cast<int>(chars_of(second))});
  std::string s = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg id=\"{}\" class=\"chart\" "
      "xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n<text x=\"8\" "
      "y=\"16\" font-size=\"13\" font-weight=\"bold\">{}</text>\n",
      xml_escape(id), w, h, w, h, xml_escape(title), xml_escape(first));
  if (!second.empty())
    s += fmt::format("<text x=\"8\" y=\"30\" font-size=\"10\">{}</text>\n", xml_escape(second));
  return s;
}

struct Frame {
  double x0, x1, y0, y1;
  int left = 70, top = 36, w = 560, h = 300;
  double x(double v) const { return left + w * (x1 > x0 ? (v - x0) / (x1 - x0) : 0.5); }
  double y(double v) const { return top + h - h * (y1 > y0 ? (v - y0) / (y1 - y0) : 0.5); }
};

// Round ticks over [lo, hi]: steps of 1, 2 or 5 times a power of ten, about five of them; whole
// numbers only for an integer knob.
std::vector<double> nice_ticks(double lo, double hi, bool integers) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  double step = mag * (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10);
  if (integers) step = std::max(1.0, std::round(step));
  std::vector<double> out;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9 && out.size() < 12;
       v += step)
    out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return out;
}

std::string axes(const Frame& f, const std::string& xl, const std::string& yl,
                 bool integer_x = false) {
  std::string s = fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#ccc\"/>\n",
      f.left, f.top, f.w, f.h);
  for (double xv : nice_ticks(f.x0, f.x1, integer_x))
    s += fmt::format(
        "<line x1=\"{0:.2f}\" x2=\"{0:.2f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#eee\"/><text "
        "class=\"tick\" x=\"{0:.2f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
        f.x(xv), f.top, f.top + f.h, f.top + f.h + 14, xv);
  for (double yv : nice_ticks(f.y0, f.y1, false))
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.2f}\" y2=\"{2:.2f}\" stroke=\"#eee\"/><text "
        "class=\"tick\" x=\"{3}\" y=\"{4:.2f}\" text-anchor=\"end\">{5:g}</text>\n",
        f.left, f.left + f.w, f.y(yv), f.left - 4, f.y(yv) + 4, yv);
  s += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text><text x=\"12\" y=\"{}\" "
      "transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">{}</text>\n",
      f.left + f.w / 2, f.top + f.h + 30, xml_escape(xl), f.top + f.h / 2, f.top + f.h / 2,
      xml_escape(yl));
  return s;
}

// A legend's text cut to `chars` characters (the whole name in its tooltip).
std::string legend_text(const std::string& name, std::size_t chars) {
  std::size_t n = 0;
  std::string out;
  for (unsigned char c : name) {
    if ((c & 0xC0) != 0x80 && ++n > chars) return xml_escape(out) + "…";
    out += static_cast<char>(c);
  }
  return xml_escape(out);
}

Frame frame_of(const std::vector<double>& xs, const std::vector<double>& ys) {
  Frame f{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0.0,
          -std::numeric_limits<double>::infinity()};
  for (double v : xs) {
    f.x0 = std::min(f.x0, v);
    f.x1 = std::max(f.x1, v);
  }
  for (double v : ys)
    if (std::isfinite(v)) f.y1 = std::max(f.y1, v);
  if (!std::isfinite(f.x0)) f.x0 = 0, f.x1 = 1;
  if (!std::isfinite(f.y1) || f.y1 <= 0) f.y1 = 1;
  f.y1 *= 1.08;
  return f;
}

// A tag's box, as drawn at font size 9 (about 5.4 px a character): tags keep out of each other.
struct Box {
  double x0, y0, x1, y1;
  bool meets(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// `text` beside (cx, cy): right and above, else left, else below; none where every place covers
// a tag already drawn or leaves the plot.
std::string tag_at(const Frame& f, double cx, double cy, const std::string& text,
                   std::vector<Box>& taken) {
  const double w = 5.4 * static_cast<double>(chars_of(text)), h = 11;
  struct Place {
    double x;  // the box's left edge
    double base;
  };
  const Place places[] = {
      {cx + 6, cy - 6}, {cx - 6 - w, cy - 6}, {cx + 6, cy + 14}, {cx - 6 - w, cy + 14}};
  for (const Place& p : places) {
    const Box b{p.x, p.base - h + 2, p.x + w, p.base + 2};
    if (b.x0 < f.left + 2 || b.x1 > f.left + f.w - 2 || b.y0 < f.top + 2 || b.y1 > f.top + f.h - 2)
      continue;
    bool free = true;
    for (const Box& o : taken) free = free && !b.meets(o);
    if (!free) continue;
    taken.push_back(b);
    return fmt::format("<text class=\"tag\" x=\"{:.2f}\" y=\"{:.2f}\" font-size=\"9\">{}</text>\n",
                       p.x, p.base, xml_escape(text));
  }
  return "";
}

// A guide across the plot, named inside it (the k-th guide's name one line lower).
std::string guide_svg(const Frame& f, const Guide& g, bool vertical, int k) {
  const char* dash = g.dashed ? " stroke-dasharray=\"5 3\"" : "";
  if (vertical) {
    const double x = f.x(g.value);
    return fmt::format(
        "<line class=\"guide\" data-value=\"{:.17g}\" x1=\"{:.2f}\" x2=\"{:.2f}\" y1=\"{}\" "
        "y2=\"{}\" stroke=\"#D55E00\" stroke-width=\"1.5\"{}/><text class=\"guide\" "
        "x=\"{:.2f}\" y=\"{}\" text-anchor=\"end\" font-size=\"10\" fill=\"#A04000\">{}</text>\n",
        g.value, x, x, f.top, f.top + f.h, dash, x - 4, f.top + 12 + 13 * k, xml_escape(g.label));
  }
  const double y = f.y(g.value);
  return fmt::format(
      "<line class=\"guide\" data-value=\"{:.17g}\" x1=\"{}\" x2=\"{}\" y1=\"{:.2f}\" "
      "y2=\"{:.2f}\" stroke=\"#D55E00\" stroke-width=\"1.5\"{}/><text class=\"guide\" x=\"{}\" "
      "y=\"{:.2f}\" text-anchor=\"end\" font-size=\"10\" fill=\"#A04000\">{}</text>\n",
      g.value, f.left, f.left + f.w, y, y, dash, f.left + f.w - 4, y - 4 - 13 * k,
      xml_escape(g.label));
}

}  // namespace

std::string scatter_svg(const std::string& id, const std::string& title, const std::string& x_label,
                        const std::string& y_label, const std::vector<ChartPoint>& points,
                        const std::vector<Guide>& x_guides) {
  std::vector<double> xs, ys;
  for (const ChartPoint& p : points) xs.push_back(p.x), ys.push_back(p.y);
  for (const Guide& g : x_guides)
    if (std::isfinite(g.value)) xs.push_back(g.value);
  Frame f = frame_of(xs, ys);
  f.x0 = 0;
  f.x1 = f.x1 > 0 ? f.x1 * 1.05 : 1;
  std::string s = head(id, 680, 390, title) + axes(f, x_label, y_label);
  // Guides named from the right: the largest first, each name a line lower.
  std::vector<const Guide*> guides;
  for (const Guide& g : x_guides)
    if (std::isfinite(g.value)) guides.push_back(&g);
  std::stable_sort(guides.begin(), guides.end(),
                   [](const Guide* a, const Guide* b) { return a->value > b->value; });
  for (std::size_t k = 0; k < guides.size(); ++k)
    s += guide_svg(f, *guides[k], true, static_cast<int>(k));
  std::vector<const ChartPoint*> front;
  for (const ChartPoint& p : points) {
    if (p.highlight) front.push_back(&p);
    s += fmt::format(
        "<circle class=\"point{}\" data-x=\"{:.17g}\" data-y=\"{:.17g}\" cx=\"{:.2f}\" "
        "cy=\"{:.2f}\" r=\"{}\" fill=\"{}\" fill-opacity=\"{}\"><title>{}</title></circle>\n",
        p.highlight ? " front" : "", p.x, p.y, f.x(p.x), f.y(p.y), p.highlight ? 4 : 2,
        p.highlight ? k_colours[3] : k_colours[0], p.highlight ? "1" : "0.35", xml_escape(p.label));
  }
  std::sort(front.begin(), front.end(),
            [](const ChartPoint* a, const ChartPoint* b) { return a->x < b->x; });
  std::string path;
  for (const ChartPoint* p : front)
    path += fmt::format("{}{:.2f},{:.2f}", path.empty() ? "M" : " L", f.x(p->x), f.y(p->y));
  if (!path.empty())
    s += fmt::format("<path class=\"front\" d=\"{}\" fill=\"none\" stroke=\"{}\"/>\n", path,
                     k_colours[3]);
  // The guides' names hold their rows; tags go where nothing else is.
  std::vector<Box> taken;
  for (std::size_t k = 0; k < guides.size(); ++k) {
    const double w = 5.9 * static_cast<double>(chars_of(guides[k]->label));
    const double x = f.x(guides[k]->value) - 4, y = f.top + 12 + 13.0 * static_cast<double>(k);
    taken.push_back({x - w, y - 11, x, y + 2});
  }
  for (const ChartPoint* p : front)
    if (!p->tag.empty()) s += tag_at(f, f.x(p->x), f.y(p->y), p->tag, taken);
  return s + "</svg>\n";
}

std::string lines_svg(const std::string& id, const std::string& title, const std::string& x_label,
                      const std::string& y_label, const std::vector<Series>& series,
                      const std::vector<Guide>& y_guides) {
  std::vector<double> xs, ys;
  for (const Series& se : series) {
    xs.insert(xs.end(), se.x.begin(), se.x.end());
    ys.insert(ys.end(), se.y.begin(), se.y.end());
  }
  for (const Guide& g : y_guides) ys.push_back(g.value);
  const Frame f = frame_of(xs, ys);
  bool integers = true;
  for (double v : xs) integers = integers && v == std::floor(v);
  std::string s = head(id, 820, 390, title) + axes(f, x_label, y_label, integers);
  int g = 0;
  for (const Guide& guide : y_guides)
    if (std::isfinite(guide.value)) s += guide_svg(f, guide, false, g++);
  // Values on the points when they can be read: at most two series of at most 24 points.
  std::size_t most = 0;
  for (const Series& se : series) most = std::max(most, se.x.size());
  const bool values = series.size() <= 2 && most <= 24;
  std::vector<Box> taken;
  // Series that coincide stay visible: each its own colour and dash, drawn thinner as they go.
  static const char* const k_dashes[] = {"", "6 3", "2 2", "8 3 2 3"};
  int k = 0;
  for (const Series& se : series) {
    const char* colour = k_colours[k % 8];
    const std::string dash =
        k % 4 == 0 ? "" : fmt::format(" stroke-dasharray=\"{}\"", k_dashes[k % 4]);
    std::string path;
    for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
      if (!std::isfinite(se.y[i])) {
        path += " ";  // a gap
        continue;
      }
      const bool move = path.empty() || path.back() == ' ';
      path += fmt::format("{}{:.2f},{:.2f}", move ? "M" : " L", f.x(se.x[i]), f.y(se.y[i]));
      s += fmt::format(
          "<circle class=\"point\" data-series=\"{}\" data-x=\"{:.17g}\" data-y=\"{:.17g}\" "
          "cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"3\" fill=\"{}\"><title>{}: {:.6g} at {:.6g}</title>"
          "</circle>\n",
          xml_escape(se.name), se.x[i], se.y[i], f.x(se.x[i]), f.y(se.y[i]), colour,
          xml_escape(se.name), se.y[i], se.x[i]);
      if (values) s += tag_at(f, f.x(se.x[i]), f.y(se.y[i]), fmt::format("{:.3g}", se.y[i]), taken);
    }
    s += fmt::format(
        "<path class=\"line\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n", path,
        colour,
        k == 0   ? "2.5"
        : k == 1 ? "2"
                 : "1.5",
        dash);
    // The legend: a short line in the series' style; a name longer than the room is cut, whole
    // in its tooltip.
    s += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/><text "
        "class=\"legend\" x=\"{}\" y=\"{}\"><title>{}</title>{}</text>\n",
        f.left + f.w + 10, f.left + f.w + 28, f.top + 15 + 16 * k, f.top + 15 + 16 * k, colour,
        dash, f.left + f.w + 32, f.top + 19 + 16 * k, xml_escape(se.name),
        legend_text(se.name, 24));
    ++k;
  }
  return s + "</svg>\n";
}

std::string paired_bars_svg(const std::string& id, const std::string& title,
                            const std::string& unit, const std::vector<PairedBar>& rows) {
  const int left = 200, plot_w = 420, row = 30;
  const int h = 60 + row * static_cast<int>(rows.size()) + 20;
  double most = 0;
  for (const PairedBar& r : rows) most = std::max({most, std::fabs(r.a), std::fabs(r.b)});
  if (!(most > 0)) most = 1;
  std::string s = head(id, left + plot_w + 160, h, title);
  s += fmt::format(
      "<rect x=\"{}\" y=\"24\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" "
      "y=\"33\">A</text><rect x=\"{}\" y=\"24\" width=\"10\" height=\"10\" fill=\"{}\"/><text "
      "x=\"{}\" y=\"33\">B</text>\n",
      left, k_colours[0], left + 14, left + 40, k_colours[1], left + 54);
  int k = 0;
  for (const PairedBar& r : rows) {
    const int y = 44 + k * row;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6, y + 14,
                     xml_escape(r.label));
    int j = 0;
    for (const double v : {r.a, r.b}) {
      s += fmt::format(
          "<rect class=\"pair\" data-label=\"{}\" data-which=\"{}\" data-value=\"{:.17g}\" "
          "x=\"{}\" y=\"{}\" width=\"{:.2f}\" height=\"11\" fill=\"{}\"><title>{} {}: {:.6g} "
          "{}</title></rect><text x=\"{:.2f}\" y=\"{}\" font-size=\"9\">{:.4g}</text>\n",
          xml_escape(r.label), j == 0 ? "a" : "b", v, left, y + j * 12,
          plot_w * std::fabs(v) / most, k_colours[j], xml_escape(r.label), j == 0 ? "A" : "B", v,
          xml_escape(unit), left + plot_w * std::fabs(v) / most + 4, y + j * 12 + 9, v);
      ++j;
    }
    ++k;
  }
  return s + "</svg>\n";
}

}  // namespace trainledger::report
