#include "app.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "files.hpp"
#include "trainledger/invariants.hpp"
#include "trainledger/layout_search.hpp"
#include "trainledger/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <ostream>
#include <thread>

namespace trainledger::cli {

namespace {

constexpr const char* k_description =
    "trainledger: will this LLM training run fit, where does the memory go, and why.\n"
    "Every number carries its formula, terms and source (`trainledger explain ITEM`).";

constexpr const char* k_footer =
    "Exit codes: 0 done (check: every plan fits); 1 check: a plan does not fit;\n"
    "            2 invalid input or usage; 3 failure at run time (a full disk; calibrate\n"
    "            probe: no GPU, a rank that failed or hung);\n"
    "            4 check: a plan fits but its estimate rests on a guess (--strict), or\n"
    "            counts only the training state (a count-only model).\n"
    "Docs: docs/cli.md, docs/config.md (plan keys), docs/formulas.md, docs/json-schema.md";

}  // namespace

void add_plan_options(CLI::App& sub, PlanOptions& o) {
  sub.add_option("plan", o.plan,
                 "plan file (TOML), - for stdin; default: the embedded default plan");
  sub.add_option("--set", o.sets, "override a key: --set section.key=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);  // one value per --set: a plan file after it stays a plan
  sub.add_option("--units", o.units, "memory units: gib (default, like nvidia-smi) or gb")
      ->check(CLI::IsMember({"gib", "gb"}));
  sub.add_option("--calibration", o.calibration,
                 "a calibration profile (trainledger calibrate import): its measured bandwidths "
                 "and latencies replace assumed ones; those items become kind measured "
                 "(repeatable: a later profile's keys win, and the reports say which set each)")
      ->type_name("PROFILE")
      ->allow_extra_args(false);
  add_from_option(sub, o.from);
}

void add_color_option(CLI::App& sub, std::string& color) {
  sub.add_option("--color", color,
                 "colour OVER, NEAR and the bars: auto (default: on a terminal, unless NO_COLOR "
                 "is set), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
}

bool use_color(const std::string& color, bool applies) {
  if (!applies || color == "never") return false;
  if (color == "always") return true;
  return isatty(1) != 0 && std::getenv("NO_COLOR") == nullptr;  // no-color.org
}

void add_from_option(CLI::App& sub, std::vector<std::string>& from) {
  sub.add_option(
         "--from", from,
         "import a training config: --from deepspeed ds_config.json, --from megatron "
         "train.sh, --from torchtitan job.toml, --from verl run.sh, --from nemo_rl "
         "recipe.yaml, --from openrlhf run.sh, --from trl run.sh (its settings apply under the "
         "plan's)")
      ->type_size(2)
      ->type_name("KIND FILE");
}

std::vector<std::pair<std::string, std::string>> imports_of(const std::vector<std::string>& from) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i + 1 < from.size(); i += 2) {
    if (from[i] != "deepspeed" && from[i] != "megatron" && from[i] != "torchtitan" &&
        from[i] != "verl" && from[i] != "nemo_rl" && from[i] != "openrlhf" && from[i] != "trl")
      throw config::ConfigError({config::Diagnostic{
          config::Origin{"--from", 0, 0, "option"},
          "unknown kind \"" + text::printable(from[i], 40) +
              "\" (deepspeed, megatron, torchtitan, verl, nemo_rl, openrlhf or trl)"}});
    out.emplace_back(from[i], from[i + 1]);
  }
  return out;
}

namespace {

// Whether --set changes the default plan's model or cluster but none of its layout: then the
// default layout (made for Llama-3.1-70B on 64 GPUs) is the planner's, not the user's.
bool model_without_layout(const std::vector<std::string>& sets) {
  bool model = false;
  for (const std::string& s : sets) {
    const std::string key = s.substr(0, s.find('='));
    if (key.rfind("parallel.", 0) == 0 || key == "training.micro_batch" ||
        key == "training.grad_accum")
      return false;
    model = model || key.rfind("model.", 0) == 0 || key.rfind("cluster.", 0) == 0;
  }
  return model;
}

// The default plan for a model (or cluster) given without a layout, when the default layout
// does not suit it: the fastest layout that fits, as `trainledger search` ranks them, and a
// warning that says which (and why the default's did not do).
config::LoadedPlan default_plan_for_model(const config::LoadOptions& lo,
                                          const config::ConfigError& why) {
  config::LoadOptions free = lo;
  free.free_layout = true;
  const config::LoadedPlan base = config::load_default_plan(free);
  SearchOptions so;
  so.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  so.confidence = k_default_confidence;
  so.top = 1;
  const SearchResult found = search_layouts(base.input, so);
  if (found.top.empty()) {
    // No layout fits: the plan as read without one (tp = pp = 1, dp the world), over its
    // capacity, with the way to more GPUs.
    config::LoadedPlan out = base;
    out.warnings.insert(
        out.warnings.begin(),
        text::printable(
            fmt::format("the default plan's layout does not suit {} on {} GPUs ({}), and no "
                        "layout fits on them: shown with tp 1 · pp 1 · dp {}; trainledger search "
                        "--fewest finds how many GPUs it needs",
                        base.input.model.name,
                        base.input.cluster.nodes * base.input.cluster.gpus_per_node,
                        why.diagnostics().front().message, base.input.parallel.dp),
            2048));
    return out;
  }
  const Layout& l = found.top.front();
  config::LoadOptions chosen = lo;
  for (const std::string& s :
       layout_settings(l, base.input.cluster.nodes, base.input.cluster.gpus_per_node))
    chosen.sets.push_back(s);
  // The stack the default plan's own layout implies (Megatron-style), as search keeps it.
  chosen.sets.push_back("training.framework=\"" +
                        std::string(to_string(base.input.training.framework)) + "\"");
  config::LoadedPlan out = config::load_default_plan(chosen);
  out.warnings.insert(
      out.warnings.begin(),
      text::printable(
          fmt::format(
              "the default plan's layout does not suit {} on {} GPUs ({}): this plan uses tp {} · "
              "pp "
              "{} · dp {}{}{} · ZeRO-{} · {} · micro-batch {}, the fastest layout that "
              "fits (trainledger search); set parallel.* to choose another",
              base.input.model.name, base.input.cluster.nodes * base.input.cluster.gpus_per_node,
              why.diagnostics().front().message, l.tp, l.pp, l.dp,
              l.cp > 1 ? fmt::format(" · cp {}", l.cp) : "",
              l.ep > 1
                  ? fmt::format(" · ep {}{}", l.ep,
                                l.etp > 0 && l.etp != l.tp ? fmt::format(" · etp {}", l.etp) : "")
                  : "",
              l.zero,
              l.recompute == Recompute::none ? std::string("no recompute")
                                             : fmt::format("{} recompute", to_string(l.recompute)),
              l.micro_batch),
          2048));
  return out;
}

}  // namespace

config::LoadedPlan load(const PlanOptions& o) {
  config::LoadOptions lo;
  lo.sets = o.sets;
  lo.calibration = o.calibration;
  lo.imports = imports_of(o.from);
  lo.free_layout = o.free_layout;
  if (o.text) return config::load_plan_text(o.text->text, o.text->name, o.text->base_dir, lo);
  // --from without a plan: the imported config and --set alone, not the default plan's scenario.
  if (o.plan.empty() && !lo.imports.empty()) return config::load_plan_text("", "(--from)", "", lo);
  if (o.plan.empty()) {
    try {
      return config::load_default_plan(lo);
    } catch (const config::ConfigError& e) {
      if (o.free_layout || !o.choose_layout || !model_without_layout(o.sets)) throw;
      return default_plan_for_model(lo, e);
    }
  }
  if (o.plan == "-") return config::load_plan_stream(std::cin, lo);
  return config::load_plan_file(o.plan, lo);
}

namespace {

// An input a refused result names: the plan key, its value.
struct Input {
  std::string key;
  double value;
};

// The inputs `items` read: their terms', and their collectives' (a time's formula is not among
// the item's terms).
std::vector<Input> inputs_read(const std::vector<const LineItem*>& items) {
  std::vector<Input> out;
  for (const LineItem* i : items) {
    for (const Term& t : i->terms)
      if (!t.input.empty()) out.push_back({t.input, t.value});
    for (const Collective& c : i->collectives)
      for (const Term& t : c.inputs) out.push_back({t.input, t.value});
  }
  return out;
}

// "; from KEY = VALUE (where it was written), ...": the inputs at the edge of a double first
// (non-finite, below 1e-30 or above 1e30), else all of them; at most four.
std::string named_inputs(const std::vector<Input>& inputs, const config::LoadedPlan& loaded) {
  std::vector<std::string> extreme, other;
  for (const Input& t : inputs) {
    const auto r = std::find_if(loaded.resolved.begin(), loaded.resolved.end(),
                                [&](const config::ResolvedValue& v) { return v.key == t.key; });
    if (r == loaded.resolved.end()) continue;
    const std::string shown = fmt::format("{} = {} ({})", t.key, r->display, r->origin.to_string());
    const double a = std::fabs(t.value);
    auto& list = !std::isfinite(a) || (a > 0 && a < 1e-30) || a > 1e30 ? extreme : other;
    if (std::find(list.begin(), list.end(), shown) == list.end()) list.push_back(shown);
  }
  const std::vector<std::string>& named = extreme.empty() ? other : extreme;
  if (named.empty()) return "";
  const std::size_t shown = std::min<std::size_t>(named.size(), 4);
  return fmt::format("; from {}{}",
                     fmt::join(named.begin(), named.begin() + static_cast<long>(shown), ", "),
                     named.size() > shown ? fmt::format(" and {} more", named.size() - shown) : "");
}

std::string inputs_of(const std::vector<const LineItem*>& items, const config::LoadedPlan& loaded) {
  return named_inputs(inputs_read(items), loaded);
}

std::vector<const LineItem*> all_items(const PlanResult& plan) {
  std::vector<const LineItem*> out;
  for (const StageMemory& st : plan.stages)
    for (const LineItem& i : st.items) out.push_back(&i);
  for (const auto* list : {&plan.communication, &plan.time, &plan.reliability})
    for (const LineItem& i : *list) out.push_back(&i);
  return out;
}

bool finite_item(const LineItem& i) {
  if (!std::isfinite(i.value) || (i.time_s && !std::isfinite(*i.time_s))) return false;
  for (const Term& t : i.terms)
    if (!std::isfinite(t.value)) return false;
  return true;
}

}  // namespace

void require_sound(const PlanResult& plan, const config::LoadedPlan& loaded) {
  const config::Origin where{loaded.source, 0, 0, "file"};
  const std::vector<std::string> broken = check_invariants(plan);
  if (!broken.empty()) {
    std::vector<const LineItem*> bad;
    for (const LineItem* i : all_items(plan))
      if (!finite_item(*i)) bad.push_back(i);
    throw config::ConfigError({config::Diagnostic{
        where, "the plan's numbers are out of range (" + broken.front() + ")" +
                   inputs_of(bad, loaded) +
                   "; an input is at the edge of what it can be (an efficiency, bandwidth or "
                   "rate near zero, a size near the largest)"}});
  }
  // Expected waste of 100 % or more: checkpoints, lost work and restarts take the whole run;
  // it never progresses, and a percentage above 100 would mean nothing. Young's interval
  // minimises δ/τ + τ/2M, so when it wastes everything every interval does.
  const LineItem* young = find_item(plan.reliability, ItemId::checkpoint_waste);
  const LineItem* planned = find_item(plan.reliability, ItemId::checkpoint_waste_planned);
  const bool any = young && young->value >= 1;
  if (!any && !(planned && planned->value >= 1)) return;
  std::vector<const LineItem*> cause;
  for (const ItemId id : {ItemId::mtbf, ItemId::checkpoint_write_time})
    if (const LineItem* i = find_item(plan.reliability, id)) cause.push_back(i);
  cause.push_back(any ? young : planned);
  std::string at = " at any checkpoint interval";
  if (!any) {
    at = fmt::format(
        " at checkpoint.interval ({:.3g} s; Young's interval wastes {:.1f} %: leave "
        "checkpoint.interval unset)",
        plan.input.checkpoint.interval, 100 * young->value);
    for (const config::ResolvedValue& v : loaded.resolved)
      if (v.key == "checkpoint.interval")
        at = fmt::format(
            " at checkpoint.interval = {} ({}; Young's interval wastes {:.1f} %: "
            "leave checkpoint.interval unset)",
            v.display, v.origin.to_string(), 100 * young->value);
  }
  const LineItem* mtbf = find_item(plan.reliability, ItemId::mtbf);
  const LineItem* write = find_item(plan.reliability, ItemId::checkpoint_write_time);
  throw config::ConfigError({config::Diagnostic{
      where, fmt::format("{}: the run never progresses: checkpoints, lost work and restarts take "
                         "all of its time{} (cluster MTBF {:.3g} s, checkpoint write {:.3g} s){}",
                         (any ? young : planned)->id, at, mtbf ? mtbf->value : 0.0,
                         write ? write->value : 0.0, inputs_of(cause, loaded))}});
}

PlanResult sound_plan(const config::LoadedPlan& loaded, const PlanScope& scope) {
  // A report that lists every stage (plan, explain, diff, sweep, compare) grows with pp: at
  // pp 1024 the JSON is 9.5 MB and takes 0.8 s; at the largest pp a plan allows (65,536) it
  // would take minutes and gigabytes. Those commands stop at 1024 stages; check judges any pp
  // from the stages that can hold the peak (PlanScope::every_stage).
  if (scope.every_stage && loaded.input.parallel.pp > k_max_listed_stages) {
    config::Origin at{loaded.source, 0, 0, "file"};
    for (const config::ResolvedValue& v : loaded.resolved)
      if (v.key == "parallel.pp") at = v.origin;
    throw config::ConfigError({config::Diagnostic{
        at, fmt::format("parallel.pp ({}): a report lists every stage, at most {}; `trainledger "
                        "check` judges plans of any pp (the verdict, the worst stage, the fixes)",
                        loaded.input.parallel.pp, k_max_listed_stages)}});
  }
  PlanResult plan = compute_plan(loaded.input, scope);
  require_sound(plan, loaded);
  return plan;
}

report::Options report_options(const PlanOptions& o) {
  report::Options r;
  r.units = o.units == "gb" ? report::MemUnits::gb : report::MemUnits::gib;
  return r;
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app(k_description, "trainledger");
  app.footer(k_footer);
  const std::string version_line =
      fmt::format("trainledger {} (commit {})", report::version(), build_commit());
  app.set_version_flag("--version", version_line);
  app.require_subcommand(1);
  PlanOptions plan_options;
  ExplainOptions explain_options;
  CheckOptions check_options;
  CLI::App* plan = add_plan_command(app, plan_options);
  CLI::App* check = add_check_command(app, check_options);
  SearchCliOptions search_options;
  CLI::App* search = add_search_command(app, search_options);
  SweepOptions sweep_options;
  CLI::App* sweep = add_sweep_command(app, sweep_options);
  DiffOptions diff_options;
  CLI::App* diff = add_diff_command(app, diff_options);
  CLI::App* explain = add_explain_command(app, explain_options);
  CLI::App* models = add_models_command(app);
  CLI::App* gpus = add_gpus_command(app);
  CLI::App* keys = add_keys_command(app);
  CalibrateOptions calibrate_options;
  CLI::App* calibrate_import = nullptr;
  CLI::App* calibrate_compare = nullptr;
  CLI::App* calibrate_probe = nullptr;
  CLI::App* calibrate_replica = nullptr;
  add_calibrate_command(app, calibrate_options, calibrate_import, calibrate_compare,
                        calibrate_probe, calibrate_replica);
  std::string completion_shell;
  CLI::App* completion = add_completion_command(app, completion_shell);
  CLI::App* man = add_man_command(app);

  // No arguments at all: the help, as `trainledger --help` prints it.
  if (args.empty()) {
    out << app.help();
    return k_exit_ok;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return k_exit_ok;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return k_exit_ok;
  } catch (const CLI::CallForVersion&) {
    out << version_line << "\n";
    return k_exit_ok;
  } catch (const CLI::ParseError& e) {
    err << "trainledger: error: " << e.what() << "\n"
        << "Run `trainledger --help` for usage.\n";
    return k_exit_invalid;
  }

  try {
    // Every command that writes a file (-o) refuses, before any work, a target that exists and
    // is not a regular file: a device node, a FIFO, a directory or a symbolic link is never
    // replaced (run as root, a rename would replace /dev/... with a regular file).
    if ((calibrate_import && *calibrate_import) || (calibrate_probe && *calibrate_probe) ||
        (calibrate_replica && *calibrate_replica) || (calibrate_compare && *calibrate_compare)) {
      const std::string& target = calibrate_options.output;
      if (!target.empty() && target != "-")
        if (const std::string why = config::unwritable_reason(target); !why.empty())
          throw config::ConfigError({config::Diagnostic{
              config::Origin{"-o", 0, 0, "option"}, "cannot write \"" + target + "\": " + why}});
    }
    if (*plan) return run_plan(plan_options, out, err);
    if (*explain) return run_explain(explain_options, out, err);
    if (*check) return run_check(check_options, out, err);
    if (*search) return run_search(search_options, out, err);
    if (*sweep) return run_sweep(sweep_options, out, err);
    if (*diff) return run_diff(diff_options, out, err);
    if (*models) return run_models(out);
    if (*gpus) return run_gpus(out);
    if (*keys) return run_keys(out);
    if (*completion) return run_completion(app, completion_shell, out);
    if (*man) return run_man(app, report::version(), k_footer, out);
    if (calibrate_import && *calibrate_import)
      return run_calibrate_import(calibrate_options, out, err);
    if (calibrate_compare && *calibrate_compare)
      return run_calibrate_compare(calibrate_options, out, err);
    if (calibrate_probe && *calibrate_probe)
      return run_calibrate_probe(calibrate_options, out, err);
    if (calibrate_replica && *calibrate_replica)
      return run_calibrate_replica(calibrate_options, out, err);
  } catch (const config::ConfigError& e) {
    for (const config::Diagnostic& d : e.diagnostics()) err << d.to_string() << "\n";
    return k_exit_invalid;
  } catch (const std::exception& e) {
    // A message may quote a file name: printable, as every diagnostic is.
    err << "trainledger: error: " << text::printable(e.what()) << "\n";
    return k_exit_runtime;
  }
  return k_exit_invalid;
}

}  // namespace trainledger::cli
