// Aligned text table for the terminal.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "format.hpp"
#include "rows.hpp"

namespace trainledger::report {

namespace {

// Display width of UTF-8 text (counts code points; every glyph used here is one column).
std::size_t width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string pad_right(const std::string& s, std::size_t w) {
  const std::size_t n = width(s);
  return n >= w ? s : s + std::string(w - n, ' ');
}

std::string pad_left(const std::string& s, std::size_t w) {
  const std::size_t n = width(s);
  return n >= w ? s : std::string(w - n, ' ') + s;
}

constexpr std::size_t k_label_width = 36;

// Labels longer than the column are cut with an ellipsis (the full text is in explain, JSON
// and Markdown).
std::string fit_label(const std::string& s) {
  if (width(s) <= k_label_width) return s;
  std::string out;
  std::size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80 && ++n > k_label_width - 1) break;
    out += static_cast<char>(c);
  }
  return out + "…";
}

struct Layout {
  std::size_t id = 0, label = 0, column = 0;
};

// A bar of `cells` characters filled to `share` (0-1; more is drawn full and marked '!').
std::string bar(double share, std::size_t cells, bool ascii) {
  static const char* const k_eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  const bool over = share > 1;
  const double s = std::clamp(share, 0.0, 1.0);
  const std::size_t n = over ? cells - 1 : cells;
  std::string out;
  if (ascii) {
    const auto full = static_cast<std::size_t>(std::lround(s * static_cast<double>(n)));
    out = std::string(full, '#') + std::string(n - full, '.');
  } else {
    const auto eighths = static_cast<std::size_t>(std::lround(s * static_cast<double>(n) * 8));
    std::size_t used = 0;
    for (; used < eighths / 8; ++used) out += "█";
    if (eighths % 8 != 0 && used < n) {
      out += k_eighths[eighths % 8];
      ++used;
    }
    out += std::string(n - used, ' ');
  }
  return over ? out + "!" : out;
}

std::string memory_table(const PlanResult& plan, const MemoryView& v, MemUnits u,
                         const std::string& phase, const Options& o) {
  Layout w{5, 0, 10};
  for (const MemoryRow& r : v.rows) {
    w.id = std::max(w.id, width(r.id));
    w.label = std::max(w.label, width(fit_label(r.label)));
  }
  for (const StageColumn& c : v.columns) w.column = std::max(w.column, width(c.title) + 2);
  std::string out;
  const std::string head =
      phase.empty() ? fmt::format("Memory per GPU ({})", memory_unit_name(u))
                    : fmt::format("Memory per GPU ({}), {} phase", memory_unit_name(u), phase);
  out += pad_right(head, w.id + 2 + w.label);
  for (const StageColumn& c : v.columns) out += pad_left(c.title, w.column);
  out += "\n" + std::string(w.id + 2 + w.label, ' ');
  for (const StageColumn& c : v.columns) out += pad_left(c.role, w.column);
  out += "\n";
  for (const MemoryRow& r : v.rows) {
    out += pad_right(r.id, w.id + 2) + pad_right(fit_label(r.label), w.label);
    for (const auto& value : r.values)
      out += pad_left(value ? format_memory(*value, u) : "-", w.column);
    out += "\n";
  }
  out += pad_right("total", w.id + 2 + w.label);
  for (const StageColumn& c : v.columns)
    out += pad_left(format_memory(plan.stages[c.representative].peak_bytes, u), w.column);
  // The figures a user compares with (docs/formulas.md#overheads).
  const auto compare_row = [&](const std::string& label, double Comparable::*field) {
    out += "\n" + pad_right("  " + label, w.id + 2 + w.label);
    for (const StageColumn& c : v.columns)
      out += pad_left(format_memory(comparable(plan.stages[c.representative]).*field, u), w.column);
  };
  compare_row("persistent state (weights, grads, optimizer)", &Comparable::state);
  compare_row("as torch.cuda.max_memory_allocated", &Comparable::allocated);
  compare_row("as torch.cuda.max_memory_reserved", &Comparable::reserved);
  compare_row("as nvidia-smi (the total)", &Comparable::device);
  out += "\n" +
         pad_right("capacity " + memory_with_unit(plan.verdict.limit_bytes, u), w.id + 2 + w.label);
  for (const StageColumn& c : v.columns)
    out += pad_left(plan.stages[c.representative].fits ? "fits" : "OVER", w.column);
  // Each stage's peak against the capacity, as a bar.
  const double capacity = static_cast<double>(plan.input.cluster.gpu.memory_bytes);
  if (capacity > 0) {
    out += "\n" + pad_right("  peak / capacity", w.id + 2 + w.label);
    const double limit = capacity * (1 - plan.verdict.required_headroom);
    for (const StageColumn& c : v.columns) {
      const double peak = plan.stages[c.representative].peak_bytes;
      const std::string b = "  " + bar(peak / capacity, w.column - 2, o.ascii);
      if (!o.color) {
        out += b;
        continue;
      }
      const char* colour = peak > capacity ? "\033[31m" : peak > limit ? "\033[33m" : "\033[32m";
      out += colour + b + "\033[0m";
    }
    while (!o.color && !out.empty() && out.back() == ' ') out.pop_back();
  }
  return out + "\n";
}

std::string phases_line(const PlanResult& plan, MemUnits u) {
  const StageMemory& st = plan.stages[plan.worst_stage];
  std::string s = "phases of stage " + std::to_string(st.stage) + ":";
  for (const PhaseTotal& pt : st.phases)
    s += fmt::format(" {} {}", to_string(pt.phase), format_memory(pt.bytes, u));
  return s + "\n";
}

// One row per item: id, label, value in its unit, and for seconds the share of the step.
std::string items_rows(const std::string& title, const std::vector<LineItem>& items, MemUnits u,
                       double step_s) {
  if (items.empty()) return "";
  std::size_t wid = 4, wlab = 0;
  for (const LineItem& i : items) {
    wid = std::max(wid, width(i.id));
    wlab = std::max(wlab, width(fit_label(i.label)));
  }
  std::vector<std::string> values;
  std::size_t wval = 22;
  for (const LineItem& i : items) {
    std::string value = format_item_value(i, u);
    if (i.time_s) {
      value += fmt::format(" in {}", format_duration(*i.time_s));
    } else if (!i.collectives.empty()) {
      value += ", time not computed";  // a link without bandwidth (see the warnings)
    }
    wval = std::max(wval, width(value) + 2);
    values.push_back(std::move(value));
  }
  std::string out = "\n" + title + "\n";
  for (std::size_t k = 0; k < items.size(); ++k) {
    const LineItem& i = items[k];
    std::string share;
    if (step_s > 0 && info(i.item).step_part) share = format_percent(i.value / step_s);
    std::string calls;
    for (const Collective& c : i.collectives)
      calls += (calls.empty() ? "  " : ", ") +
               fmt::format("{} × {} ({})", format_number(c.calls_per_step), c.collective, c.link);
    out += pad_right(i.id, wid + 2) + pad_right(fit_label(i.label), wlab) +
           pad_left(values[k], wval) + pad_left(share, 9) + calls + "\n";
  }
  return out;
}

std::string time_section(const PlanResult& plan, MemUnits u) {
  const LineItem* step = find_item(plan.time, ItemId::time_step);
  std::string out =
      items_rows("Step time (share of the step)", plan.time, u, step ? step->value : 0);
  if (step) out += throughput_line(plan) + "\n";
  if (step && plan.step_band.cases > 0) out += time_band_line(plan) + "\n";
  out += items_rows("Communication per GPU per step", plan.communication, u, 0);
  out += items_rows("Checkpoints and failures", plan.reliability, u, 0);
  if (!plan.levers.empty()) {
    out += "\nLevers:\n";
    for (const Lever& l : plan.levers)
      out += "  " + change_text(l.change) + ": " + lever_effect(l, u) + "\n";
  }
  return out;
}

}  // namespace

std::string host_line(const PlanResult& plan, MemUnits u) {
  const HostMemory& h = plan.host;
  std::string s = "Host memory per node: " + memory_with_unit(h.peak_bytes, u) + " (";
  for (std::size_t i = 0; i < h.items.size(); ++i)
    s += (i ? ", " : "") + h.items[i].id.substr(5) + " " + format_memory(h.items[i].value, u);
  s += ")";
  if (h.capacity_bytes > 0)
    s += h.fits ? fmt::format(", fits in {}", memory_with_unit(h.capacity_bytes, u))
                : fmt::format(", does NOT fit in {}", memory_with_unit(h.capacity_bytes, u));
  else
    s += "; no host capacity given (cluster.host_memory)";
  return s + "\n";
}

std::string render_table(const PlanResult& plan, const PlanSource& loaded, const Options& options) {
  const MemUnits u = options.units;
  std::string out =
      fmt::format("trainledger {} · {}\n{}\n", version(), loaded.name, plan_title(plan));
  std::string facts;
  for (const auto& [k, v] : derived_facts(plan))
    facts += (facts.empty() ? "" : " · ") + k + " " + v;
  out += facts + "\n";
  const std::vector<Convention> conv = conventions(plan.input);
  if (!conv.empty()) {
    out += fmt::format("conventions of {} (docs/formulas.md#frameworks):",
                       to_string(plan.input.training.framework));
    for (std::size_t i = 0; i < conv.size(); ++i) out += (i == 0 ? " " : "; ") + conv[i].effect;
    out += "\n";
  }
  if (!loaded.calibration.empty())
    out += fmt::format(
        "calibration {} · measured: {} · still assumed: {}\n", loaded.calibration,
        loaded.measured.empty() ? "nothing" : fmt::format("{}", fmt::join(loaded.measured, ", ")),
        loaded.assumed.empty() ? "nothing" : fmt::format("{}", fmt::join(loaded.assumed, ", ")));
  out += "\n";
  out += memory_table(plan, memory_view(plan), u, options.phase, options);
  out += phases_line(plan, u);
  out += host_line(plan, u);
  out += "\nVerdict: " +
         verdict_sentence(plan, memory_unit_name(u), u == MemUnits::gib ? k_gib : k_gb) + "\n";
  const std::vector<std::string> fixes =
      fix_lines(plan, memory_unit_name(u), u == MemUnits::gib ? k_gib : k_gb);
  if (!fixes.empty()) {
    out += "To make it fit:\n";
    for (const std::string& f : fixes) out += "  " + f + "\n";
  }
  out += time_section(plan, u);
  for (const std::string& w : loaded.warnings) out += "warning: " + w + "\n";
  for (const std::string& w : plan.warnings) out += "warning: " + w + "\n";
  out += "Formulas and sources: trainledger explain ITEM (e.g. trainledger explain optimizer.m)\n";
  return out;
}

std::string render_explain(const LineItem& item, const std::string& where, const Options& options) {
  std::string out =
      fmt::format("{} — {}{}\n", item.id, item.label, where.empty() ? "" : "   [" + where + "]");
  std::string value = format_item_value(item, options.units);
  if (item.unit == Unit::bytes) value += fmt::format(" ({} bytes)", format_number(item.value));
  out += fmt::format("  value    {}\n", value);
  out += fmt::format("  formula  {}\n", item.formula);
  bool first = true;
  for (const Term& t : item.terms) {
    const std::string from =
        t.input.empty() ? "" : fmt::format("   ← {} ({})", t.input, to_string(t.source));
    out += fmt::format("  {}{} = {}{}{}\n", first ? "terms    " : "         ", t.key,
                       format_number(t.value), t.label.empty() ? "" : " " + t.label, from);
    first = false;
  }
  if (item.time_s)
    out += fmt::format("  time     {} = {}\n", format_duration(*item.time_s), item.time_formula);
  for (const Collective& c : item.collectives)
    out += fmt::format("  call     {} × {} of {} over {} ranks ({})\n",
                       format_number(c.calls_per_step), c.collective,
                       memory_with_unit(c.message_bytes, options.units), c.group_size, c.link);
  out += fmt::format("  source   {}\n", item.source);
  out += fmt::format("  kind     {}\n", to_string(item.kind));
  return out;
}

std::string render(Format f, const PlanResult& plan, const PlanSource& loaded,
                   const Options& options) {
  switch (f) {
    case Format::table:
      return render_table(plan, loaded, options);
    case Format::json:
      return render_json(plan, loaded);
    case Format::markdown:
      return render_markdown(plan, loaded, options);
    case Format::html:
      return render_html(plan, loaded, options);
    case Format::svg:
      return render_svg(plan, options);
  }
  return {};
}

std::string version() { return TRAINLEDGER_VERSION; }

}  // namespace trainledger::report
