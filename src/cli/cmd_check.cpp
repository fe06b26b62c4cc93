// `trainledger check PLAN...`: the CI gate. Exit 0 when every plan fits with the headroom,
// 1 when one does not (or fits by less than the headroom), 2 on invalid input.
#include <fmt/format.h>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <ostream>

#include "app.hpp"
#include "trainledger/plan.hpp"
#include "trainledger/whatif.hpp"

namespace trainledger::cli {

namespace {

enum class Status { ok, near, over };

struct Checked {
  std::string name;
  config::LoadedPlan loaded;
  PlanResult plan;
  double limit = 0;
  double capacity = 0;
  Status status = Status::ok;
  std::vector<Fix> suggestions;
  std::vector<std::string> warnings;
};

Checked check_one(const CheckOptions& o, const std::string& name, double headroom) {
  PlanOptions po;
  po.plan = name;
  po.sets = o.sets;
  Checked c;
  c.name = name.empty() ? "(default plan)" : name;
  c.loaded = load(po);
  c.plan = compute_plan(c.loaded.input);
  c.capacity = o.capacity.empty() ? static_cast<double>(c.loaded.input.cluster.gpu.memory_bytes)
                                  : config::parse_size_option("--capacity", o.capacity);
  c.limit = c.capacity * (1 - headroom);
  const double peak = c.plan.verdict.peak_bytes;
  c.status = peak > c.capacity ? Status::over : peak > c.limit ? Status::near : Status::ok;
  if (c.status != Status::ok) c.suggestions = find_fixes(c.plan, c.limit);
  // The loader's warnings (a guessed architecture, a count that differs from the published
  // one) and the planner's (no activations for a count-only model, step time not computed).
  c.warnings = c.loaded.warnings;
  c.warnings.insert(c.warnings.end(), c.plan.warnings.begin(), c.plan.warnings.end());
  return c;
}

std::string status_text(Status s) {
  return s == Status::ok ? "ok" : s == Status::near ? "NEAR" : "OVER";
}

void print_details(const Checked& c, double unit, const std::string& u, double headroom,
                   std::ostream& out) {
  const Verdict& v = c.plan.verdict;
  const StageMemory& st = c.plan.stages[v.worst_stage];
  const std::string where =
      fmt::format("stage {} ({}), {} phase", st.stage, st.role, to_string(st.peak_phase));
  if (c.status == Status::over) {
    out << fmt::format("\n{}: does not fit: {} needs {:.2f} {} of {:.2f} {}: {:.2f} {} over\n",
                       c.name, where, v.peak_bytes / unit, u, c.capacity / unit, u,
                       (v.peak_bytes - c.capacity) / unit, u);
  } else {
    out << fmt::format(
        "\n{}: fits by only {:.2f} {} ({:.1f} %) on {}, less than the {:.0f} % headroom "
        "(limit {:.2f} {})\n",
        c.name, (c.capacity - v.peak_bytes) / unit, u,
        100 * (c.capacity - v.peak_bytes) / c.capacity, where, headroom * 100, c.limit / unit, u);
  }
  out << fmt::format("  largest contributors on stage {}:\n", st.stage);
  for (const Fix& s : c.suggestions) {
    std::string advice = "no single knob shrinks it";
    if (s.change)
      advice = fmt::format("{} frees {:.2f} {} on stage {}{}", report::change_text(*s.change),
                           s.freed_bytes / unit, u, st.stage, s.then_fits ? " (then it fits)" : "");
    out << fmt::format("    {:<26} {:>9.2f} {}  → {}\n", info(s.item).name, s.bytes / unit, u,
                       advice);
  }
}

nlohmann::ordered_json check_json(const std::vector<Checked>& all, double headroom) {
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (const Checked& c : all) {
    const Verdict& v = c.plan.verdict;
    nlohmann::ordered_json suggestions = nlohmann::ordered_json::array();
    for (const Fix& s : c.suggestions)
      suggestions.push_back({{"id", std::string(info(s.item).name)},
                             {"bytes", s.bytes},
                             {"knob", s.change ? report::change_text(*s.change) : ""},
                             {"freed_bytes", s.freed_bytes},
                             {"then_fits", s.then_fits}});
    plans.push_back({{"plan", c.name},
                     {"status", status_text(c.status)},
                     {"fits", c.status == Status::ok},
                     {"worst_stage", v.worst_stage},
                     {"phase", std::string(to_string(v.phase))},
                     {"peak_bytes", v.peak_bytes},
                     {"capacity_bytes", c.capacity},
                     {"limit_bytes", c.limit},
                     {"suggestions", suggestions},
                     {"warnings", c.warnings}});
  }
  return {{"schema", "trainledger.check/1"}, {"headroom", headroom}, {"plans", plans}};
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "check",
      "CI gate: exit 0 if every plan fits with headroom, 1 if one does not, 2 on bad input");
  sub->add_option("plans", o.plans,
                  "plan files, at least one (\"default\": the embedded default plan)");
  sub->add_option("--set", o.sets, "override a key in every plan (repeatable)")
      ->type_name("KEY=VALUE");
  sub->add_option("--capacity", o.capacity, "memory per GPU, e.g. \"80 GiB\" (default: the GPU's)");
  sub->add_option("--headroom", o.headroom,
                  "share of the capacity to keep free (default 10%); less is a near miss");
  sub->add_option("--format", o.format, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));
  sub->add_option("--units", o.units, "gib (default) or gb")->check(CLI::IsMember({"gib", "gb"}));
  return sub;
}

int run_check(const CheckOptions& o, std::ostream& out, std::ostream& err) {
  const double headroom = config::parse_share_option("--headroom", o.headroom);
  if (!o.capacity.empty()) config::parse_size_option("--capacity", o.capacity);
  if (o.plans.empty()) {
    // A CI step whose glob matched nothing must not pass.
    err << "trainledger check: no plan files given (a glob that matched nothing?)\n"
           "usage: trainledger check PLAN... [--set ...] [--capacity SIZE] [--headroom 10%]\n"
           "       trainledger check default   checks the embedded default plan\n";
    return k_exit_invalid;
  }
  std::vector<std::string> names = o.plans;
  for (std::string& n : names)
    if (n == "default" && !std::filesystem::exists(n)) n.clear();
  std::vector<Checked> all;
  bool invalid = false;
  for (const std::string& name : names) {
    try {
      all.push_back(check_one(o, name, headroom));
    } catch (const config::ConfigError& e) {
      for (const config::Diagnostic& d : e.diagnostics()) err << d.to_string() << "\n";
      invalid = true;
    }
  }
  if (invalid) return k_exit_invalid;
  const bool gib = o.units != "gb";
  const double unit = gib ? k_gib : k_gb;
  const std::string u = gib ? "GiB" : "GB";
  bool failed = false;
  for (const Checked& c : all) failed = failed || c.status != Status::ok;
  if (o.format == "json") {
    out << check_json(all, headroom).dump(2) << "\n";
    return failed ? k_exit_does_not_fit : k_exit_ok;
  }
  std::size_t w = 4;
  for (const Checked& c : all) w = std::max(w, c.name.size());
  out << fmt::format("{:<{}}  {:<6} {:<18} {:<10} {:>9} {:>9} {:>9}\n", "plan", w, "status",
                     "worst stage", "phase", "peak", "limit", "headroom");
  for (const Checked& c : all) {
    const Verdict& v = c.plan.verdict;
    const StageMemory& st = c.plan.stages[v.worst_stage];
    out << fmt::format("{:<{}}  {:<6} {:<18} {:<10} {:>9.2f} {:>9.2f} {:>8.1f}%\n", c.name, w,
                       status_text(c.status), fmt::format("stage {} ({})", st.stage, st.role),
                       to_string(v.phase), v.peak_bytes / unit, c.limit / unit,
                       100 * (c.capacity - v.peak_bytes) / c.capacity);
  }
  out << fmt::format("memory per GPU in {}; limit = capacity − {:.0f} % headroom\n", u,
                     headroom * 100);
  for (const Checked& c : all)
    if (c.status != Status::ok) print_details(c, unit, u, headroom, out);
  for (const Checked& c : all)
    for (const std::string& text : c.warnings) out << c.name << ": warning: " << text << "\n";
  return failed ? k_exit_does_not_fit : k_exit_ok;
}

}  // namespace trainledger::cli
