// Charts of an RL plan (docs/rl.md#charts): one step as a timeline lane by lane, and the memory
// per GPU at each phase of the step stacked by what holds it. Every mark carries its item id
// and values (data attributes, and a <title> tooltip with the formula), so the picture and the
// JSON report agree; Okabe and Ito's colours; fixed precision.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "chart_parts.hpp"
#include "charts.hpp"
#include "format.hpp"

namespace trainledger::report {

namespace {

using namespace chart_parts;

// The colour of each part of the step, in the order of rl.time.
const char* part_colour(ItemId id) {
  switch (id) {
    case ItemId::rl_time_prefill:
      return k_sky;
    case ItemId::rl_time_decode:
      return k_blue;
    case ItemId::rl_time_log_probs:
      return k_yellow;
    case ItemId::rl_time_reference:
      return k_orange;
    case ItemId::rl_time_reward:
      return k_purple;
    case ItemId::rl_time_values:
      return k_purple;
    case ItemId::rl_time_training:
      return k_green;
    case ItemId::rl_time_critic_training:
      return "#66C2A5";
    case ItemId::rl_time_weight_sync:
      return k_vermillion;
    default:
      return k_grey;
  }
}

std::size_t chars_of(const std::string& text) {
  std::size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

// A round step for an axis of `span` units with about `ticks` ticks: 1, 2 or 5 × 10^k.
double axis_step(double span, int ticks) {
  const double raw = span / std::max(1, ticks);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

// What holds the memory of an RL phase, in drawing order: the trainer's state, the frozen
// models, the engine's weights, its KV cache, the passes' working sets and buffers, overheads.
struct RlCategory {
  const char* name;
  const char* colour;
};
const RlCategory k_rl_categories[] = {{"training state", k_blue},
                                      {"frozen models", k_sky},
                                      {"engine weights", k_purple},
                                      {"KV cache", k_orange},
                                      {"activations and buffers", k_yellow},
                                      {"overheads", k_grey}};

int rl_category(const LineItem& i) {
  switch (i.item) {
    case ItemId::rl_trainer_resident:
    case ItemId::rl_critic_weights:
      return 0;
    case ItemId::rl_reference_weights:
      return 1;
    case ItemId::rl_engine_weights:
    case ItemId::rl_engine_asleep:
      return 2;
    case ItemId::rl_kv_cache:
      return 3;
    case ItemId::rl_forward:
    case ItemId::rl_engine_activations:
    case ItemId::rl_sync_buffer:
      return 4;
    case ItemId::rl_cuda_graphs:
      return 5;
    default:
      break;
  }
  const Role r = info(i.item).role;
  if (r == Role::activation || r == Role::temporary) return 4;
  if (r == Role::overhead) return 5;
  return 0;  // the training phase's weights, gradients, optimizer state
}

std::string no_rl(const char* id, const std::string& title) {
  return svg_open(id, 520, 60, title) +
         "<text x=\"8\" y=\"40\">not an RL plan: the plan has no [rl] section "
         "(docs/rl.md)</text></svg>\n";
}

}  // namespace

std::string chart_rl_timeline(const PlanResult& plan) {
  const RlResult& rl = plan.rl;
  if (!rl.present) return no_rl("chart-rl-timeline", "One RL step");
  const LineItem* step = find_item(rl.time, ItemId::rl_time_step);
  const bool split = plan.input.rl.placement == RlPlacement::split;
  const bool off = split && plan.input.rl.off_policy;
  const std::string title =
      step && step->value > 0
          ? fmt::format(
                "One RL step: {} ({})", format_item_value(*step, MemUnits::gib),
                split ? (off ? "split, one-step off-policy" : "split, on-policy") : "colocated")
          : std::string("One RL step");
  // The parts drawn, for the legend: each rl.time part that has a span, in rl.time's order.
  std::vector<const LineItem*> parts;
  for (const LineItem& i : rl.time)
    for (const RlSpan& sp : rl.timeline)
      if (sp.item == i.item) {
        parts.push_back(&i);
        break;
      }
  const std::vector<std::string> lanes =
      split ? std::vector<std::string>{"rollout", "training"} : std::vector<std::string>{"all"};
  const int left = 130, plot_w = 600, row = 30, top_y = 34;
  const int axis_y = top_y + row * static_cast<int>(lanes.size()) + 4;
  const int legend_y = axis_y + 34;
  int w = left + plot_w + 30;
  for (const LineItem* i : parts)
    w = std::max(w, 40 + 7 * static_cast<int>(chars_of(i->label) + 28));
  const int h = legend_y + 16 * static_cast<int>(parts.size()) + (off ? 20 : 4);
  std::string s = svg_open("chart-rl-timeline", w, h, title);
  if (!step || !(step->value > 0) || rl.timeline.empty())
    return s + "<text x=\"8\" y=\"40\">no step time</text></svg>\n";
  const double end = step->value;
  auto x = [&](double t) { return left + plot_w * t / end; };
  // Axis: seconds (or minutes past 5 minutes) from the step's start.
  const bool minutes = end > 300;
  const double unit = minutes ? 60.0 : 1.0;
  const double tick = axis_step(end / unit, 6) * unit;
  for (double t = 0; t <= end * (1 + 1e-9); t += tick)
    s += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{}\" "
        "text-anchor=\"middle\">{:g}</text>\n",
        num(x(t)), num(x(t)), top_y, axis_y, num(x(t)), axis_y + 14, t / unit);
  s += fmt::format("<text class=\"unit\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
                   left - 6, axis_y + 14, minutes ? "min" : "s");
  for (std::size_t l = 0; l < lanes.size(); ++l) {
    const int yy = top_y + static_cast<int>(l) * row;
    const std::string name =
        lanes[l] == "all" ? fmt::format("all {} GPUs", rl.total_gpus)
                          : fmt::format("{} ({} GPUs)", lanes[l],
                                        lanes[l] == "rollout" ? rl.rollout_gpus
                                                              : rl.total_gpus - rl.rollout_gpus);
    s += fmt::format(
        "<rect class=\"idle\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#eee\"/>"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
        left, yy, plot_w, row - 6, left - 6, yy + row / 2, xml_escape(name));
    for (const RlSpan& sp : rl.timeline) {
      if (sp.lane != lanes[l]) continue;
      const LineItem* i = find_item(rl.time, sp.item);
      if (!i) continue;
      const double wpx = std::max(0.5, x(sp.end_s) - x(sp.start_s));
      s += fmt::format(
          "<rect class=\"rl-span\" data-item=\"{}\" data-lane=\"{}\" data-start=\"{}\" "
          "data-end=\"{}\" data-exposed=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
          "fill=\"{}\"{} stroke=\"#fff\" stroke-width=\"0.5\">{}</rect>\n",
          xml_escape(i->id), xml_escape(sp.lane), exact(sp.start_s), exact(sp.end_s),
          exact(sp.exposed_s), num(x(sp.start_s)), yy, num(wpx), row - 6, part_colour(sp.item),
          sp.exposed_s > 0 ? "" : " fill-opacity=\"0.45\"", tooltip(*i, MemUnits::gib));
    }
  }
  // The legend: each part's time and its share of the step (the time the step waits for).
  int ly = legend_y;
  for (const LineItem* i : parts) {
    double exposed = 0;
    for (const RlSpan& sp : rl.timeline)
      if (sp.item == i->item) exposed += sp.exposed_s;
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{}\">{}: {} ({})</text>\n",
        left - 110, ly - 9, part_colour(i->item), left - 96, ly, xml_escape(i->label),
        xml_escape(format_item_value(*i, MemUnits::gib)),
        exposed > 0 ? format_percent(exposed / end) + " of the step" : "overlapped");
    ly += 16;
  }
  if (off)
    s += fmt::format(
        "<text class=\"note\" x=\"{}\" y=\"{}\">pale: overlapped (the engines generate the next "
        "step's samples while this one trains)</text>\n",
        left - 110, ly + 2);
  return s + "</svg>\n";
}

std::string chart_rl_memory(const PlanResult& plan, MemUnits u) {
  const RlResult& rl = plan.rl;
  if (!rl.present || rl.phases.empty())
    return no_rl("chart-rl-memory", "Memory per GPU at each phase of the RL step");
  const double capacity = static_cast<double>(plan.input.cluster.gpu.memory_bytes);
  double top = capacity;
  for (const RlPhase& ph : rl.phases) top = std::max(top, ph.peak_bytes);
  top *= 1.08;
  const bool split = plan.input.rl.placement == RlPlacement::split;
  const int n = static_cast<int>(rl.phases.size());
  const int bar = 70, gap = 34, left = 60, plot_h = 240, top_y = 40;
  const int right = left + n * (bar + gap);
  const int w = right + 200, h = top_y + plot_h + (split ? 48 : 34);
  auto y = [&](double bytes) { return top_y + plot_h - plot_h * bytes / top; };
  std::string s = svg_open(
      "chart-rl-memory", w, h,
      fmt::format("Memory per GPU at each phase of the RL step ({})", memory_unit_name(u)));
  s += memory_ticks(u, top, left, right, y);
  for (int k = 0; k < n; ++k) {
    const RlPhase& ph = rl.phases[static_cast<std::size_t>(k)];
    const int x = left + k * (bar + gap);
    double base = 0;
    for (int c = 0; c < 6; ++c)
      for (const LineItem& i : ph.items) {
        if (rl_category(i) != c || !(i.value > 0)) continue;
        s += fmt::format(
            "<rect class=\"rl-mem\" data-phase=\"{}\" data-pool=\"{}\" data-item=\"{}\" "
            "data-bytes=\"{:.0f}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
            "stroke=\"#fff\" stroke-width=\"0.5\">{}</rect>\n",
            xml_escape(ph.name), xml_escape(ph.pool), xml_escape(i.id), i.value, x,
            num(y(base + i.value)), bar, num(plot_h * i.value / top), k_rl_categories[c].colour,
            tooltip(i, u));
        base += i.value;
      }
    const bool worst = k == rl.worst;
    const char* bold = worst || !ph.fits ? " font-weight=\"bold\"" : "";
    s += fmt::format(
        "<text class=\"rl-phase-total\" data-phase=\"{}\" data-pool=\"{}\" data-bytes=\"{:.0f}\" "
        "x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\"{}{}>{}</text>\n"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\"{}>{}{}</text>\n",
        xml_escape(ph.name), xml_escape(ph.pool), ph.peak_bytes, x + bar / 2,
        num(y(ph.peak_bytes) - 4), bold, ph.fits ? "" : fmt::format(" fill=\"{}\"", k_vermillion),
        xml_escape(memory_with_unit(ph.peak_bytes, u)), x + bar / 2, top_y + plot_h + 14, bold,
        xml_escape(ph.name), worst ? " ▲" : "");
    if (split)
      s += fmt::format(
          "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"9\">{} pool"
          "</text>\n",
          x + bar / 2, top_y + plot_h + 27, xml_escape(ph.pool));
  }
  s += capacity_lines(plan, u, left, right, y);
  int ly = top_y + 10;
  for (const RlCategory& c : k_rl_categories) {
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{}\">{}</text>\n",
        right + 14, ly, c.colour, right + 28, ly + 9, c.name);
    ly += 16;
  }
  s += fmt::format(
      "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/><text x=\"{}\" "
      "y=\"{}\">capacity {}</text>\n<text x=\"{}\" y=\"{}\">▲ least left</text>\n",
      right + 14, right + 24, ly + 5, ly + 5, k_vermillion, right + 28, ly + 9,
      xml_escape(memory_with_unit(capacity, u)), right + 14, ly + 25);
  return s + "</svg>\n";
}

std::string mermaid_rl_timeline(const PlanResult& plan) {
  // One RL step as a gantt of whole milliseconds, a section per lane; overlapped parts are
  // marked done (drawn pale), as the SVG chart draws them.
  const RlResult& rl = plan.rl;
  const LineItem* step = find_item(rl.time, ItemId::rl_time_step);
  if (!rl.present || !step || !(step->value > 0) || rl.timeline.empty()) return "";
  std::string s = fmt::format(
      "\n```mermaid\ngantt\n  title One RL step: {} (axis: min:s)\n  dateFormat x\n  "
      "axisFormat %M:%S\n",
      format_item_value(*step, MemUnits::gib));
  std::string lane;
  for (const RlSpan& sp : rl.timeline) {
    if (sp.lane != lane) {
      lane = sp.lane;
      s += fmt::format("  section {}\n", lane == "all" ? "all GPUs" : lane + " GPUs");
    }
    const std::string name(info(sp.item).name);
    s += fmt::format("  {} :{}{:.0f}, {:.0f}\n", name.substr(name.rfind('.') + 1),
                     sp.exposed_s > 0 ? "" : "done, ", sp.start_s * 1e3,
                     std::max(sp.start_s * 1e3 + 1, sp.end_s * 1e3));
  }
  return s + "```\n";
}

}  // namespace trainledger::report
