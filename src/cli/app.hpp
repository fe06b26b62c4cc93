// The command-line program as a function, so tests can run it in-process.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "trainledger/config.hpp"
#include "trainledger/plan.hpp"
#include "trainledger/report.hpp"

namespace CLI {
class App;
}

namespace trainledger::cli {

// Exit codes (documented in --help and docs/cli.md).
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_does_not_fit = 1;
inline constexpr int k_exit_invalid = 2;
inline constexpr int k_exit_runtime = 3;
inline constexpr int k_exit_unsure = 4;  // check --strict: a plan fits but rests on a guess

// Runs `trainledger args...`; writes results to `out`, messages to `err`; returns the exit code.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// A plan given as text rather than as a file (the Python module, docs/python.md): named `name`
// in messages; its relative paths resolve against `base_dir`, and stay inside it, as a plan
// file's stay inside its folder.
struct PlanText {
  std::string text;
  std::string name;
  std::string base_dir;
};

// Options shared by subcommands that load a plan.
struct PlanOptions {
  std::string plan;               // empty: the embedded default plan
  std::optional<PlanText> text;   // instead of `plan`: the plan's text
  std::vector<std::string> sets;  // --set section.key=value
  std::string format = "table";
  std::string units = "gib";
  std::string max;                       // plan --max micro_batch|seq_len
  std::string keep = "global_batch";     // plan --max micro_batch: what stays fixed
  std::string phase;                     // plan --phase: the ledger of this phase
  std::string headroom = "10%";          // share of the capacity kept free (check's default)
  std::string confidence = "90%";        // the bands' confidence; "off": the estimate alone
  std::vector<std::string> calibration;  // --calibration PROFILE (repeatable; later ones win)
  std::vector<std::string> from;         // --from KIND FILE, flattened
  std::string emit;                      // plan --emit megatron|deepspeed|torchtitan
  std::string chart = "memory";          // plan --format svg --chart NAME
  bool ascii = false;                    // plan: ASCII bars in the table
  std::string stage;                     // plan --stage N[,N...]|worst|all
  std::string color = "auto";            // plan --color auto|always|never
  int width = -1;                        // plan --width: the table's columns (-1: the terminal's)
  bool free_layout = false;              // search: the layout keys are not validated (LoadOptions)
  // The default plan with a model (or cluster) but no layout from --set, when the default's
  // layout does not suit it: the fastest layout that fits (search turns it off: it searches).
  bool choose_layout = true;
};
void add_plan_options(CLI::App& sub, PlanOptions& o);
// --color auto|always|never; use_color: whether to colour (auto: a terminal without NO_COLOR,
// and only where `applies`, the table format).
void add_color_option(CLI::App& sub, std::string& color);
bool use_color(const std::string& color, bool applies);
void add_from_option(CLI::App& sub, std::vector<std::string>& from);
// --from KIND FILE pairs → LoadOptions::imports; a kind that is not one is exit 2.
std::vector<std::pair<std::string, std::string>> imports_of(const std::vector<std::string>& from);
config::LoadedPlan load(const PlanOptions& o);
// The plan's ledger, held to the invariant checker: inputs at the edge of their ranges (an
// efficiency of 5e-324, a bandwidth of 1e-300 B/s) that would print inf or NaN are refused
// as invalid input, naming the first broken invariant.
void require_sound(const PlanResult& plan, const config::LoadedPlan& loaded);
// `scope`: check asks only for the stages that can hold the peak (PlanScope::every_stage).
// With every stage, a plan of more than k_max_listed_stages stages is refused (exit 2).
inline constexpr int k_max_listed_stages = 1024;
PlanResult sound_plan(const config::LoadedPlan& loaded, const PlanScope& scope = {});
report::Options report_options(const PlanOptions& o);

struct ExplainOptions {
  PlanOptions plan;
  std::string item;
  int stage = -1;               // -1: the worst stage
  std::string phase;            // empty: the stage's peak phase
  std::string format = "text";  // text or json (trainledger.explain/1)
};

CLI::App* add_plan_command(CLI::App& app, PlanOptions& o);
int run_plan(const PlanOptions& o, std::ostream& out, std::ostream& err);

CLI::App* add_explain_command(CLI::App& app, ExplainOptions& o);
int run_explain(const ExplainOptions& o, std::ostream& out, std::ostream& err);

struct CheckOptions {
  std::vector<std::string> plans;
  std::optional<PlanText> text;  // instead of `plans`: one plan's text
  std::vector<std::string> sets;
  std::vector<std::string> calibration;  // --calibration PROFILE (repeatable)
  std::string color = "auto";            // --color auto|always|never
  std::vector<std::string> from;         // --from KIND FILE, flattened
  std::string capacity;                  // empty: each plan's GPU memory
  std::string headroom = "10%";
  std::string confidence = "90%";
  bool strict = false;  // a plan resting on a guess fails (exit 4)
  std::string format = "table";
  std::string units = "gib";
};

CLI::App* add_check_command(CLI::App& app, CheckOptions& o);

struct SearchCliOptions {
  PlanOptions plan;
  int gpus = 0;
  int nodes = 0;
  std::string objective = "step-time";
  int top = 10;
  std::vector<std::string> fix;
  std::vector<std::string> allow;
  int jobs = 0;  // 0: every core
  std::string headroom = "10%";
  std::string confidence = "90%";
  bool fewest = false;
  std::string target;        // --target-step-time
  std::string target_train;  // --target-time-to-train
  std::string format = "table";
  bool no_progress = false;
};
CLI::App* add_search_command(CLI::App& app, SearchCliOptions& o);

struct SweepOptions {
  PlanOptions plan;
  std::vector<std::string> vary;  // KEY=V1,V2,...
  std::string show;               // comma-separated quantities
  std::string format = "table";
};
CLI::App* add_sweep_command(CLI::App& app, SweepOptions& o);
int run_sweep(const SweepOptions& o, std::ostream& out, std::ostream& err);

struct DiffOptions {
  PlanOptions plan;                    // A (its --set apply to B only)
  std::string other;                   // B; empty: A with --set
  std::optional<PlanText> other_text;  // instead of `other`: B's text
  std::vector<std::string> sets_b;
  std::string format = "table";
};
CLI::App* add_diff_command(CLI::App& app, DiffOptions& o);
int run_diff(const DiffOptions& o, std::ostream& out, std::ostream& err);
int run_search(const SearchCliOptions& o, std::ostream& out, std::ostream& err);
int run_check(const CheckOptions& o, std::ostream& out, std::ostream& err);

struct CalibrateOptions {
  PlanOptions plan;  // compare: the plan and its options
  std::vector<std::string> memory_stats;
  double step_time = 0;  // 0: not given
  std::vector<std::string> logs;
  std::string output;  // empty: standard output
  // calibrate import: one value for every log, or one per log in the logs' order.
  std::vector<std::string> collective;
  std::vector<int> ranks;
  std::vector<int> nodes;
  std::string gpu_name;
  std::string nic_rate;  // calibrate import: the network's line rate per GPU (empty: unknown)
  // probe
  std::string backend = "auto";
  std::string min_bytes = "8 B";
  std::string max_bytes;  // empty: 1 GiB with NCCL, 64 MiB with MPI
  double step_factor = 2;
  int warmup = 5;
  int iters = 20;
  double timeout = 300;
  double startup_timeout = 30;  // probe::k_default_startup_timeout_s
  std::vector<std::string> probe_collectives;
  bool no_progress = false;
  std::vector<int> replica_layers;   // calibrate replica: empty: replica_layers(plan)
  std::vector<std::string> replica;  // calibrate compare --replica: the script's results
};
CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& o, CLI::App*& import,
                                CLI::App*& compare, CLI::App*& probe, CLI::App*& replica);
int run_calibrate_replica(const CalibrateOptions& o, std::ostream& out, std::ostream& err);
// calibrate compare --replica (src/cli/cmd_replica.cpp).
int compare_replica(const CalibrateOptions& o, const config::LoadedPlan& loaded, std::ostream& out);
int run_calibrate_probe(const CalibrateOptions& o, std::ostream& out, std::ostream& err);
int run_calibrate_import(const CalibrateOptions& o, std::ostream& out, std::ostream& err);
int run_calibrate_compare(const CalibrateOptions& o, std::ostream& out, std::ostream& err);

CLI::App* add_models_command(CLI::App& app);
int run_models(std::ostream& out);
CLI::App* add_gpus_command(CLI::App& app);
int run_gpus(std::ostream& out);
CLI::App* add_keys_command(CLI::App& app);
int run_keys(std::ostream& out);
// `trainledger completion bash|zsh|fish` and `trainledger man`: generated from `app`'s commands.
CLI::App* add_completion_command(CLI::App& app, std::string& shell);
CLI::App* add_man_command(CLI::App& app);
int run_completion(const CLI::App& app, const std::string& shell, std::ostream& out);
int run_man(const CLI::App& app, const std::string& version, const std::string& footer,
            std::ostream& out);
// The commit the program was built from ("f10f76e", "f10f76e-dirty"; "unknown" outside git).
const char* build_commit();

}  // namespace trainledger::cli
