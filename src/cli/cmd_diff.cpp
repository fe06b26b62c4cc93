// `trainledger diff A [B] [--set KEY=V]...`: two plans item by item (the --set lines change B,
// which is A itself when no B is given): the inputs that differ, then each memory item at the
// worst stage, each time and communication item, with the terms that moved (docs/cli.md#diff).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <ostream>

#include "app.hpp"
#include "format.hpp"
#include "items_cli.hpp"
#include "trainledger/report.hpp"

namespace trainledger::cli {

namespace {

struct Row {
  std::string id;
  std::string label;
  Unit unit = Unit::bytes;
  double a = 0, b = 0;
  std::vector<std::string> why;  // terms whose values differ: "tokens 8192 → 4096"
};

// A term's value in human units by its own unit, the first word of its label: "s" seconds as a
// duration, "B" bytes (GiB from a MiB on, else bytes), "B/s" in GB/s; other terms as numbers.
std::string term_value(const Term& t) {
  const std::string unit = t.label.substr(0, t.label.find(' '));
  const double v = t.value;
  if (unit == "s") return report::format_duration(v);
  if (unit == "B/s") return fmt::format("{:.4g} GB/s", v / 1e9);
  if (unit == "B")
    return std::fabs(v) >= 1024.0 * 1024 ? fmt::format("{:.2f} GiB", v / (1024.0 * 1024 * 1024))
                                         : fmt::format("{:g} B", v);
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

// Rows for the items of two lists, A's order first; the terms that differ say why.
std::vector<Row> rows_of(const std::vector<LineItem>& a, const std::vector<LineItem>& b) {
  std::vector<Row> out;
  auto add = [&](const LineItem* x, const LineItem* y) {
    const LineItem& any = x ? *x : *y;
    Row r{any.id, any.label, any.unit, x ? x->value : 0.0, y ? y->value : 0.0, {}};
    if (x && y) {
      for (const Term& t : x->terms)
        for (const Term& u : y->terms)
          if (t.key == u.key && t.value != u.value && r.why.size() < 3)
            r.why.push_back(fmt::format("{} {} → {}", t.key, term_value(t), term_value(u)));
    }
    if (r.a != r.b || x == nullptr || y == nullptr) out.push_back(std::move(r));
  };
  for (const LineItem& x : a) add(&x, find_item(b, x.item));
  for (const LineItem& y : b)
    if (!find_item(a, y.item)) add(nullptr, &y);
  return out;
}

std::string delta_text(const Row& r) {
  const double d = r.b - r.a;
  std::string s = quantity_text(Quantity{d, r.unit});
  if (d > 0) s = "+" + s;
  if (r.a != 0 && r.unit != Unit::fraction) s += fmt::format(" ({:+.1f} %)", 100 * d / r.a);
  return s;
}

nlohmann::json rows_json(const std::vector<Row>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const Row& r : rows)
    j.push_back({{"id", r.id}, {"a", r.a}, {"b", r.b}, {"delta", r.b - r.a}, {"why", r.why}});
  return j;
}

void print_rows(const std::string& title, const std::vector<Row>& rows, std::ostream& out) {
  if (rows.empty()) return;
  out << "\n" << title << "\n";
  std::size_t w = 4;
  for (const Row& r : rows) w = std::max(w, r.id.size());
  out << fmt::format("  {:<{}}  {:>14}  {:>14}  {:>22}   {}\n", "item", w, "A", "B", "B − A",
                     "terms that moved");
  for (const Row& r : rows) {
    out << fmt::format("  {:<{}}  {:>14}  {:>14}  {:>22}", r.id, w,
                       quantity_text(Quantity{r.a, r.unit}), quantity_text(Quantity{r.b, r.unit}),
                       delta_text(r));
    if (!r.why.empty()) out << "   " << fmt::format("{}", fmt::join(r.why, ", "));
    out << "\n";
  }
}

}  // namespace

CLI::App* add_diff_command(CLI::App& app, DiffOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "diff",
      "Two plans item by item: what changed in memory and time, and why (A [B]; --set "
      "changes B, which is A itself when no B is given)");
  add_plan_options(*sub, o.plan);
  sub->add_option("other", o.other, "the second plan file (default: the first, with --set)");
  sub->add_option("--format", o.format,
                  "table (default), json or svg (the memory items that changed, A and B paired)")
      ->check(CLI::IsMember({"table", "json", "svg"}));
  return sub;
}

int run_diff(const DiffOptions& o, std::ostream& out, std::ostream& /*err*/) {
  PlanOptions pa = o.plan;
  pa.sets.clear();
  PlanOptions pb = o.plan;
  if (!o.other.empty()) pb.plan = o.other;
  if (o.other_text) pb.text = o.other_text;
  if (o.other.empty() && !o.other_text && o.plan.sets.empty())
    throw config::ConfigError({config::Diagnostic{
        config::Origin{"diff", 0, 0, "option"},
        "nothing to compare: give a second plan or a change with --set KEY=VALUE"}});
  const config::LoadedPlan la = load(pa);
  const config::LoadedPlan lb = load(pb);
  const PlanResult a = sound_plan(la);
  const PlanResult b = sound_plan(lb);
  // Inputs that differ, by key.
  std::map<std::string, std::pair<std::string, std::string>> inputs;
  std::map<std::string, std::string> origin_b;
  for (const auto& r : la.resolved) inputs[r.key].first = r.display;
  for (const auto& r : lb.resolved) {
    inputs[r.key].second = r.display;
    origin_b[r.key] = r.origin.to_string();
  }
  std::vector<std::array<std::string, 4>> changed;
  for (const auto& [key, v] : inputs)
    if (v.first != v.second)
      changed.push_back(
          {key, v.first.empty() ? "—" : v.first, v.second.empty() ? "—" : v.second, origin_b[key]});
  const auto& sa = a.stages[static_cast<std::size_t>(a.worst_stage)];
  const auto& sb = b.stages[static_cast<std::size_t>(b.worst_stage)];
  const std::vector<Row> memory = rows_of(sa.items, sb.items);
  const std::vector<Row> time = rows_of(a.time, b.time);
  const std::vector<Row> comm = rows_of(a.communication, b.communication);
  const std::vector<Row> reliability = rows_of(a.reliability, b.reliability);
  const std::string name_b =
      o.other.empty() && !o.other_text ? la.source + " with --set" : lb.source;
  if (o.format == "json") {
    nlohmann::json j;
    j["schema"] = "trainledger.diff/1";
    j["a"] = {{"plan", la.source},
              {"worst_stage", a.worst_stage},
              {"peak_bytes", a.verdict.peak_bytes},
              {"fits", plan_fits(a.verdict)}};
    j["b"] = {{"plan", name_b},
              {"worst_stage", b.worst_stage},
              {"peak_bytes", b.verdict.peak_bytes},
              {"fits", plan_fits(b.verdict)}};
    j["inputs"] = nlohmann::json::array();
    for (const auto& c : changed)
      j["inputs"].push_back({{"key", c[0]}, {"a", c[1]}, {"b", c[2]}, {"b_origin", c[3]}});
    j["memory"] = rows_json(memory);
    j["time"] = rows_json(time);
    j["communication"] = rows_json(comm);
    j["reliability"] = rows_json(reliability);
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return k_exit_ok;
  }
  if (o.format == "svg") {
    std::vector<report::PairedBar> bars;
    for (const Row& r : memory)
      bars.push_back({r.id, r.a / (1024.0 * 1024.0 * 1024.0), r.b / (1024.0 * 1024.0 * 1024.0)});
    bars.push_back({"peak", a.verdict.peak_bytes / (1024.0 * 1024.0 * 1024.0),
                    b.verdict.peak_bytes / (1024.0 * 1024.0 * 1024.0)});
    out << report::paired_bars_svg(
        "chart-diff", fmt::format("Memory at the worst stage: A = {}, B = {}", la.source, name_b),
        "GiB", bars);
    return k_exit_ok;
  }
  out << fmt::format("diff: A = {} → B = {}\n", la.source, name_b);
  out << fmt::format("peak: {} (stage {}, {}) → {} (stage {}, {}): {}\n",
                     quantity_text(Quantity{a.verdict.peak_bytes, Unit::bytes}), a.worst_stage,
                     to_string(a.verdict.phase),
                     quantity_text(Quantity{b.verdict.peak_bytes, Unit::bytes}), b.worst_stage,
                     to_string(b.verdict.phase),
                     plan_fits(a.verdict) == plan_fits(b.verdict)
                         ? (plan_fits(b.verdict) ? "both fit" : "neither fits")
                         : (plan_fits(b.verdict) ? "B fits, A does not" : "A fits, B does not"));
  out << "\nInputs that differ\n";
  if (changed.empty()) out << "  (none)\n";
  for (const auto& c : changed)
    out << fmt::format("  {:<34} {} → {}   ({})\n", c[0], c[1], c[2], c[3]);
  print_rows(fmt::format("Memory per GPU at the worst stage (A: stage {}, B: stage {})",
                         a.worst_stage, b.worst_stage),
             memory, out);
  print_rows("Step time", time, out);
  print_rows("Communication per GPU per step", comm, out);
  print_rows("Checkpoints and failures", reliability, out);
  return k_exit_ok;
}

}  // namespace trainledger::cli
