// Pieces the plan's charts share (charts.cpp, rl_charts.cpp): Okabe and Ito's colours, fixed
// precision numbers, the SVG's opening, tooltips, the memory axis and the capacity lines.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "format.hpp"
#include "trainledger/plan.hpp"
#include "trainledger/report.hpp"

namespace trainledger::report::chart_parts {

inline constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;

// Okabe-Ito.
inline constexpr const char* k_blue = "#0072B2";
inline constexpr const char* k_orange = "#E69F00";
inline constexpr const char* k_green = "#009E73";
inline constexpr const char* k_sky = "#56B4E9";
inline constexpr const char* k_vermillion = "#D55E00";
inline constexpr const char* k_purple = "#CC79A7";
inline constexpr const char* k_yellow = "#F0E442";
inline constexpr const char* k_grey = "#999999";

inline std::string num(double v) { return fmt::format("{:.2f}", v); }
inline std::string exact(double v) { return fmt::format("{:.17g}", v); }

inline std::string tooltip(const LineItem& i, MemUnits u) {
  return fmt::format("<title>{}: {} — {}</title>", xml_escape(i.id),
                     xml_escape(format_item_value(i, u)), xml_escape(i.formula));
}

inline std::string svg_open(const char* id, int w, int h, const std::string& title) {
  // Wide enough for its title: 13 px bold sans-serif is at most about 8 px a character.
  int chars = 0;
  for (unsigned char c : title)
    if ((c & 0xC0) != 0x80) ++chars;
  w = std::max(w, 16 + 8 * chars);
  return fmt::format(
      "<svg id=\"{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<text x=\"8\" y=\"16\" font-size=\"13\" "
      "font-weight=\"bold\">{}</text>\n",
      id, w, h, w, h, xml_escape(title), xml_escape(title));
}

inline double item_value(const std::vector<LineItem>& items, ItemId id) {
  const LineItem* i = find_item(items, id);
  return i ? i->value : 0;
}

inline double term_of(const LineItem* i, const char* key) {
  if (!i) return 0;
  for (const Term& t : i->terms)
    if (t.key == key) return t.value;
  return 0;
}

// Horizontal grid lines and labels in GiB (or GB) from 0 to `top` bytes.
template <typename Y>
inline std::string memory_ticks(MemUnits u, double top, int left, int right, const Y& y) {
  std::string s;
  const double unit = u == MemUnits::gb ? 1e9 : k_gib;
  const double step = std::pow(10.0, std::floor(std::log10(top / unit / 2)));
  for (double t = 0; t * unit <= top; t += step * (top / unit / step > 8 ? 2 : 1))
    s += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{}\" "
        "text-anchor=\"end\">{:g}</text>\n",
        left, right, num(y(t * unit)), num(y(t * unit)), left - 4, num(y(t * unit) + 4), t);
  // The axis's unit, above its top tick.
  s += fmt::format("<text class=\"unit\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
                   left - 4, num(y(top) - 2), memory_unit_name(u));
  return s;
}

// The capacity and the limit with the required headroom, as horizontal lines.
template <typename Y>
inline std::string capacity_lines(const PlanResult& plan, MemUnits u, int left, int right,
                                  const Y& y) {
  const double capacity = static_cast<double>(plan.input.cluster.gpu.memory_bytes);
  const double limit = capacity * (1 - plan.verdict.required_headroom);
  return fmt::format(
      "<line class=\"capacity\" data-bytes=\"{:.0f}\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" "
      "stroke=\"{}\" stroke-width=\"1.5\"><title>capacity: {}</title></line>\n"
      "<line class=\"limit\" data-bytes=\"{:.0f}\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" "
      "stroke=\"{}\" stroke-dasharray=\"5 3\"><title>limit with {:.0f} % headroom: "
      "{}</title></line>\n",
      capacity, left, right, num(y(capacity)), num(y(capacity)), k_vermillion,
      memory_with_unit(capacity, u), limit, left, right, num(y(limit)), num(y(limit)), k_vermillion,
      100 * plan.verdict.required_headroom, memory_with_unit(limit, u));
}

}  // namespace trainledger::report::chart_parts
