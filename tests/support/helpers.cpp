#include "helpers.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "app.hpp"
#include "trainledger/invariants.hpp"

namespace trainledger::test {

std::string source_path(const std::string& relative) {
  return std::string(TRAINLEDGER_SOURCE_DIR) + "/" + relative;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

config::LoadedPlan load_text(const std::string& toml, const std::vector<std::string>& sets) {
  config::LoadOptions o;
  o.sets = sets;
  return config::load_plan_text(toml, "test.toml", source_path("tests/data"), o);
}

PlanResult plan_checked(const PlanInput& input) {
  PlanResult r = compute_plan(input);
  const std::vector<std::string> problems = check_invariants(r);
  INFO("invariant violations: " << problems.size());
  for (const std::string& p : problems) UNSCOPED_INFO(p);
  REQUIRE(problems.empty());
  return r;
}

PlanResult plan_text(const std::string& toml, const std::vector<std::string>& sets) {
  return plan_checked(load_text(toml, sets).input);
}

std::vector<std::string> load_errors(const std::string& toml,
                                     const std::vector<std::string>& sets) {
  try {
    load_text(toml, sets);
  } catch (const config::ConfigError& e) {
    std::vector<std::string> out;
    for (const config::Diagnostic& d : e.diagnostics()) out.push_back(d.to_string());
    return out;
  }
  return {};
}

CliResult run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliResult r;
  r.code = cli::run(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

double item_value(const PlanResult& plan, const std::string& id, int stage) {
  const LineItem* i = find_item(plan.stages.at(static_cast<std::size_t>(stage)).items, id);
  return i ? i->value : 0.0;
}

double phase_value(const PlanResult& plan, const std::string& id, int stage, Phase phase) {
  const std::vector<LineItem> items = phase_ledger(plan.input, stage, phase);
  const LineItem* i = find_item(items, id);
  return i ? i->value : 0.0;
}

double state_bytes(const PlanResult& plan, int stage) {
  double sum = 0;
  for (const LineItem& i : plan.stages.at(static_cast<std::size_t>(stage)).items) {
    const bool state = i.id == "params" || i.id == "grads" || i.id == "master" ||
                       i.id.rfind("optimizer.", 0) == 0 || i.id.rfind("params.", 0) == 0;
    if (state) sum += i.value;
  }
  return sum;
}

}  // namespace trainledger::test
