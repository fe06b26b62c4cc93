// Markdown for design reviews: the same rows as the table, then the basis of every item.
#include <fmt/format.h>

#include <cctype>

#include "charts.hpp"
#include "format.hpp"
#include "rows.hpp"
#include "trainledger/text.hpp"

namespace trainledger::report {

namespace {

// A table cell of the planner's own text (formulas, sources) that may quote a name: a | ends
// no cell, a newline no row, and a < that would open an HTML tag is an entity ("δ < 2M" stays).
std::string escape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const char next = i + 1 < s.size() ? s[i + 1] : ' ';
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else if (c == '<' && (std::isalpha(static_cast<unsigned char>(next)) || next == '/' ||
                          next == '!' || next == '?'))
      out += "&lt;";
    else
      out += c;
  }
  return out;
}

std::string memory_section(const PlanResult& plan, const MemoryView& v, MemUnits u,
                           const std::string& phase) {
  std::string out = fmt::format("### Memory per GPU ({}){}\n\n| item | what |", memory_unit_name(u),
                                phase.empty() ? "" : fmt::format(", {} phase", phase));
  std::string rule = "|---|---|";
  for (const StageColumn& c : v.columns) {
    out += fmt::format(" {} ({}) |", c.title, c.role);
    rule += "---:|";
  }
  out += "\n" + rule + "\n";
  for (const MemoryRow& r : v.rows) {
    out += fmt::format("| `{}` | {} |", r.id, escape(r.label));
    for (const auto& value : r.values) out += " " + (value ? format_memory(*value, u) : "–") + " |";
    out += "\n";
  }
  out += "| **total** | |";
  for (const StageColumn& c : v.columns)
    out += fmt::format(" **{}** |", format_memory(plan.stages[c.representative].peak_bytes, u));
  out += "\n";
  const auto compare_row = [&](const std::string& label, double Comparable::*field) {
    out += "| | " + label + " |";
    for (const StageColumn& c : v.columns)
      out += " " + format_memory(comparable(plan.stages[c.representative]).*field, u) + " |";
    out += "\n";
  };
  compare_row("persistent state (weights, grads, optimizer)", &Comparable::state);
  compare_row("as `torch.cuda.max_memory_allocated`", &Comparable::allocated);
  compare_row("as `torch.cuda.max_memory_reserved`", &Comparable::reserved);
  compare_row("as nvidia-smi (the total)", &Comparable::device);
  return out;
}

std::string host_section(const PlanResult& plan, MemUnits u) {
  std::string out =
      "\n### Host memory per node\n\n| item | value | formula | kind |\n|---|---:|---|---|\n";
  for (const LineItem& i : plan.host.items)
    out += fmt::format("| `{}` | {} | {} | {} |\n", i.id, format_item_value(i, u),
                       escape(i.formula), to_string(i.kind));
  return out;
}

std::string items_table(const std::string& title, const std::vector<LineItem>& items, MemUnits u) {
  if (items.empty()) return "";
  std::string out = "\n### " + title + "\n\n| item | value | formula | source | kind |\n" +
                    "|---|---:|---|---|---|\n";
  for (const LineItem& i : items) {
    std::string value = format_item_value(i, u);
    if (i.time_s) {
      value += fmt::format(" in {}", format_duration(*i.time_s));
    } else if (!i.collectives.empty()) {
      value += ", time not computed";  // a link without bandwidth (see the warnings)
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", i.id, value, escape(i.formula),
                       escape(i.source), to_string(i.kind));
  }
  return out;
}

std::string time_section(const PlanResult& plan, MemUnits u) {
  std::string out;
  const std::vector<TimeRow> rows = time_rows(plan);
  if (!rows.empty()) {
    out += "\n### Step time\n\n| item | what | seconds | share |\n|---|---|---:|---:|\n";
    for (const TimeRow& r : rows)
      out += fmt::format("| `{}` | {} | {:.3f} | {} |\n", r.id, escape(r.label), r.seconds,
                         r.item == ItemId::time_step ? "" : format_percent(r.share));
    out += "\n" + throughput_line(plan) + "\n";
    if (plan.step_band.cases > 0) out += "\n" + text::markdown(time_band_line(plan)) + "\n";
  }
  if (!plan.levers.empty()) {
    out += "\n**Levers:**\n\n";
    for (const Lever& l : plan.levers)
      out += "- " + change_text(l.change) + ": " + lever_effect(l, u) + "\n";
  }
  out += items_table("Communication per GPU per step", plan.communication, u);
  out += items_table("Time", plan.time, u);
  out += items_table("Checkpoints and failures", plan.reliability, u);
  return out;
}

// The measured keys, each as code, with the profile it came from (as code too: a path from the
// command line may hold a backtick).
std::string measured_markdown(const PlanSource& loaded) {
  std::string out;
  for (const auto& [key, from] : measured_keys(loaded))
    out += (out.empty() ? "" : ", ") + text::markdown_code(key) +
           (from.empty() ? "" : " (from " + text::markdown_code(from) + ")");
  return out;
}

std::string basis_section(const PlanResult& plan, MemUnits u) {
  const StageMemory& worst = plan.stages[plan.worst_stage];
  std::string out = fmt::format(
      "\n### Basis (stage {}, {})\n\n| item | value | formula | source | kind |\n"
      "|---|---:|---|---|---|\n",
      worst.stage, worst.role);
  for (const LineItem& i : worst.items) {
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", i.id, format_item_value(i, u),
                       escape(i.formula), escape(i.source), to_string(i.kind));
  }
  return out;
}

}  // namespace

// RL plans (docs/rl.md): memory per GPU in every phase of the step, the engine's KV cache, the
// step's phases with their formulas.
std::string rl_section(const PlanResult& plan, MemUnits u) {
  const RlResult& rl = plan.rl;
  if (!rl.present) return "";
  const RlSpec& s = plan.input.rl;
  std::string out =
      fmt::format("\n### RL step: {} · {}{}\n\n{:.0f} samples ({} prompts × {})",
                  to_string(s.algorithm), to_string(s.placement),
                  s.off_policy ? " (one-step off-policy)" : "", rl.samples, s.prompts, s.samples);
  if (s.rollout())
    out += fmt::format(
        ", {} {} engines × tp {} on {} GPUs; KV cache {:.0f} tokens per engine "
        "({:.0f} KiB per token), {:.0f} sequences at once per engine",
        rl.engines, to_string(s.engine), s.rollout_tp, rl.rollout_gpus, rl.kv_tokens,
        rl.kv_bytes_per_token / 1024, rl.concurrency);
  out += fmt::format(
      "; {} GPUs in all.\n\n| phase | GPUs | peak per GPU ({}) | verdict |\n"
      "|---|---|---:|---|\n",
      rl.total_gpus, memory_unit_name(u));
  for (int k = 0; k < static_cast<int>(rl.phases.size()); ++k) {
    const RlPhase& ph = rl.phases[k];
    out +=
        fmt::format("| {} | {} | {} | {}{} |\n", ph.name, ph.pool, format_memory(ph.peak_bytes, u),
                    ph.fits ? "fits" : "does NOT fit", k == rl.worst ? " (least left)" : "");
  }
  if (!rl.problem.empty()) out += "\n**RL: does not fit**: " + text::markdown(rl.problem) + "\n";
  out += items_table("RL step time", rl.time, u);
  if (rl.step_band.cases > 0) out += "\n" + text::markdown(rl_band_line(plan)) + "\n";
  out += mermaid_rl_timeline(plan);
  return out;
}

std::string render_markdown(const PlanResult& plan, const PlanSource& loaded,
                            const Options& options) {
  const MemUnits u = options.units;
  // The plan's file name, model name, calibration path and warnings are a pull request's
  // text: shown as text, never as Markdown or HTML.
  std::string out = fmt::format("## trainledger plan: {}\n\n", text::markdown(plan_title(plan)));
  out += fmt::format("Plan {}, trainledger {}.\n\n", text::markdown_code(loaded.name), version());
  for (const auto& [k, v] : derived_facts(plan)) out += fmt::format("- {}: {}\n", k, v);
  for (const Convention& c : conventions(plan.input))
    out += fmt::format("- convention: {}{}\n", c.effect,
                       c.key.empty() ? "" : fmt::format(" (`{}`)", c.key));
  if (!loaded.calibration.empty())
    out += fmt::format("- calibration {}: measured {}; still assumed {}\n",
                       text::markdown_code(loaded.calibration),
                       loaded.measured.empty() ? "nothing" : measured_markdown(loaded),
                       loaded.assumed.empty()
                           ? "nothing"
                           : fmt::format("`{}`", fmt::join(loaded.assumed, "`, `")));
  out += "\n" + memory_section(plan, memory_view(plan, options.stages), u, options.phase);
  out += mermaid_charts(plan, u);
  out += "\n" + host_line(plan, u);
  out += "\n**Verdict:** " +
         verdict_sentence(plan, memory_unit_name(u), u == MemUnits::gib ? k_gib : k_gb) + "\n";
  const std::vector<std::string> fixes =
      fix_lines(plan, memory_unit_name(u), u == MemUnits::gib ? k_gib : k_gb);
  if (!fixes.empty()) {
    out += "\n**To make it fit**:\n\n";
    for (const std::string& f : fixes) out += "- " + text::markdown(f) + "\n";
  }
  out += basis_section(plan, u);
  out += host_section(plan, u);
  out += rl_section(plan, u);
  out += time_section(plan, u);
  if (!loaded.warnings.empty() || !plan.warnings.empty()) {
    out += "\n### Warnings\n\n";
    for (const std::string& w : loaded.warnings) out += "- " + text::markdown(w) + "\n";
    for (const std::string& w : plan.warnings) out += "- " + text::markdown(w) + "\n";
  }
  return out;
}

}  // namespace trainledger::report
