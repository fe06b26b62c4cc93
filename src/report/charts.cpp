// Charts of a plan as inline SVG (docs/cli.md#charts): memory per stage by role, the pipeline
// schedule, the step as a waterfall, communication per dimension, the checkpoint trade-off.
// Every mark carries its item id and value (data attributes, and a <title> tooltip with the
// formula), so the picture and `explain` agree. Colours: Okabe and Ito's palette, readable by
// colour-blind readers; labels carry the values for print. Deterministic: fixed precision.
#include "charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "chart_parts.hpp"
#include "format.hpp"
#include "trainledger/timeline.hpp"

namespace trainledger::report {

namespace {

using namespace chart_parts;

// The memory categories of the stacked bars, in drawing order.
struct Category {
  const char* name;
  const char* colour;
};
const Category k_categories[] = {{"weights", k_blue},       {"gradients", k_sky},
                                 {"optimizer", k_green},    {"activations", k_orange},
                                 {"temporaries", k_yellow}, {"overheads", k_grey}};

int category_of(const LineItem& i) {
  const ItemInfo& in = info(i.item);
  if (in.role == Role::activation) return 3;
  if (in.role == Role::temporary) return 4;
  if (in.role == Role::overhead) return 5;
  if (i.id.rfind("grads", 0) == 0) return 1;
  if (i.id.rfind("optimizer", 0) == 0 || i.id.rfind("master", 0) == 0) return 2;
  return 0;
}

// One bar of a ledger stacked by role (k_categories' order), a rect per item with its id and
// bytes; `attrs` gives the rects' class and where they belong (data-stage, data-phase).
template <typename Y>
std::string stacked_bar(const std::vector<LineItem>& items, const std::string& attrs, int x,
                        int bar, int plot_h, double top, MemUnits u, const Y& y) {
  std::string s;
  double base = 0;
  for (int c = 0; c < 6; ++c)
    for (const LineItem& i : items) {
      if (category_of(i) != c || !(i.value > 0)) continue;
      s += fmt::format(
          "<rect {} data-item=\"{}\" data-bytes=\"{:.0f}\" x=\"{}\" y=\"{}\" width=\"{}\" "
          "height=\"{}\" fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.5\">{}</rect>\n",
          attrs, xml_escape(i.id), i.value, x, num(y(base + i.value)), bar,
          num(plot_h * i.value / top), k_categories[c].colour, tooltip(i, u));
      base += i.value;
    }
  return s;
}

// The most stages a chart of stages draws: past it, the first and the last half of it (and the
// worst stage between them), so a chart stays small for any pp.
constexpr int k_drawn_stages = 32;

std::vector<int> chart_stages(int n, int worst) {
  std::vector<int> out;
  const int half = k_drawn_stages / 2;
  for (int s = 0; s < n; ++s) {
    if (n > k_drawn_stages && s == half) {
      if (worst >= half && worst < n - half) out.push_back(worst);
      s = n - half;
    }
    out.push_back(s);
  }
  return out;
}

// "stages 0-15, 517 and 1008-1023 of 1024" for the stages drawn (ascending); empty when they
// are all of them.
std::string stages_drawn(const std::vector<int>& drawn, int n) {
  if (static_cast<int>(drawn.size()) >= n) return {};
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < drawn.size();) {
    std::size_t j = i;
    while (j + 1 < drawn.size() && drawn[j + 1] == drawn[j] + 1) ++j;
    runs.push_back(i == j ? std::to_string(drawn[i]) : fmt::format("{}-{}", drawn[i], drawn[j]));
    i = j + 1;
  }
  std::string list;
  for (std::size_t k = 0; k < runs.size(); ++k)
    list += (k == 0 ? "" : k + 1 == runs.size() ? " and " : ", ") + runs[k];
  return fmt::format("stages {} of {}", list, n);
}

// The caption of a chart that leaves stages out: what it draws, and how many it leaves out.
std::string left_out_caption(const std::vector<int>& drawn, int n) {
  return fmt::format("{} drawn; the other {} are left out", stages_drawn(drawn, n),
                     n - static_cast<int>(drawn.size()));
}

}  // namespace

std::string chart_memory(const PlanResult& plan, MemUnits u) {
  const int n = static_cast<int>(plan.stages.size());
  const std::vector<int> drawn = chart_stages(n, plan.worst_stage);
  const bool all = static_cast<int>(drawn.size()) == n;
  const double capacity = static_cast<double>(plan.input.cluster.gpu.memory_bytes);
  double top = capacity;
  for (const StageMemory& s : plan.stages) top = std::max(top, s.peak_bytes);
  top *= 1.08;
  // A column per stage drawn, and an empty one where stages are left out.
  int columns = 0;
  std::vector<int> column;
  for (std::size_t k = 0; k < drawn.size(); ++k) {
    if (k > 0 && drawn[k] != drawn[k - 1] + 1) ++columns;
    column.push_back(columns++);
  }
  const int bar = std::clamp(600 / std::max(1, columns), 6, 60);
  const int gap = std::max(2, bar / 4);
  const int left = 60, plot_h = 300, top_y = 40;
  const int w = left + columns * (bar + gap) + 170;
  const int h = top_y + plot_h + 60 + (all ? 0 : 16);
  auto y = [&](double bytes) { return top_y + plot_h - plot_h * bytes / top; };
  std::string s = svg_open(
      "chart-memory", w, h,
      fmt::format("Memory per GPU by stage, at each stage's peak ({})", memory_unit_name(u)));
  s += memory_ticks(u, top, left, left + columns * (bar + gap), y);
  for (std::size_t k = 0; k < drawn.size(); ++k) {
    const int st = drawn[k];
    const StageMemory& sm = plan.stages[static_cast<std::size_t>(st)];
    const int x = left + column[k] * (bar + gap);
    s += stacked_bar(sm.items, fmt::format("class=\"mem\" data-stage=\"{}\"", st), x, bar, plot_h,
                     top, u, y);
    // Above the bar: its peak and phase where the bar is wide enough for them, the phase alone
    // otherwise; a stage over the capacity is outlined and says by how much.
    const double over = sm.peak_bytes - capacity;
    if (over > 0)
      s += fmt::format(
          "<rect class=\"over\" data-stage=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
          "fill=\"none\" stroke=\"{}\" stroke-width=\"2\"><title>stage {}: {} over the "
          "capacity</title></rect>\n",
          st, x - 1, num(y(sm.peak_bytes) - 1), bar + 2, num(y(0) - y(sm.peak_bytes) + 2),
          k_vermillion, st, xml_escape(memory_with_unit(over, u)));
    const std::string value = format_memory(sm.peak_bytes, u);
    const std::string label = over > 0 && bar >= 40
                                  ? fmt::format("+{} over", format_memory(over, u))
                              : bar >= 40 ? fmt::format("{} {}", value, to_string(sm.peak_phase))
                              : over > 0  ? std::string("over")
                                          : std::string(to_string(sm.peak_phase));
    s += fmt::format(
        "<text class=\"peak\" data-stage=\"{}\" data-bytes=\"{:.0f}\" x=\"{}\" y=\"{}\" "
        "text-anchor=\"middle\" font-size=\"9\"{}>{}{}</text>\n",
        st, sm.peak_bytes, x + bar / 2, num(y(sm.peak_bytes) - 4),
        over > 0 ? fmt::format(" fill=\"{}\" font-weight=\"bold\"", k_vermillion) : "", label,
        st == plan.worst_stage ? " ▲" : "");
    // Every stage's number up to 16, else every n/16-th; of a chart that leaves stages out, the
    // ends of each run, every fourth and the worst.
    const bool edge =
        k == 0 || k + 1 == drawn.size() || drawn[k - 1] + 1 != st || drawn[k + 1] != st + 1;
    if (all ? n <= 16 || st % std::max(1, n / 16) == 0
            : edge || k % 4 == 0 || st == plan.worst_stage)
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x + bar / 2,
                       top_y + plot_h + 14, st);
    if (k + 1 < drawn.size() && column[k + 1] != column[k] + 1)
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">…</text>\n",
                       x + bar + gap + bar / 2, top_y + plot_h + 14);
  }
  const int right = left + columns * (bar + gap);
  s += capacity_lines(plan, u, left, right, y);
  s += fmt::format("<text x=\"{}\" y=\"{}\">stage (▲ worst, label: peak phase)</text>\n", left,
                   top_y + plot_h + 30);
  if (!all)
    s += fmt::format("<text class=\"left-out\" x=\"{}\" y=\"{}\">{}</text>\n", left,
                     top_y + plot_h + 46, xml_escape(left_out_caption(drawn, n)));
  int ly = top_y + 10;
  for (const Category& c : k_categories) {
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{}\">{}</text>\n",
        right + 14, ly, c.colour, right + 28, ly + 9, c.name);
    ly += 16;
  }
  s += fmt::format(
      "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/><text x=\"{}\" "
      "y=\"{}\">capacity {}</text>\n<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" "
      "stroke-dasharray=\"5 3\"/><text x=\"{}\" y=\"{}\">limit (headroom)</text>\n",
      right + 14, right + 24, ly + 5, ly + 5, k_vermillion, right + 28, ly + 9,
      memory_with_unit(capacity, u), right + 14, right + 24, ly + 21, ly + 21, k_vermillion,
      right + 28, ly + 25);
  // The worst stage's total at every phase (small multiple).
  const StageMemory& worst = plan.stages[static_cast<std::size_t>(plan.worst_stage)];
  ly += 46;
  s += fmt::format("<text x=\"{}\" y=\"{}\">stage {} by phase</text>\n", right + 14, ly,
                   plan.worst_stage);
  for (const PhaseTotal& p : worst.phases) {
    ly += 14;
    const double wbar = 100 * p.bytes / top;
    s += fmt::format(
        "<rect class=\"phase\" data-phase=\"{}\" data-bytes=\"{:.0f}\" x=\"{}\" y=\"{}\" "
        "width=\"{}\" height=\"10\" fill=\"{}\"><title>{}: {}</title></rect><text x=\"{}\" "
        "y=\"{}\" font-size=\"9\">{}</text>\n",
        to_string(p.phase), p.bytes, right + 14, ly - 9, num(wbar),
        p.phase == worst.peak_phase ? k_vermillion : k_grey, to_string(p.phase),
        memory_with_unit(p.bytes, u), right + 18 + static_cast<int>(wbar), ly, to_string(p.phase));
  }
  return s + "</svg>\n";
}

std::string chart_phases(const PlanResult& plan, MemUnits u) {
  // The worst stage's ledger at every phase, stacked by role like the memory chart: what is
  // held when (the state at init, the activations in forward and backward, the optimizer's
  // temporaries in its step, the checkpoint's staging).
  const int stage = plan.worst_stage;
  const StageMemory& worst = plan.stages[static_cast<std::size_t>(stage)];
  const double capacity = static_cast<double>(plan.input.cluster.gpu.memory_bytes);
  double top = capacity;
  for (const PhaseTotal& p : worst.phases) top = std::max(top, p.bytes);
  top *= 1.08;
  const int n = static_cast<int>(worst.phases.size());
  const int bar = 70, gap = 30, left = 60, plot_h = 240, top_y = 40;
  const int right = left + n * (bar + gap);
  const int w = right + 20, h = top_y + plot_h + 40;
  auto y = [&](double bytes) { return top_y + plot_h - plot_h * bytes / top; };
  std::string s = svg_open("chart-phases", w, h,
                           fmt::format("Stage {} (the worst) at each phase of the step ({})", stage,
                                       memory_unit_name(u)));
  s += memory_ticks(u, top, left, right, y);
  for (int k = 0; k < n; ++k) {
    const PhaseTotal& pt = worst.phases[static_cast<std::size_t>(k)];
    const std::vector<LineItem> items = phase_ledger(plan.input, stage, pt.phase);
    const int x = left + k * (bar + gap);
    s += stacked_bar(items,
                     fmt::format("class=\"phase-mem\" data-phase=\"{}\"", to_string(pt.phase)), x,
                     bar, plot_h, top, u, y);
    const bool peak = pt.phase == worst.peak_phase;
    s += fmt::format(
        "<text class=\"phase-total\" data-phase=\"{}\" data-bytes=\"{:.0f}\" x=\"{}\" y=\"{}\" "
        "text-anchor=\"middle\" font-size=\"10\"{}>{}</text>\n<text x=\"{}\" y=\"{}\" "
        "text-anchor=\"middle\"{}>{}{}</text>\n",
        to_string(pt.phase), pt.bytes, x + bar / 2, num(y(pt.bytes) - 4),
        peak ? " font-weight=\"bold\"" : "", xml_escape(memory_with_unit(pt.bytes, u)), x + bar / 2,
        top_y + plot_h + 14, peak ? " font-weight=\"bold\"" : "", to_string(pt.phase),
        peak ? " ▲ peak" : "");
  }
  s += capacity_lines(plan, u, left, right, y);
  return s + "</svg>\n";
}

std::string chart_step(const PlanResult& plan) {
  std::vector<const LineItem*> parts;
  for (const LineItem& i : plan.time)
    if (info(i.item).step_part && i.value > 0) parts.push_back(&i);
  const LineItem* step = find_item(plan.time, ItemId::time_step);
  const int w = 800, row = 24, left = 250, plot_w = 440;
  const int h = 40 + row * static_cast<int>(parts.size() + 1) + 30;
  std::string s = svg_open("chart-step", w, h, "The step as a waterfall");
  if (!step || !(step->value > 0)) return s + "<text x=\"8\" y=\"40\">no step time</text></svg>\n";
  const double total = step->value;
  double at = 0;
  const char* colours[] = {k_blue, k_purple, k_vermillion, k_grey, k_green, k_sky};
  int r = 0;
  for (const LineItem* i : parts) {
    const int yy = 30 + r * row;
    s += fmt::format(
        "<rect class=\"step\" data-item=\"{}\" data-seconds=\"{}\" x=\"{}\" y=\"{}\" "
        "width=\"{}\" height=\"{}\" fill=\"{}\">{}</rect><text x=\"{}\" y=\"{}\" "
        "text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\">{}</text>\n",
        xml_escape(i->id), exact(i->value), num(left + plot_w * at / total), yy,
        num(plot_w * i->value / total), row - 6, colours[r % 6], tooltip(*i, MemUnits::gib),
        left - 6, yy + 12, xml_escape(i->label), num(left + plot_w * (at + i->value) / total + 4),
        yy + 12, xml_escape(format_item_value(*i, MemUnits::gib)));
    at += i->value;
    ++r;
  }
  const int yy = 30 + r * row;
  s += fmt::format(
      "<rect class=\"step\" data-item=\"time.step\" data-seconds=\"{}\" x=\"{}\" y=\"{}\" "
      "width=\"{}\" height=\"{}\" fill=\"#333\">{}</rect><text x=\"{}\" y=\"{}\" "
      "text-anchor=\"end\" font-weight=\"bold\">step</text><text x=\"{}\" y=\"{}\">{}</text>\n",
      exact(total), left, yy, plot_w, row - 6, tooltip(*step, MemUnits::gib), left - 6, yy + 12,
      left + plot_w + 4, yy + 12, xml_escape(format_item_value(*step, MemUnits::gib)));
  return s + "</svg>\n";
}

std::string chart_schedule(const PlanResult& plan) {
  const ParallelSpec& p = plan.input.parallel;
  const DrawnSchedule d = drawn_schedule(plan);
  const std::vector<PipelineOp>& ops = d.ops;
  const double end = d.end_s;
  const bool all = static_cast<int>(d.drawn.size()) == d.stages;
  // A row per stage drawn, and an empty one where stages are left out.
  std::vector<int> row_of(d.drawn.size());
  int rows = 0;
  for (std::size_t k = 0; k < d.drawn.size(); ++k) {
    if (k > 0 && d.drawn[k] != d.drawn[k - 1] + 1) ++rows;
    row_of[k] = rows++;
  }
  auto row_index = [&](int stage) {
    const auto at = std::lower_bound(d.drawn.begin(), d.drawn.end(), stage);
    return row_of[static_cast<std::size_t>(at - d.drawn.begin())];
  };
  std::vector<std::string> captions;  // what the chart leaves out
  if (!all) captions.push_back(left_out_caption(d.drawn, d.stages));
  if (d.capped && d.shown > 0)
    captions.push_back(
        fmt::format("{} of {} micro-batches simulated: a chart simulates at most "
                    "8,192 ops",
                    d.shown, d.micro_batches));
  const int row = std::clamp(240 / std::max(1, rows), 6, 22);
  const int left = 60, plot_w = 660;
  const int w = left + plot_w + 20;
  const int h = 50 + row * rows + 50 + 16 * static_cast<int>(captions.size());
  std::string s = svg_open(
      "chart-schedule", w, h,
      fmt::format("Pipeline schedule ({}{}), {} of {} micro-batches", to_string(p.schedule),
                  p.schedule == Schedule::interleaved ? fmt::format(" × {}", p.virtual_stages) : "",
                  d.shown, d.micro_batches));
  if (ops.empty() || !(end > 0)) {
    if (d.capped && d.shown == 0)
      return s + fmt::format(
                     "<text class=\"left-out\" x=\"8\" y=\"40\">not drawn: one micro-batch "
                     "on {} stages is more than the 8,192 ops a chart simulates (bubble: {} of "
                     "the pipeline)</text></svg>\n",
                     d.stages,
                     format_percent(item_value(plan.time, ItemId::pipeline_bubble_fraction)));
    if (p.schedule == Schedule::dualpipev)
      return s + fmt::format(
                     "<text class=\"left-out\" x=\"8\" y=\"40\">not drawn: DualPipeV's "
                     "overlapped forward-backward pairs (bubble: {} of the pipeline, "
                     "docs/formulas.md#pipeline)</text></svg>\n",
                     format_percent(item_value(plan.time, ItemId::pipeline_bubble_fraction)));
    return s + "<text x=\"8\" y=\"40\">no schedule to draw</text></svg>\n";
  }
  auto x = [&](double t) { return left + plot_w * t / end; };
  for (std::size_t k = 0; k < d.drawn.size(); ++k) {
    const int st = d.drawn[k];
    const int yy = 30 + row_of[k] * row;
    // The idle time (bubble) shaded behind the ops.
    s += fmt::format(
        "<rect class=\"idle\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#eee\"/>"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
        left, yy, plot_w, row - 2, left - 4, yy + row / 2 + 4, st);
    if (k + 1 < d.drawn.size() && row_of[k + 1] != row_of[k] + 1)
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">…</text>\n", left - 4,
                       yy + row + row / 2 + 4);
  }
  for (const PipelineOp& o : ops) {
    const char* fill = o.kind == OpKind::forward    ? k_blue
                       : o.kind == OpKind::backward ? k_orange
                                                    : k_green;
    s += fmt::format(
        "<rect class=\"op\" data-stage=\"{}\" data-mb=\"{}\" data-kind=\"{}\" x=\"{}\" y=\"{}\" "
        "width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.3\"><title>stage "
        "{} {} micro-batch {}{}: {:.1f}-{:.1f} ms</title></rect>\n",
        o.stage, o.micro_batch, static_cast<char>(o.kind), num(x(o.start_s)),
        30 + row_index(o.stage) * row, num(x(o.end_s) - x(o.start_s)), row - 2, fill, o.stage,
        o.kind == OpKind::forward    ? "forward"
        : o.kind == OpKind::backward ? "backward"
                                     : "weight grad",
        o.micro_batch, p.virtual_stages > 1 ? fmt::format(" chunk {}", o.chunk) : "",
        o.start_s * 1e3, o.end_s * 1e3);
  }
  const int ly = 30 + rows * row + 16;
  s += fmt::format(
      "<text x=\"{}\" y=\"{}\">0</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.1f} ms</text>"
      "\n<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" "
      "y=\"{}\">forward</text><rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
      "<text x=\"{}\" y=\"{}\">backward{}</text><rect x=\"{}\" y=\"{}\" width=\"10\" "
      "height=\"10\" fill=\"#eee\" stroke=\"#ccc\"/><text x=\"{}\" y=\"{}\">idle (bubble: {} of "
      "the pipeline)</text>\n",
      left, ly, left + plot_w, ly, end * 1e3, left, ly + 8, k_blue, left + 14, ly + 17, left + 80,
      ly + 8, k_orange, left + 94, ly + 17,
      p.schedule == Schedule::zb_h1 ? " (input grad; weight grad in green)" : "", left + 330,
      ly + 8, left + 344, ly + 17,
      format_percent(item_value(plan.time, ItemId::pipeline_bubble_fraction)));
  for (std::size_t k = 0; k < captions.size(); ++k)
    s += fmt::format("<text class=\"left-out\" x=\"{}\" y=\"{}\">{}</text>\n", left,
                     ly + 34 + 16 * static_cast<int>(k), xml_escape(captions[k]));
  return s + "</svg>\n";
}

std::string chart_comm(const PlanResult& plan, MemUnits u) {
  const int row = 26, left = 190, plot_w = 420;
  const int h = 40 + row * static_cast<int>(plan.communication.size()) + 20;
  // Bars by time, the cost that matters (a small inter-node volume can take the longest); by
  // bytes when an item has no time (a link without bandwidth).
  bool timed = !plan.communication.empty();
  for (const LineItem& i : plan.communication) timed = timed && i.time_s.value_or(0) > 0;
  const auto size_of = [&](const LineItem& i) { return timed ? i.time_s.value_or(0) : i.value; };
  double most = 0;
  for (const LineItem& i : plan.communication) most = std::max(most, size_of(i));
  const auto link_of = [](const LineItem& i) {
    std::string link;
    for (const Collective& c : i.collectives)
      if (link.find(c.link) == std::string::npos) link += (link.empty() ? "" : ", ") + c.link;
    return link;
  };
  const auto value_text = [&](const LineItem& i) {
    return fmt::format("{} in {} ({})", memory_with_unit(i.value, u),
                       format_duration(i.time_s.value_or(0)), link_of(i));
  };
  // Wide enough for the value after the longest bar (11 px sans-serif: at most about 6.6 px a
  // character, with room for a browser's rounding when the chart is scaled).
  int w = left + plot_w + 190;
  for (const LineItem& i : plan.communication) {
    int chars = 0;
    for (unsigned char c : value_text(i))
      if ((c & 0xC0) != 0x80) ++chars;
    const double bar = most > 0 ? plot_w * size_of(i) / most : 0;
    w = std::max(w, left + 6 + static_cast<int>(bar) + static_cast<int>(6.6 * chars) + 12);
  }
  std::string s = svg_open("chart-comm", w, h,
                           "Communication per GPU per step, by parallel dimension (bars: time)");
  int r = 0;
  for (const LineItem& i : plan.communication) {
    const int yy = 30 + r * row;
    const std::string link = link_of(i);
    s += fmt::format(
        "<rect class=\"comm\" data-item=\"{}\" data-bytes=\"{:.0f}\" data-seconds=\"{}\" x=\"{}\" "
        "y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">{}</rect><text x=\"{}\" y=\"{}\" "
        "text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\">{}</text>\n",
        xml_escape(i.id), i.value, exact(i.time_s.value_or(0)), left, yy,
        num(most > 0 ? plot_w * size_of(i) / most : 0), row - 8,
        link.find("inter") != std::string::npos ? k_vermillion : k_sky, tooltip(i, u), left - 6,
        yy + 12, xml_escape(i.label),
        left + 6 + static_cast<int>(most > 0 ? plot_w * size_of(i) / most : 0), yy + 12,
        xml_escape(value_text(i)));
    ++r;
  }
  return s + "</svg>\n";
}

std::string chart_checkpoint(const PlanResult& plan) {
  const LineItem* waste = find_item(plan.reliability, ItemId::checkpoint_waste);
  const LineItem* young = find_item(plan.reliability, ItemId::checkpoint_interval_young);
  const LineItem* daly = find_item(plan.reliability, ItemId::checkpoint_interval_daly);
  const int w = 700, h = 300, left = 60, top_y = 36, plot_w = 560, plot_h = 200;
  std::string s = svg_open("chart-checkpoint", w, h,
                           "Checkpoint interval: expected waste (writing + lost work + restarts)");
  const double delta = term_of(waste, "write_time");
  const double mtbf = term_of(waste, "mtbf");
  const double restart = term_of(waste, "restart_time");
  if (!waste || !young || !(delta > 0) || !(mtbf > 0))
    return s + "<text x=\"8\" y=\"40\">no failures expected: no trade-off to draw</text></svg>\n";
  // waste(τ) = δ/τ + (τ/2 + R)/M over τ from Young's interval / 8 to × 8, log scale.
  const double lo = young->value / 8, hi = young->value * 8;
  auto f = [&](double tau) { return delta / tau + (tau / 2 + restart) / mtbf; };
  const double ymax = std::min(1.0, f(lo) * 1.1);
  auto x = [&](double tau) { return left + plot_w * std::log(tau / lo) / std::log(hi / lo); };
  auto y = [&](double v) { return top_y + plot_h - plot_h * std::min(v, ymax) / ymax; };
  std::string path;
  for (int k = 0; k <= 120; ++k) {
    const double tau = lo * std::pow(hi / lo, k / 120.0);
    path += fmt::format("{}{},{}", k == 0 ? "M" : " L", num(x(tau)), num(y(f(tau))));
  }
  s += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#ccc\"/>"
      "<path class=\"waste\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"><title>"
      "expected waste = δ/τ + (τ/2 + R)/M, δ = {}, M = {}, R = {}</title></path>\n",
      left, top_y, plot_w, plot_h, path, k_blue, xml_escape(format_duration(delta)),
      xml_escape(format_duration(mtbf)), xml_escape(format_duration(restart)));
  // Round ticks on both axes: durations of 1-2-5 steps (seconds to days), shares of 1-2-5 steps.
  static constexpr double k_durations[] = {1,     2,     5,     10,    15,     30,    60,
                                           120,   300,   600,   900,   1800,   3600,  7200,
                                           10800, 21600, 43200, 86400, 172800, 604800};
  std::vector<double> xs;
  for (double d : k_durations)
    if (d >= lo && d <= hi) xs.push_back(d);
  if (xs.size() < 2) xs = {lo, hi};  // beyond the list (a week): the ends
  while (xs.size() > 8) {            // every other one until they fit
    std::vector<double> half;
    for (std::size_t k = 0; k < xs.size(); k += 2) half.push_back(xs[k]);
    xs = half;
  }
  for (double d : xs)
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#eee\"/><text class=\"tick\" "
        "x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        num(x(d)), top_y, top_y + plot_h, top_y + plot_h + 14, xml_escape(format_duration(d)));
  double share_step = ymax / 2;  // below the list: two ticks
  for (double c : {1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
                   0.2, 0.25, 0.5})
    if (ymax / c <= 5) {
      share_step = c;
      break;
    }
  for (double v = 0; v <= ymax + 1e-12; v += share_step)
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#eee\"/><text class=\"tick\" "
        "x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
        left, left + plot_w, num(y(v)), left - 4, num(y(v) + 4), format_percent(v));
  // Young's and Daly's intervals: the second label goes to the left of its line when the two
  // lines are close, so that they never overlap.
  const bool close = young && daly && std::fabs(x(young->value) - x(daly->value)) < 90;
  auto mark = [&](const LineItem* i, const char* colour, const char* name, bool left_side) {
    if (!i || !(i->value > 0)) return;
    s += fmt::format(
        "<line class=\"interval\" data-item=\"{}\" data-seconds=\"{}\" x1=\"{}\" x2=\"{}\" "
        "y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-dasharray=\"4 2\">{}</line><text x=\"{}\" "
        "y=\"{}\" fill=\"{}\"{}>{} {}</text>\n",
        xml_escape(i->id), exact(i->value), num(x(i->value)), num(x(i->value)), top_y,
        top_y + plot_h, colour, tooltip(*i, MemUnits::gib), num(x(i->value) + (left_side ? -4 : 4)),
        top_y + 14, colour, left_side ? " text-anchor=\"end\"" : "", name,
        xml_escape(format_duration(i->value)));
  };
  const bool daly_first = daly && young && daly->value < young->value;
  mark(young, k_vermillion, "Young", close && !daly_first);
  mark(daly, k_green, "Daly", close && daly_first);
  s += fmt::format(
      "<circle class=\"waste-point\" data-item=\"checkpoint.waste\" data-fraction=\"{}\" "
      "cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\">{}</circle>\n",
      exact(waste->value), num(x(young->value)), num(y(waste->value)), k_vermillion,
      tooltip(*waste, MemUnits::gib));
  s += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">checkpoint interval τ (log scale)</text>"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"start\">expected waste</text>\n",
      left + plot_w / 2, top_y + plot_h + 30, left - 50, top_y - 6);
  return s + "</svg>\n";
}

std::string mermaid_charts(const PlanResult& plan, MemUnits u) {
  const double unit = u == MemUnits::gb ? 1e9 : k_gib;
  const double capacity = static_cast<double>(plan.input.cluster.gpu.memory_bytes);
  std::string s = "\n### Charts\n\n```mermaid\nxychart-beta\n";
  const int n = static_cast<int>(plan.stages.size());
  const std::vector<int> drawn = chart_stages(n, plan.worst_stage);
  const std::string some = stages_drawn(drawn, n);
  s += fmt::format("  title \"Peak memory per stage ({}) against the capacity{}\"\n",
                   memory_unit_name(u), some.empty() ? "" : " (" + some + ")");
  std::vector<std::string> stages, peaks, caps;
  double top = capacity;
  for (const StageMemory& st : plan.stages) top = std::max(top, st.peak_bytes);
  for (const int k : drawn) {
    const StageMemory& st = plan.stages[static_cast<std::size_t>(k)];
    stages.push_back(std::to_string(st.stage));
    peaks.push_back(fmt::format("{:.2f}", st.peak_bytes / unit));
    caps.push_back(fmt::format("{:.2f}", capacity / unit));
  }
  s += fmt::format(
      "  x-axis \"stage\" [{}]\n  y-axis \"{}\" 0 --> {:.0f}\n  bar [{}]\n  line [{}]\n```\n",
      fmt::join(stages, ", "), memory_unit_name(u), std::ceil(top * 1.05 / unit),
      fmt::join(peaks, ", "), fmt::join(caps, ", "));
  std::vector<std::string> names, secs;
  double step = 0;
  for (const LineItem& i : plan.time) {
    if (i.item == ItemId::time_step) step = i.value;
    if (!info(i.item).step_part || !(i.value > 0)) continue;
    names.push_back("\"" + i.id.substr(i.id.find('.') + 1) + "\"");
    secs.push_back(fmt::format("{:.4g}", i.value));
  }
  if (step > 0)
    s += fmt::format(
        "\n```mermaid\nxychart-beta\n  title \"The step: {:.4g} s\"\n  x-axis [{}]\n  "
        "y-axis \"s\"\n  bar [{}]\n```\n",
        step, fmt::join(names, ", "), fmt::join(secs, ", "));
  // The schedule as a gantt of whole milliseconds (microseconds for short steps).
  const ParallelSpec& p = plan.input.parallel;
  const DrawnSchedule d = drawn_schedule(plan);
  if (p.pp > 1 && !d.ops.empty()) {
    const std::vector<PipelineOp>& ops = d.ops;
    const double end = d.end_s;
    const bool micro = end < 1.0;
    const double scale = micro ? 1e6 : 1e3;
    const std::string left_out = stages_drawn(d.drawn, d.stages);
    s += fmt::format(
        "\n```mermaid\ngantt\n  title Pipeline schedule ({}), {} of {} micro-batches{} (axis: "
        "{})\n  dateFormat x\n  axisFormat %S.%L\n",
        to_string(p.schedule), d.shown, d.micro_batches,
        left_out.empty() ? "" : ", " + left_out + " drawn", micro ? "ms.µs" : "s.ms");
    int current = -1;
    for (const PipelineOp& o : ops) {
      if (o.stage != current) {
        current = o.stage;
        s += fmt::format("  section stage {}\n", o.stage);
      }
      s += fmt::format("  {}{} :{:.0f}, {:.0f}\n", static_cast<char>(o.kind), o.micro_batch,
                       o.start_s * scale, std::max(o.start_s * scale + 1, o.end_s * scale));
    }
    s += "```\n";
  }
  return s;
}

std::string render_svg(const PlanResult& plan, const Options& options) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + chart(options.chart, plan, options.units);
}

std::string chart(const std::string& name, const PlanResult& plan, MemUnits u) {
  if (name == "memory") return chart_memory(plan, u);
  if (name == "phases") return chart_phases(plan, u);
  if (name == "schedule") return chart_schedule(plan);
  if (name == "step") return chart_step(plan);
  if (name == "comm") return chart_comm(plan, u);
  if (name == "checkpoint") return chart_checkpoint(plan);
  if (name == "rl-timeline") return chart_rl_timeline(plan);
  if (name == "rl-memory") return chart_rl_memory(plan, u);
  return {};
}

}  // namespace trainledger::report
