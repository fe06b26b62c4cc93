// Aligned text table for the terminal.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <tuple>

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

// Labels longer than `room` columns are cut with an ellipsis (the full text is in explain, JSON
// and Markdown).
std::string fit_label(const std::string& s, std::size_t room = k_label_width) {
  if (width(s) <= room) return s;
  std::string out;
  std::size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80 && ++n > room - 1) break;
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

// A column of the table: one column of the view, or (folded) a run of them shown as the range
// of their values.
struct Shown {
  std::string title, role;
  std::vector<std::size_t> columns;  // of the view
  std::vector<int> stages;
};

// The view's columns as shown: every one, unless the table is wider than `limit` (a terminal's
// width; 0: no limit), when the first, the last and the worst stage's columns stay and each run
// between them becomes one range column.
std::vector<Shown> shown_columns(const PlanResult& plan, const MemoryView& v, bool fold) {
  std::vector<Shown> out;
  const auto has = [&](std::size_t c, int stage) {
    const std::vector<int>& s = v.columns[c].stages;
    return std::find(s.begin(), s.end(), stage) != s.end();
  };
  const int last = plan.input.parallel.pp - 1;
  for (std::size_t c = 0; c < v.columns.size(); ++c) {
    const StageColumn& col = v.columns[c];
    const bool keep = !fold || has(c, 0) || has(c, last) || has(c, plan.verdict.worst_stage);
    if (!keep && !out.empty() && out.back().role == "range") {
      Shown& r = out.back();
      r.columns.push_back(c);
      r.stages.insert(r.stages.end(), col.stages.begin(), col.stages.end());
      r.title = fmt::format("stages {}-{}", r.stages.front(), r.stages.back());
      continue;
    }
    out.push_back(Shown{col.title, keep ? col.role : "range", {c}, col.stages});
  }
  // A run of one column saves nothing: it keeps its own title and role.
  for (Shown& sh : out)
    if (sh.role == "range" && sh.columns.size() == 1) {
      sh.title = v.columns[sh.columns.front()].title;
      sh.role = v.columns[sh.columns.front()].role;
    }
  return out;
}

std::string memory_table(const PlanResult& plan, const MemoryView& v, MemUnits u,
                         const std::string& phase, const Options& o) {
  const std::size_t id_width = [&] {
    std::size_t n = 5;
    for (const MemoryRow& r : v.rows) n = std::max(n, width(r.id));
    return n;
  }();
  const std::string dash = o.ascii ? "-" : "–";
  // A cell: the value of one column, or the range over a folded run ("-" where none has it).
  const auto cell = [&](const Shown& s,
                        const std::function<std::optional<double>(std::size_t)>& at) {
    std::optional<double> lo, hi;
    for (std::size_t c : s.columns)
      if (const std::optional<double> x = at(c)) {
        lo = lo ? std::min(*lo, *x) : *x;
        hi = hi ? std::max(*hi, *x) : *x;
      }
    if (!lo) return std::string("-");
    const std::string a = format_memory(*lo, u), b = format_memory(*hi, u);
    return a == b ? a : a + dash + b;
  };
  const auto stage_of = [&](std::size_t c) -> const StageMemory& {
    return plan.stages[v.columns[c].representative];
  };
  const auto build = [&](const std::vector<Shown>& cols, std::size_t label_room) {
    std::size_t label = 0, column = 10;
    for (const MemoryRow& r : v.rows)
      label = std::max(label, width(fit_label(r.label, label_room)));
    std::vector<std::vector<std::string>> cells;  // per row of values, per shown column
    for (const MemoryRow& r : v.rows) {
      cells.emplace_back();
      for (const Shown& s : cols)
        cells.back().push_back(cell(s, [&](std::size_t c) { return r.values[c]; }));
    }
    const auto total_of = [&](double Comparable::*field) {
      std::vector<std::string> row;
      for (const Shown& s : cols)
        row.push_back(cell(s, [&](std::size_t c) -> std::optional<double> {
          return field ? comparable(stage_of(c)).*field : stage_of(c).peak_bytes;
        }));
      return row;
    };
    const std::vector<std::vector<std::string>> totals = {
        total_of(nullptr), total_of(&Comparable::state), total_of(&Comparable::allocated),
        total_of(&Comparable::reserved), total_of(&Comparable::device)};
    for (std::size_t k = 0; k < cols.size(); ++k) {
      column = std::max(column, width(cols[k].title) + 2);
      for (const auto& row : cells) column = std::max(column, width(row[k]) + 2);
      for (const auto& row : totals) column = std::max(column, width(row[k]) + 2);
    }
    return std::make_tuple(label, column, cells, totals);
  };
  // On a terminal narrower than the table, a wide pipeline folds, and labels take the room left.
  std::vector<Shown> cols = shown_columns(plan, v, false);
  auto [label, column, cells, totals] = build(cols, k_label_width);
  std::size_t room = k_label_width;
  if (o.width > 0) {
    // The stages asked for (--stage) are shown, never folded.
    if (o.stages.empty() && id_width + 2 + label + cols.size() * column > o.width &&
        cols.size() > 3) {
      cols = shown_columns(plan, v, true);
      std::tie(label, column, cells, totals) = build(cols, room);
    }
    const std::size_t used = id_width + 2 + cols.size() * column;
    std::size_t longest = 0;
    for (const MemoryRow& r : v.rows) longest = std::max(longest, width(r.label));
    // Whole labels where there is room; on a narrow terminal, cut to what is left (12 at least).
    room = o.width > used + 12 ? std::min(longest, o.width - used) : 12;
    if (room != k_label_width) std::tie(label, column, cells, totals) = build(cols, room);
  }
  const std::size_t lead = id_width + 2 + label;
  std::string out;
  const std::string head =
      phase.empty() ? fmt::format("Memory per GPU ({})", memory_unit_name(u))
                    : fmt::format("Memory per GPU ({}), {} phase", memory_unit_name(u), phase);
  out += pad_right(head, lead);
  for (const Shown& c : cols) out += pad_left(c.title, column);
  out += "\n" + std::string(lead, ' ');
  for (const Shown& c : cols) out += pad_left(c.role, column);
  out += "\n";
  for (std::size_t r = 0; r < v.rows.size(); ++r) {
    out +=
        pad_right(v.rows[r].id, id_width + 2) + pad_right(fit_label(v.rows[r].label, room), label);
    for (const std::string& value : cells[r]) out += pad_left(value, column);
    out += "\n";
  }
  // The total, then the figures a user compares with (docs/formulas.md#overheads).
  const char* const labels[] = {"total", "  persistent state (weights, grads, optimizer)",
                                "  as torch.cuda.max_memory_allocated",
                                "  as torch.cuda.max_memory_reserved",
                                "  as nvidia-smi (the total)"};
  for (std::size_t t = 0; t < totals.size(); ++t) {
    out += (t ? "\n" : "") + pad_right(fit_label(labels[t], std::max(lead, k_label_width)), lead);
    for (const std::string& value : totals[t]) out += pad_left(value, column);
  }
  out += "\n" + pad_right("capacity " + memory_with_unit(plan.verdict.limit_bytes, u), lead);
  for (const Shown& s : cols) {
    std::size_t over = 0, stages = 0;
    for (std::size_t c : s.columns) {
      stages += v.columns[c].stages.size();
      if (!stage_of(c).fits) over += v.columns[c].stages.size();
    }
    out += pad_left(over == 0                             ? "fits"
                    : s.role != "range" || over == stages ? "OVER"
                                                          : fmt::format("{} OVER", over),
                    column);
  }
  // Each column's (largest) peak against the capacity, as a bar.
  const double capacity = static_cast<double>(plan.input.cluster.gpu.memory_bytes);
  if (capacity > 0) {
    out += "\n" + pad_right("  peak / capacity", lead);
    const double limit = capacity * (1 - plan.verdict.required_headroom);
    for (const Shown& s : cols) {
      double peak = 0;
      for (std::size_t c : s.columns) peak = std::max(peak, stage_of(c).peak_bytes);
      const std::string b = "  " + bar(peak / capacity, column - 2, o.ascii);
      if (!o.color) {
        out += b;
        continue;
      }
      const char* colour = peak > capacity ? "\033[31m" : peak > limit ? "\033[33m" : "\033[32m";
      out += colour + b + "\033[0m";
    }
    while (!o.color && !out.empty() && out.back() == ' ') out.pop_back();
  }
  out += "\n";
  for (const Shown& s : cols)
    if (s.role == "range")
      out +=
          fmt::format("({} folded: each cell is the range over them; --stage N or all)\n", s.title);
  return out;
}

std::string phases_line(const PlanResult& plan, MemUnits u) {
  const StageMemory& st = plan.stages[plan.worst_stage];
  std::string s = "phases of stage " + std::to_string(st.stage) + ":";
  for (const PhaseTotal& pt : st.phases)
    s += fmt::format(" {} {}", to_string(pt.phase), format_memory(pt.bytes, u));
  return s + "\n";
}

// One row per item: id, label, value in its unit, and for seconds the share of the step.
// `columns`: the terminal's width (0: none), which labels may use up to the values.
std::string items_rows(const std::string& title, const std::vector<LineItem>& items, MemUnits u,
                       double step_s, std::size_t columns) {
  if (items.empty()) return "";
  std::size_t wid = 4, wlab = 0, longest = 0;
  for (const LineItem& i : items) {
    wid = std::max(wid, width(i.id));
    longest = std::max(longest, width(i.label));
  }
  std::size_t room = k_label_width;
  if (columns > wid + 2 + 22 + 9 + k_label_width)
    room = std::max(k_label_width, std::min(longest, columns - (wid + 2 + 22 + 9)));
  for (const LineItem& i : items) wlab = std::max(wlab, width(fit_label(i.label, room)));
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
    out += pad_right(i.id, wid + 2) + pad_right(fit_label(i.label, room), wlab) +
           pad_left(values[k], wval) + pad_left(share, 9) + calls + "\n";
  }
  return out;
}

std::string time_section(const PlanResult& plan, MemUnits u, std::size_t columns) {
  const LineItem* step = find_item(plan.time, ItemId::time_step);
  std::string out =
      items_rows("Step time (share of the step)", plan.time, u, step ? step->value : 0, columns);
  if (step) out += throughput_line(plan) + "\n";
  if (step && plan.step_band.cases > 0) out += time_band_line(plan) + "\n";
  out += items_rows("Communication per GPU per step", plan.communication, u, 0, columns);
  out += items_rows("Checkpoints and failures", plan.reliability, u, 0, columns);
  if (!plan.levers.empty()) {
    out += "\nLevers:\n";
    for (const Lever& l : plan.levers)
      out += "  " + change_text(l.change) + ": " + lever_effect(l, u) + "\n";
  }
  return out;
}

// RL plans (docs/rl.md): memory per GPU in every phase of the step, the engine's KV cache, and
// the step's phases.
std::string rl_section(const PlanResult& plan, MemUnits u, std::size_t columns) {
  const RlResult& rl = plan.rl;
  if (!rl.present) return "";
  const RlSpec& s = plan.input.rl;
  std::string out =
      fmt::format("\nRL step: {} · {}{} · {:.0f} samples ({} prompts × {})", to_string(s.algorithm),
                  to_string(s.placement), s.off_policy ? " (one-step off-policy)" : "", rl.samples,
                  s.prompts, s.samples);
  if (s.rollout())
    out += fmt::format(" · {} {} engines × tp {} on {} GPUs", rl.engines, to_string(s.engine),
                       s.rollout_tp, rl.rollout_gpus);
  out += fmt::format(" · {} GPUs in all\n", rl.total_gpus);
  std::size_t wname = 23;
  for (const RlPhase& ph : rl.phases)
    wname = std::max(wname, width(ph.name + " (" + ph.pool + ")"));
  out += fmt::format("{}{}  {}\n", pad_right("Memory per GPU by phase", wname + 2),
                     pad_left(memory_unit_name(u), 10), "verdict");
  for (int k = 0; k < static_cast<int>(rl.phases.size()); ++k) {
    const RlPhase& ph = rl.phases[k];
    out += pad_right("  " + ph.name + " (" + ph.pool + ")", wname + 2) +
           pad_left(format_memory(ph.peak_bytes, u), 10) + "  " +
           (ph.fits ? "fits" : "does NOT fit") + (k == rl.worst ? "  ← least left" : "") + "\n";
  }
  if (s.rollout())
    out += fmt::format(
        "KV cache: {:.0f} tokens per engine ({:.0f} KiB per token), {:.0f} sequences decoded at "
        "once per engine (rl.max_num_seqs {}){}\n",
        rl.kv_tokens, rl.kv_bytes_per_token / 1024, rl.concurrency, s.max_num_seqs,
        rl.kv_fits ? "" : "; does NOT hold one longest sequence");
  if (rl.host_bytes > 0)
    out += fmt::format("Host memory per node while the engine sleeps: {}\n",
                       memory_with_unit(rl.host_bytes, u));
  if (!rl.problem.empty()) out += "RL: does NOT fit: " + rl.problem + "\n";
  const LineItem* step = find_item(rl.time, ItemId::rl_time_step);
  std::string rows = items_rows("RL step time (per step)", rl.time, u, 0, columns);
  out += rows;
  if (rl.step_band.cases > 0) out += rl_band_line(plan) + "\n";
  if (step && step->value > 0) {
    // From the step's timeline (core): the parts the step waits for, and those that overlap.
    std::string shares, hidden;
    for (const LineItem& i : rl.time) {
      double exposed = 0, taken = 0;
      for (const RlSpan& sp : rl.timeline)
        if (sp.item == i.item) {
          exposed += sp.exposed_s;
          taken = std::max(taken, sp.end_s - sp.start_s);
        }
      if (exposed > 0)
        shares += (shares.empty() ? "" : ", ") +
                  fmt::format("{} {}", i.label, format_percent(exposed / step->value));
      else if (taken > 0)
        hidden += (hidden.empty() ? "" : ", ") + i.label;
    }
    out += "shares of the step: " + shares +
           (hidden.empty() ? "" : "; overlapped (the step does not wait for them): " + hidden) +
           "\n";
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

namespace {

std::string measured_text(const PlanSource& loaded) {
  std::string out;
  for (const auto& [key, from] : measured_keys(loaded))
    out += (out.empty() ? "" : ", ") + key + (from.empty() ? "" : " (from " + from + ")");
  return out;
}

}  // namespace

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
        loaded.measured.empty() ? "nothing" : measured_text(loaded),
        loaded.assumed.empty() ? "nothing" : fmt::format("{}", fmt::join(loaded.assumed, ", ")));
  out += "\n";
  out += memory_table(plan, memory_view(plan, options.stages), u, options.phase, options);
  out += phases_line(plan, u);
  out += host_line(plan, u);
  // The verdict's first word in colour on a terminal: red when it does not fit, yellow when near.
  const Verdict& v = plan.verdict;
  const char* colour = !options.color   ? ""
                       : !plan_fits(v)  ? "\033[1;31m"
                       : needs_fixes(v) ? "\033[33m"
                                        : "\033[32m";
  out += std::string("\n") + colour + "Verdict:" + (options.color ? "\033[0m " : " ") +
         verdict_sentence(plan, memory_unit_name(u), u == MemUnits::gib ? k_gib : k_gb) + "\n";
  const std::vector<std::string> fixes =
      fix_lines(plan, memory_unit_name(u), u == MemUnits::gib ? k_gib : k_gb);
  if (!fixes.empty()) {
    out += "To make it fit:\n";
    for (const std::string& f : fixes) out += "  " + f + "\n";
  }
  out += rl_section(plan, u, options.width);
  out += time_section(plan, u, options.width);
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
