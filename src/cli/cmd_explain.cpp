// `trainledger explain ITEM`: one line item's formula, terms and source.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <ostream>
#include <vector>

#include "app.hpp"
#include "json_parts.hpp"
#include "trainledger/plan.hpp"
#include "trainledger/text.hpp"

namespace trainledger::cli {

namespace {

std::vector<std::string> all_ids(const PlanResult& plan) {
  std::vector<std::string> ids;
  auto add = [&](const std::vector<LineItem>& items) {
    for (const LineItem& i : items) {
      bool have = false;
      for (const std::string& id : ids) have = have || id == i.id;
      if (!have) ids.push_back(i.id);
    }
  };
  for (const StageMemory& st : plan.stages) add(st.items);
  add(plan.host.items);
  add(plan.communication);
  add(plan.time);
  add(plan.reliability);
  for (const RlPhase& ph : plan.rl.phases) add(ph.items);
  add(plan.rl.time);
  return ids;
}

}  // namespace

CLI::App* add_explain_command(CLI::App& app, ExplainOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "explain", "Show how one item is computed: value, formula, terms, source and kind");
  sub->add_option("item", o.item, "item id, e.g. optimizer.m (see `trainledger plan`)")->required();
  add_plan_options(*sub, o.plan);
  sub->add_option("--stage", o.stage, "pipeline stage for memory items (default: the worst)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--phase", o.phase,
                  "phase for memory items: init, forward, backward, optimizer or checkpoint "
                  "(default: the stage's peak phase, else the first phase that has the item)")
      ->check(CLI::IsMember({"init", "forward", "backward", "optimizer", "checkpoint"}));
  sub->add_option("--format", o.format,
                  "text (default) or json (trainledger.explain/1: the item as plan's JSON writes "
                  "it, where it was found and the inputs its time read)")
      ->check(CLI::IsMember({"text", "json"}));
  return sub;
}

namespace {

// An input a communication item's time read: the plan key, its value as written, its kind
// (measured, preset, default, ...) and where it was given.
struct ReadInput {
  std::string key;
  std::string value;
  std::string kind;
  std::string origin;  // empty, or the same as the kind: not shown
};

// The link keys a communication item's time was read from (Collective::inputs, recorded by the
// core from the time's own formula; docs/calibration.md), each with its value
// and where it came from: a calibration profile's line ("measured"), the GPU preset or the
// default. (The terms of other items name their plan keys and sources themselves.)
std::vector<ReadInput> inputs_read(const LineItem& item, const config::LoadedPlan& loaded) {
  std::vector<std::string> keys;
  for (const Collective& c : item.collectives)
    for (const Term& t : c.inputs)
      if (std::find(keys.begin(), keys.end(), t.input) == keys.end()) keys.push_back(t.input);
  // The bandwidths first, then the latencies, in the order the formula read them.
  std::stable_partition(keys.begin(), keys.end(), [](const std::string& k) {
    return k.find("bandwidth") != std::string::npos;
  });
  std::vector<ReadInput> out;
  for (const std::string& k : keys)
    for (const config::ResolvedValue& r : loaded.resolved) {
      if (r.key != k) continue;
      const Source s = loaded.input.provenance.of(k);
      const std::string kind = s == Source::calibration ? "measured" : std::string(to_string(s));
      const std::string where = text::printable(r.origin.to_string());
      out.push_back({k, text::printable(r.display), kind, where == kind ? "" : where});
    }
  return out;
}

std::string inputs_text(const std::vector<ReadInput>& inputs) {
  std::string out;
  for (const ReadInput& i : inputs)
    out += fmt::format("  {:<8} {} = {} ({}{})\n", out.empty() ? "inputs" : "", i.key, i.value,
                       i.kind, i.origin.empty() ? "" : ": " + i.origin);
  return out;
}

}  // namespace

int run_explain(const ExplainOptions& o, std::ostream& out, std::ostream& err) {
  const config::LoadedPlan loaded = load(o.plan);
  const PlanResult plan = sound_plan(loaded);
  const report::Options ro = report_options(o.plan);
  const auto show = [&](const LineItem& item, const std::string& where) {
    const std::vector<ReadInput> inputs = inputs_read(item, loaded);
    if (o.format != "json") {
      out << report::render_explain(item, where, ro) << inputs_text(inputs);
      return;
    }
    nlohmann::ordered_json read = nlohmann::ordered_json::array();
    for (const ReadInput& i : inputs)
      read.push_back({{"key", i.key},
                      {"value", i.value},
                      {"kind", i.kind},
                      {"origin", i.origin.empty() ? nlohmann::ordered_json(nullptr)
                                                  : nlohmann::ordered_json(i.origin)}});
    const nlohmann::ordered_json j = {{"schema", "trainledger.explain/1"},
                                      {"plan", text::printable(loaded.source)},
                                      {"where", where},
                                      {"item", report::line_item_json(item)},
                                      {"inputs_read", read}};
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  };
  if (o.stage >= static_cast<int>(plan.stages.size())) {
    err << fmt::format("trainledger: error: --stage {}: the plan has {} stage(s)\n", o.stage,
                       plan.stages.size());
    return k_exit_invalid;
  }
  const std::optional<ItemId> id = item_by_name(o.item);
  if (id) {
    constexpr Phase k_phases[] = {Phase::init, Phase::forward, Phase::backward, Phase::optimizer,
                                  Phase::checkpoint};
    // The stage asked for, or the worst one and then the others (the logits live on the last).
    std::vector<int> stages;
    if (o.stage >= 0) {
      stages.push_back(o.stage);
    } else {
      stages.push_back(plan.worst_stage);
      for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s)
        if (s != plan.worst_stage) stages.push_back(s);
    }
    for (int stage : stages) {
      const StageMemory& st = plan.stages[stage];
      const std::string where = fmt::format("stage {} ({})", st.stage, st.role);
      if (!o.phase.empty()) {
        // The item as the ledger holds it in that phase.
        for (Phase ph : k_phases) {
          if (to_string(ph) != o.phase) continue;
          const std::vector<LineItem> items = phase_ledger(loaded.input, stage, ph);
          if (const LineItem* item = find_item(items, *id)) {
            show(*item, fmt::format("{}, {} phase", where, o.phase));
            return k_exit_ok;
          }
        }
        continue;
      }
      if (const LineItem* item = find_item(st.items, *id)) {
        show(*item, fmt::format("{}, {} phase (its peak)", where, to_string(st.peak_phase)));
        return k_exit_ok;
      }
      // Not held at the peak (activations when the peak is the optimizer step): the first
      // phase whose ledger has it.
      for (Phase ph : k_phases) {
        const std::vector<LineItem> items = phase_ledger(loaded.input, stage, ph);
        if (const LineItem* item = find_item(items, *id)) {
          show(*item, fmt::format("{}, {} phase (not held at the {} peak)", where, to_string(ph),
                                  to_string(st.peak_phase)));
          return k_exit_ok;
        }
      }
    }
    const bool elsewhere = find_item(plan.host.items, *id) || find_item(plan.communication, *id) ||
                           find_item(plan.time, *id) || find_item(plan.reliability, *id);
    if (!o.phase.empty() && !elsewhere) {
      const StageMemory& first = plan.stages[stages.front()];
      const std::string where = stages.size() == 1
                                    ? fmt::format("stage {} ({})", first.stage, first.role)
                                    : std::string("any stage");
      err << fmt::format("trainledger: error: \"{}\" is not in {}'s ledger in the {} phase\n",
                         o.item, where, o.phase);
      return k_exit_invalid;
    }
    for (const auto* section :
         {&plan.host.items, &plan.communication, &plan.time, &plan.reliability}) {
      if (const LineItem* item = find_item(*section, *id)) {
        show(*item, section == &plan.host.items ? "per node" : "");
        return k_exit_ok;
      }
    }
    // RL plans (docs/rl.md): the step's phases, then the first phase whose memory holds it.
    if (const LineItem* item = find_item(plan.rl.time, *id)) {
      show(*item, "the RL step");
      return k_exit_ok;
    }
    for (const RlPhase& ph : plan.rl.phases)
      if (const LineItem* item = find_item(ph.items, *id)) {
        show(*item, fmt::format("RL {} phase, per GPU ({})", ph.name, ph.pool));
        return k_exit_ok;
      }
  }
  std::string known;
  for (const std::string& name : all_ids(plan)) known += (known.empty() ? "" : ", ") + name;
  err << fmt::format("trainledger: error: no item \"{}\" in this plan (items: {})\n", o.item,
                     known);
  return k_exit_invalid;
}

}  // namespace trainledger::cli
