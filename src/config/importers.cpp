// Training configs people already have → plan keys (docs/config.md#importing-training-configs):
// a DeepSpeed JSON, a Megatron-LM launch script or argument list, a torchtitan TOML, a verl
// launch script (its Hydra overrides). Every value
// keeps its origin in the file (a JSON pointer, file:line); settings that do not change memory
// or time, or that the planner does not model, are listed as ignored.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "files.hpp"
#include "import_sink.hpp"
#include "resolve.hpp"

namespace trainledger::config {

using importing::Sink;

const std::vector<std::string>& import_kinds() {
  static const std::vector<std::string> k = {"deepspeed", "megatron", "torchtitan", "verl",
                                             "nemo_rl",   "openrlhf", "trl"};
  return k;
}

namespace {

SettingMap import_with(const std::string& kind, const std::string& text_in, const std::string& path,
                       const Origin& asked_at, std::vector<Diagnostic>& errors,
                       std::vector<std::string>& warnings,
                       const importing::DefaultsReader& read_defaults,
                       std::vector<std::string>* ignored = nullptr);

}  // namespace

SettingMap read_import(const std::string& kind, const std::string& path, const Origin& asked_at,
                       std::vector<Diagnostic>& errors, std::vector<std::string>& warnings,
                       const std::string& root, std::vector<std::string>* ignored) {
  std::string why;
  const std::optional<std::string> text = read_file_inside(path, root, k_max_hf_config_bytes, why);
  if (!text) {
    errors.push_back(Diagnostic{asked_at, fmt::format("import.{}: cannot read {}: {}", kind,
                                                      importing::in_quotes(path), why)});
    return {};
  }
  // A NeMo-RL recipe's parents: relative to the file that names them, inside the same root
  // (the plan's folder; for --from, the recipe's own folder).
  const std::filesystem::path inside =
      root.empty() ? std::filesystem::path(path).parent_path() : std::filesystem::path(root);
  const importing::DefaultsReader reader = [&](const std::string& from, const std::string& rel,
                                               std::string& resolved, std::string& why_not) {
    const std::filesystem::path next =
        (std::filesystem::path(from).parent_path() / rel).lexically_normal();
    resolved = next.string();
    return read_file_inside(next, inside.empty() ? std::filesystem::path(".") : inside,
                            k_max_hf_config_bytes, why_not);
  };
  return import_with(kind, *text, path, asked_at, errors, warnings, reader, ignored);
}

SettingMap import_text(const std::string& kind, const std::string& text_in, const std::string& path,
                       const Origin& asked_at, std::vector<Diagnostic>& errors,
                       std::vector<std::string>& warnings) {
  const importing::DefaultsReader none = [](const std::string&, const std::string&, std::string&,
                                            std::string& why) -> std::optional<std::string> {
    why = "only an imported file's own text is read here";
    return std::nullopt;
  };
  return import_with(kind, text_in, path, asked_at, errors, warnings, none);
}

namespace {

SettingMap import_with(const std::string& kind, const std::string& text_in, const std::string& path,
                       const Origin& asked_at, std::vector<Diagnostic>& errors,
                       std::vector<std::string>& warnings,
                       const importing::DefaultsReader& read_defaults,
                       std::vector<std::string>* ignored) {
  SettingMap out;
  const std::optional<std::string> text = text_in;
  Sink sink(path, out, errors);
  const std::size_t before = errors.size();
  try {
    if (kind == "deepspeed") {
      const Value doc = parse_json(*text, path);
      if (doc.type != Value::Type::table)
        errors.push_back(Diagnostic{asked_at, "import.deepspeed: expected a JSON object"});
      else
        importing::import_deepspeed(doc, sink);
    } else if (kind == "megatron") {
      importing::import_megatron(*text, sink);
    } else if (kind == "torchtitan") {
      importing::import_torchtitan(parse_toml(*text, path, "import"), sink);
    } else if (kind == "verl") {
      importing::import_verl(*text, sink);
    } else if (kind == "openrlhf") {
      importing::import_openrlhf(*text, sink);
    } else if (kind == "trl") {
      importing::import_trl(*text, sink, read_defaults);
    } else if (kind == "nemo_rl") {
#ifdef TRAINLEDGER_HAVE_YAML
      importing::import_nemo_rl(*text, sink, read_defaults);
#else
      (void)read_defaults;
      errors.push_back(Diagnostic{asked_at,
                                  "import.nemo_rl: this build reads no YAML: install "
                                  "libyaml-cpp-dev and build again"});
#endif
    } else {
      errors.push_back(Diagnostic{
          asked_at, fmt::format("unknown import kind \"{}\" (deepspeed, megatron, torchtitan, "
                                "verl, nemo_rl, openrlhf, trl)",
                                kind)});
    }
  } catch (const ConfigError& e) {
    for (const Diagnostic& d : e.diagnostics()) errors.push_back(d);
  }
  if (errors.size() > before) return {};
  if (!sink.ignored().empty())
    warnings.push_back(
        fmt::format("{}: ignored (not modelled, or no effect on memory and time): {}", path,
                    fmt::join(sink.ignored(), "; ")));
  if (ignored)
    for (const std::string& item : sink.ignored()) ignored->push_back(path + ": " + item);
  return out;
}

}  // namespace

}  // namespace trainledger::config
