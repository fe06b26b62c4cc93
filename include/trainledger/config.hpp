// Loading plans: TOML plan files, presets, Hugging Face config.json, --set overrides.
#pragma once

#include <iosfwd>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "trainledger/plan.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger::config {

// Where a resolved value came from.
struct Origin {
  std::string file;  // plan file, preset file ("configs/models/x.toml"), config.json, or empty
  int line = 0;
  int column = 0;
  std::string what;  // "file", "preset", "hf_config", "--set", "default", "derived"
  // "plan.toml:12:7", "configs/models/llama-2-7b.toml:4:1", "--set", "default", ...
  std::string to_string() const;
};

struct Diagnostic {
  Origin origin;
  std::string message;
  // "trainledger: error: plan.toml:12:7: parallel.tp (6) must divide model.heads (64)"
  std::string to_string() const;
};

// Thrown for invalid input; carries every error found in the input, in file order.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return m_diagnostics; }

 private:
  std::vector<Diagnostic> m_diagnostics;
};

// A resolved setting as reports show it: its value as text (TOML syntax) and in base units.
struct ResolvedValue {
  std::string key;      // "model.layers"
  std::string display;  // as written or defaulted: "80 GiB", "80", "\"swiglu\""
  Origin origin;
};

struct LoadedPlan {
  PlanInput input;
  std::string source;                      // the plan file, or "(default plan)"
  std::vector<ResolvedValue> resolved;     // every key with a value, in table order
  std::vector<std::string> warnings;       // e.g. a derived count that differs from a published one
  std::vector<std::string> guesses;        // of the warnings, what the inputs do not state
  std::string calibration;                 // the profiles applied, if any ("a.toml, b.toml")
  std::vector<std::string> measured;       // keys they set (section.key)
  std::vector<std::string> measured_from;  // per measured key, the profile that set it
  std::vector<std::string> assumed;        // measurable keys still assumed (default or preset)
  // Where the inputs came from, as the reports show it.
  PlanSource plan_source() const;
};

struct LoadOptions {
  std::vector<std::string> sets;  // "section.key=value"
  // Calibration profiles (TOML) whose measured values apply, in order: a later profile's keys
  // win over an earlier one's.
  std::vector<std::string> calibration;
  // --from KIND FILE: training configs to import (deepspeed, megatron, torchtitan), read from
  // the command line's paths.
  std::vector<std::pair<std::string, std::string>> imports = {};
  // The caller varies the layout (search): the plan's layout keys are not validated but
  // dropped (tp = pp = cp = ep = 1, dp the world); the stack is inferred from the plan as given.
  bool free_layout = false;
};

// Loads a plan file from disk. Throws ConfigError on any invalid input.
LoadedPlan load_plan_file(const std::string& path, const LoadOptions& options);
// Loads a plan from a stream (`plan -` reads stdin), named "(stdin)"; relative paths resolve
// against the current directory.
LoadedPlan load_plan_stream(std::istream& in, const LoadOptions& options);
// Loads a plan from text, naming it `name` in messages; relative paths resolve against `base_dir`.
LoadedPlan load_plan_text(const std::string& text, const std::string& name,
                          const std::string& base_dir, const LoadOptions& options);
// The embedded default plan (configs/plans/default.toml).
LoadedPlan load_default_plan(const LoadOptions& options);

// Presets compiled into the binary.
struct PresetInfo {
  std::string name;     // "llama-2-7b"
  std::string path;     // "configs/models/llama-2-7b.toml"
  std::string summary;  // a line for `trainledger models` / `gpus`
  std::string source;
  double published_params = 0;  // models: the exact published count, when one exists
};
std::vector<PresetInfo> model_presets();
std::vector<PresetInfo> gpu_presets();
// The PlanInput model of a preset, or throws ConfigError.
ModelSpec load_model_preset(const std::string& name);
GpuSpec load_gpu_preset(const std::string& name);

// Parses a command-line size ("80 GiB") or share ("10%", "0.1"); throws ConfigError naming
// `option` when the text is not one.
double parse_size_option(const std::string& option, const std::string& text);
double parse_share_option(const std::string& option, const std::string& text);
// --confidence: "90%" or 0.9 (from 50 % to below 100 %), or "off" (0: the estimate alone).
double parse_confidence_option(const std::string& text);
// A command-line duration ("2 s", "500 ms"), positive.
double parse_duration_option(const std::string& option, const std::string& text);
double parse_bandwidth_option(const std::string& option, const std::string& text);

// The largest value a numeric key accepts ("training.seq_len" → 1e9); 0 when unbounded or
// unknown.
double key_max(const std::string& full_name);

// The key table as Markdown (docs/config.md is generated from it).
std::string keys_markdown();

// The plan key a message is about: its first word of the form section.name ("unknown key
// model.layerz (did you mean ...)" → "model.layerz", "parallel.tp (6) must divide ..." →
// "parallel.tp"), whether or not the name is a key; the section when the message is about the
// section ("parallel: tp × pp × cp = 3 ..." → "parallel"); empty when it names none.
std::string key_in_message(std::string_view message);

}  // namespace trainledger::config
