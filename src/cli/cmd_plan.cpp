// `trainledger plan`: the ledger of one plan as a table, JSON or Markdown; with --max, the
// largest micro-batch or sequence length that fits.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <ostream>

#include "app.hpp"
#include "trainledger/plan.hpp"
#include "trainledger/search.hpp"
#include "trainledger/whatif.hpp"

namespace trainledger::cli {

namespace {

report::Format format_of(const std::string& f) {
  if (f == "json") return report::Format::json;
  if (f == "markdown") return report::Format::markdown;
  return report::Format::table;
}

int run_max(const PlanOptions& o, const config::LoadedPlan& loaded, std::ostream& out) {
  const MaxKnob knob = o.max == "seq_len" ? MaxKnob::seq_len : MaxKnob::micro_batch;
  const double headroom = config::parse_share_option("--headroom", o.headroom);
  const double limit = static_cast<double>(loaded.input.cluster.gpu.memory_bytes) * (1 - headroom);
  const MaxFit fit = find_max(loaded.input, knob, limit);
  const report::Options ro = report_options(o);
  const double unit = ro.units == report::MemUnits::gib ? k_gib : k_gb;
  const std::string u = ro.units == report::MemUnits::gib ? "GiB" : "GB";
  const Verdict& v = fit.plan.verdict;
  std::string line;
  if (fit.found) {
    line = fmt::format("largest {} that fits: {} (peak {:.2f} of {:.2f} {} on stage {}, {} phase",
                       o.max, fit.value, v.peak_bytes / unit, limit / unit, u, v.worst_stage,
                       to_string(v.phase));
    if (fit.next_peak_bytes > 0)
      line += fmt::format("; {} = {} needs {:.2f} {}", o.max, fit.value + fit.step,
                          fit.next_peak_bytes / unit, u);
    line += fmt::format("; {} plans evaluated)", fit.evaluations);
  } else {
    line = fmt::format("no {} fits: {} = {} already needs {:.2f} of {:.2f} {}", o.max, o.max,
                       fit.value, v.peak_bytes / unit, limit / unit, u);
  }
  if (o.format == "json") {
    auto j = nlohmann::ordered_json::parse(report::render_json(fit.plan, loaded.plan_source()));
    j["search"] = {{"knob", o.max},
                   {"found", fit.found},
                   {"value", fit.value},
                   {"step", fit.step},
                   {"limit_bytes", limit},
                   {"next_peak_bytes", fit.next_peak_bytes},
                   {"evaluations", fit.evaluations}};
    out << j.dump(2) << "\n";
  } else {
    out << line << "\n\n"
        << report::render(format_of(o.format), fit.plan, loaded.plan_source(), ro);
  }
  return fit.found ? k_exit_ok : k_exit_does_not_fit;
}

}  // namespace

CLI::App* add_plan_command(CLI::App& app, PlanOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "plan",
      "Per-GPU memory ledger of a plan, stage by stage and phase by phase, with the verdict");
  add_plan_options(*sub, o);
  sub->add_option("--format", o.format, "table (default), json or markdown")
      ->check(CLI::IsMember({"table", "json", "markdown"}));
  sub->add_option("--max", o.max,
                  "find the largest micro_batch or seq_len that fits (bisection over the ledger)")
      ->check(CLI::IsMember({"micro_batch", "seq_len"}));
  sub->add_option("--headroom", o.headroom,
                  "with --max: share of the GPU memory to keep free, e.g. 10% (default 0%)");
  return sub;
}

int run_plan(const PlanOptions& o, std::ostream& out, std::ostream& /*err*/) {
  const config::LoadedPlan loaded = load(o);
  if (!o.max.empty()) return run_max(o, loaded, out);
  PlanResult plan = compute_plan(loaded.input);
  plan.levers = find_levers(plan);
  out << report::render(format_of(o.format), plan, loaded.plan_source(), report_options(o));
  return k_exit_ok;
}

}  // namespace trainledger::cli
