#include "app.hpp"

#include <CLI/CLI.hpp>

#include "trainledger/invariants.hpp"

#include <iostream>
#include <ostream>

namespace trainledger::cli {

namespace {

constexpr const char* k_description =
    "trainledger: will this LLM training run fit, where does the memory go, and why.\n"
    "Every number carries its formula, terms and source (`trainledger explain ITEM`).";

constexpr const char* k_footer =
    "Exit codes: 0 done (check: every plan fits); 1 check: a plan does not fit;\n"
    "            2 invalid input or usage; 3 failure at run time (a full disk; calibrate\n"
    "            probe: no GPU, a rank that failed or hung);\n"
    "            4 check --strict: a plan fits but its estimate rests on a guess.\n"
    "Docs: docs/cli.md, docs/config.md (plan keys), docs/formulas.md, docs/json-schema.md";

}  // namespace

void add_plan_options(CLI::App& sub, PlanOptions& o) {
  sub.add_option("plan", o.plan,
                 "plan file (TOML), - for stdin; default: the embedded default plan");
  sub.add_option("--set", o.sets, "override a key: --set section.key=value (repeatable)")
      ->type_name("KEY=VALUE");
  sub.add_option("--units", o.units, "memory units: gib (default, like nvidia-smi) or gb")
      ->check(CLI::IsMember({"gib", "gb"}));
  sub.add_option("--calibration", o.calibration,
                 "a calibration profile (trainledger calibrate import): its measured bandwidths "
                 "and latencies replace assumed ones; those items become kind measured")
      ->type_name("PROFILE");
  add_from_option(sub, o.from);
}

void add_from_option(CLI::App& sub, std::vector<std::string>& from) {
  sub.add_option("--from", from,
                 "import a training config: --from deepspeed ds_config.json, --from megatron "
                 "train.sh, --from torchtitan job.toml (its settings apply under the plan's)")
      ->type_size(2)
      ->type_name("KIND FILE");
}

std::vector<std::pair<std::string, std::string>> imports_of(const std::vector<std::string>& from) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i + 1 < from.size(); i += 2) {
    if (from[i] != "deepspeed" && from[i] != "megatron" && from[i] != "torchtitan")
      throw config::ConfigError({config::Diagnostic{
          config::Origin{"--from", 0, 0, "option"},
          "unknown kind \"" + from[i] + "\" (deepspeed, megatron or torchtitan)"}});
    out.emplace_back(from[i], from[i + 1]);
  }
  return out;
}

config::LoadedPlan load(const PlanOptions& o) {
  config::LoadOptions lo;
  lo.sets = o.sets;
  lo.calibration = o.calibration;
  lo.imports = imports_of(o.from);
  // --from without a plan: the imported config and --set alone, not the default plan's scenario.
  if (o.plan.empty() && !lo.imports.empty()) return config::load_plan_text("", "(--from)", "", lo);
  if (o.plan.empty()) return config::load_default_plan(lo);
  if (o.plan == "-") return config::load_plan_stream(std::cin, lo);
  return config::load_plan_file(o.plan, lo);
}

void require_sound(const PlanResult& plan, const config::LoadedPlan& loaded) {
  const std::vector<std::string> broken = check_invariants(plan);
  if (broken.empty()) return;
  throw config::ConfigError({config::Diagnostic{
      config::Origin{loaded.source, 0, 0, "file"},
      "the plan's numbers are out of range (" + broken.front() +
          "); an input is at the edge of what it can be (an efficiency, bandwidth or rate near "
          "zero, a size near the largest)"}});
}

PlanResult sound_plan(const config::LoadedPlan& loaded) {
  PlanResult plan = compute_plan(loaded.input);
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
  app.set_version_flag("--version", "trainledger " + report::version());
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
  add_calibrate_command(app, calibrate_options, calibrate_import, calibrate_compare,
                        calibrate_probe);

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
    out << "trainledger " << report::version() << "\n";
    return k_exit_ok;
  } catch (const CLI::ParseError& e) {
    err << "trainledger: error: " << e.what() << "\n"
        << "Run `trainledger --help` for usage.\n";
    return k_exit_invalid;
  }

  try {
    if (*plan) return run_plan(plan_options, out, err);
    if (*explain) return run_explain(explain_options, out, err);
    if (*check) return run_check(check_options, out, err);
    if (*search) return run_search(search_options, out, err);
    if (*sweep) return run_sweep(sweep_options, out, err);
    if (*diff) return run_diff(diff_options, out, err);
    if (*models) return run_models(out);
    if (*gpus) return run_gpus(out);
    if (*keys) return run_keys(out);
    if (calibrate_import && *calibrate_import)
      return run_calibrate_import(calibrate_options, out, err);
    if (calibrate_compare && *calibrate_compare)
      return run_calibrate_compare(calibrate_options, out, err);
    if (calibrate_probe && *calibrate_probe)
      return run_calibrate_probe(calibrate_options, out, err);
  } catch (const config::ConfigError& e) {
    for (const config::Diagnostic& d : e.diagnostics()) err << d.to_string() << "\n";
    return k_exit_invalid;
  } catch (const std::exception& e) {
    err << "trainledger: error: " << e.what() << "\n";
    return k_exit_runtime;
  }
  return k_exit_invalid;
}

}  // namespace trainledger::cli
