// Helpers shared by the tests: plans from text, the invariant check, the CLI in-process.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainledger/config.hpp"
#include "trainledger/plan.hpp"

namespace trainledger::test {

// Loads a plan from TOML text (relative paths against tests/data/).
config::LoadedPlan load_text(const std::string& toml, const std::vector<std::string>& sets = {});

// Computes a plan and requires that it passes the invariant checker.
PlanResult plan_checked(const PlanInput& input);
PlanResult plan_text(const std::string& toml, const std::vector<std::string>& sets = {});

// The ConfigError messages of loading `toml` (empty when it loads).
std::vector<std::string> load_errors(const std::string& toml,
                                     const std::vector<std::string>& sets = {});

struct CliResult {
  int code = 0;
  std::string out;
  std::string err;
};
CliResult run_cli(const std::vector<std::string>& args);

// Value of a memory item on a stage at its peak phase (0 when the stage has no such item).
double item_value(const PlanResult& plan, const std::string& id, int stage = 0);
// Value of a memory item on a stage at a given phase.
double phase_value(const PlanResult& plan, const std::string& id, int stage, Phase phase);

// The persistent training state of a stage at its peak (weights, gradients, optimizer
// state, master copy and their variants), without activations and overheads.
double state_bytes(const PlanResult& plan, int stage = 0);

// What a reference case measured, from the plan: "device" (nvidia-smi: the peak total),
// "reserved" (less the CUDA context and NCCL) or "allocated" (less the fragmentation reserve
// too), on the stage the case names ("first", "last", else the worst).
double predicted_memory(const PlanResult& plan, const std::string& kind, const std::string& stage);
// Bytes per unit of a reference case ("GiB", "MiB", "MB", else GB).
double unit_bytes(const std::string& unit);

std::string source_path(const std::string& relative);

// `page` (HTML) as headless Chromium lays it out in a window `width` pixels wide: the DOM after
// its scripts ran (a probe script writes what it measured into an attribute). Nothing when
// Chromium is not installed (the caller skips with a reason).
std::optional<std::string> browser_dom(const std::string& name, const std::string& page,
                                       int width = 1100);
// A script for browser_dom's page: the texts drawn outside their SVG's box (transforms and
// scaling included) into body's data-overflow ("COUNT id: text / ..."), and the pairs of point
// tags and guide names (text.tag, text.guide) that cover each other into data-overlap.
std::string text_probe();
// The value of the first `attribute="..."` in `dom`, or nothing.
std::optional<std::string> attribute(const std::string& dom, const std::string& attribute);
std::string read_file(const std::string& path);
// Every `attr="value"` of the SVG marks of class `cls` in `svg`, in document order.
std::vector<std::map<std::string, std::string>> svg_marks(const std::string& svg,
                                                          const std::string& cls);

// The importer tests: a scratch folder under the temporary directory holding `files` (name,
// text; folders made as needed), the path of the first; where a loaded key came from; whether
// a warning names `what`; every located message of loading a plan file (empty when it loads).
std::string scratch_folder(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& files);
std::string origin_of(const config::LoadedPlan& p, const std::string& key);
bool warned(const config::LoadedPlan& p, const std::string& what);
std::string load_file_errors(const std::string& plan);
// Every RL phase's memory, every RL time item and the verdict's peak of two plans, equal.
void same_rl(const PlanResult& a, const PlanResult& b);

}  // namespace trainledger::test
