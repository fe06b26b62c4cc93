// Training configs people already have → plan keys (docs/config.md#importing-training-configs):
// a DeepSpeed JSON, a Megatron-LM launch script or argument list, a torchtitan TOML, a verl
// launch script (its Hydra overrides). Every value
// keeps its origin in the file (a JSON pointer, file:line); settings that do not change memory
// or time, or that the planner does not model, are listed as ignored.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "files.hpp"
#include "import_sink.hpp"
#include "resolve.hpp"

namespace trainledger::config {

using importing::Sink;

const std::vector<std::string>& import_kinds() {
  static const std::vector<std::string> k = {"deepspeed", "megatron", "torchtitan", "verl"};
  return k;
}

SettingMap read_import(const std::string& kind, const std::string& path, const Origin& asked_at,
                       std::vector<Diagnostic>& errors, std::vector<std::string>& warnings,
                       const std::string& root) {
  std::string why;
  const std::optional<std::string> text = read_file_inside(path, root, k_max_hf_config_bytes, why);
  if (!text) {
    errors.push_back(
        Diagnostic{asked_at, fmt::format("import.{}: cannot read \"{}\": {}", kind, path, why)});
    return {};
  }
  return import_text(kind, *text, path, asked_at, errors, warnings);
}

SettingMap import_text(const std::string& kind, const std::string& text_in, const std::string& path,
                       const Origin& asked_at, std::vector<Diagnostic>& errors,
                       std::vector<std::string>& warnings) {
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
    } else {
      errors.push_back(Diagnostic{
          asked_at,
          fmt::format("unknown import kind \"{}\" (deepspeed, megatron, torchtitan, verl)", kind)});
    }
  } catch (const ConfigError& e) {
    for (const Diagnostic& d : e.diagnostics()) errors.push_back(d);
  }
  if (errors.size() > before) return {};
  if (!sink.ignored().empty())
    warnings.push_back(
        fmt::format("{}: ignored (not modelled, or no effect on memory and time): {}", path,
                    fmt::join(sink.ignored(), "; ")));
  return out;
}

}  // namespace trainledger::config
