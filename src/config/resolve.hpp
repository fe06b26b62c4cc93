// Layering of settings: built-in defaults < preset (or config.json) < plan file < --set.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "setting.hpp"

namespace trainledger::config {

using SettingMap = std::map<std::string, Setting>;  // "section.key" → setting

struct Resolution {
  SettingMap settings;                     // the winning value of every key that has one
  std::map<std::string, Origin> sections;  // where each [section] header is
  Origin plan_origin;                      // the plan as a whole (file:1:1)
  std::vector<std::string> warnings;
  // Each item an import ignored or could not give, as "path: item (why)" (also in `warnings`,
  // one line per import): an error about a key one names carries it.
  std::vector<std::string> import_ignored;
  // What the plan's numbers rest on that its inputs do not state (a guessed architecture):
  // also in `warnings`; `check --strict` fails on them.
  std::vector<std::string> guesses;
  // Why training.framework was inferred (free_layout infers it before dropping the layout).
  std::string framework_basis;
};

// Text of an embedded file ("configs/models/llama-2-7b.toml"), or nullptr.
const std::string* embedded_file(const std::string& path);
// Paths of embedded files under a folder ("configs/models/").
std::vector<std::string> embedded_files_under(const std::string& folder);

// Reads one preset file into settings of `section`; metadata keys (source, published_params,
// hf_id, summary) go to `meta`.
SettingMap read_preset(const std::string& path, const std::string& section,
                       std::map<std::string, Value>* meta, std::vector<Diagnostic>& errors);

// Model settings from a Hugging Face config.json. An unlisted model_type is an error unless
// `read_as` (model.hf_arch) names the architecture to read it as: a guess, whose warning goes to
// `warnings` and `guesses`. The file actually opened must lie inside `root` (the plan's
// folder; empty: the folder `path` is in), symbolic links resolved.
SettingMap read_hf_config(const std::string& path, const Origin& asked_at,
                          std::vector<Diagnostic>& errors, std::vector<std::string>& warnings,
                          std::vector<std::string>& guesses, const std::string& read_as = "",
                          const std::string& root = "");
// The config.json model_type values the planner reads.
const std::vector<std::string>& hf_model_types();

// The measured plan keys of a calibration profile's [cluster] table (origin "calibration");
// its [profile] gpu_name in `gpu_name`. Keys a profile may not set are errors.
SettingMap read_calibration(const Value& doc, std::string& gpu_name,
                            std::vector<Diagnostic>& errors);

// Resolves a parsed plan document (`doc` may be null: --set only), a calibration profile's
// settings (over the plan's and the presets'), and the --set overrides (over everything).
// Imported training configs (import.* keys, --from) apply over the presets and under the plan.
Resolution resolve(const Value* doc, const std::string& plan_name, const std::string& base_dir,
                   const std::vector<std::string>& sets, std::vector<Diagnostic>& errors,
                   const SettingMap* calibration = nullptr,
                   const std::vector<std::pair<std::string, std::string>>& cli_imports = {});

// A training config → plan keys (origin "import"); what it ignores goes to `warnings` (one
// line) and, item by item, to `ignored` when given. The file actually opened must lie inside
// `root` (empty: the folder `path` is in).
SettingMap read_import(const std::string& kind, const std::string& path, const Origin& asked_at,
                       std::vector<Diagnostic>& errors, std::vector<std::string>& warnings,
                       const std::string& root = "", std::vector<std::string>* ignored = nullptr);
// The same, from the file's text (`path` names it in origins).
SettingMap import_text(const std::string& kind, const std::string& text, const std::string& path,
                       const Origin& asked_at, std::vector<Diagnostic>& errors,
                       std::vector<std::string>& warnings);
const std::vector<std::string>& import_kinds();

}  // namespace trainledger::config
