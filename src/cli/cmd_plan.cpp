// `trainledger plan`: the ledger of one plan as a table, JSON or Markdown.
#include <CLI/CLI.hpp>

#include <ostream>

#include "app.hpp"
#include "trainledger/plan.hpp"

namespace trainledger::cli {

CLI::App* add_plan_command(CLI::App& app, PlanOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "plan", "Per-GPU memory ledger of a plan, stage by stage, with the verdict");
  add_plan_options(*sub, o);
  sub->add_option("--format", o.format, "table (default), json or markdown")
      ->check(CLI::IsMember({"table", "json", "markdown"}));
  return sub;
}

int run_plan(const PlanOptions& o, std::ostream& out, std::ostream& /*err*/) {
  const config::LoadedPlan loaded = load(o);
  const PlanResult plan = compute_plan(loaded.input);
  const report::Format f = o.format == "json"       ? report::Format::json
                           : o.format == "markdown" ? report::Format::markdown
                                                    : report::Format::table;
  out << report::render(f, plan, loaded, report_options(o));
  return k_exit_ok;
}

}  // namespace trainledger::cli
