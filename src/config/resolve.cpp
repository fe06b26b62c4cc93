#include "resolve.hpp"

#include "files.hpp"
#include "trainledger/calibrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

namespace trainledger::config {

namespace {

const std::vector<std::string> k_meta_keys = {"source", "published_params", "hf_id", "summary"};

bool is_meta(const std::string& key) {
  for (const std::string& m : k_meta_keys)
    if (m == key) return true;
  return false;
}

std::vector<std::string> names_in(std::string_view section) {
  std::vector<std::string> out;
  for (const KeySpec& k : key_table())
    if (k.section == section) out.emplace_back(k.name);
  return out;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  if (auto best = closest(word, candidates)) return fmt::format(" (did you mean \"{}\"?)", *best);
  return "";
}

void read_key(const std::string& section, const std::string& name, const Value& v,
              const Origin& key_origin, SettingMap& out, std::vector<Diagnostic>& errors) {
  const KeySpec* spec = find_key(section, name);
  if (!spec) {
    errors.push_back(Diagnostic{key_origin, fmt::format("unknown key {}.{}{}", section, name,
                                                        did_you_mean(name, names_in(section)))});
    return;
  }
  if (auto s = to_setting(*spec, v, errors)) out[spec->full_name()] = *s;
}

void read_sections(const Value& doc, SettingMap& out, std::map<std::string, Origin>& sections,
                   std::vector<Diagnostic>& errors) {
  std::vector<std::string> known(section_names().begin(), section_names().end());
  for (std::size_t i = 0; i < doc.fields.size(); ++i) {
    const auto& [section, table] = doc.fields[i];
    const Origin& where = doc.key_origins[i];
    bool is_section = false;
    for (const std::string& k : known) is_section = is_section || k == section;
    if (!is_section) {
      // A plain key is not a mistyped section: it gets no section's name as a hint.
      std::string hint = did_you_mean(section, known);
      if (table.type != Value::Type::table) {
        errors.push_back(Diagnostic{
            where, fmt::format("key \"{}\" is outside a section; keys belong under [model], "
                               "[training], [parallel], [cluster], [checkpoint] or [rl]",
                               section)});
      } else {
        errors.push_back(Diagnostic{where, fmt::format("unknown section [{}]{}", section, hint)});
      }
      continue;
    }
    if (table.type != Value::Type::table) {
      errors.push_back(Diagnostic{where, fmt::format("{} must be a section ([{}]), got {}", section,
                                                     section, table.type_name())});
      continue;
    }
    sections[section] = where;
    for (std::size_t j = 0; j < table.fields.size(); ++j)
      read_key(section, table.fields[j].first, table.fields[j].second, table.key_origins[j], out,
               errors);
  }
}

void apply_set(const std::string& arg, SettingMap& out, std::vector<Diagnostic>& errors) {
  if (arg.find_first_of("\r\n") != std::string::npos) {
    // One key per --set: a value spanning lines would hide what follows its first line.
    const std::string first = arg.substr(0, arg.find_first_of("\r\n"));
    errors.push_back(
        Diagnostic{Origin{"--set " + first + "…", 0, 0, "--set"},
                   "the value spans more than one line; give one key=value per --set"});
    return;
  }
  const Origin origin{"--set " + arg, 0, 0, "--set"};
  const std::size_t eq = arg.find('=');
  const std::size_t dot = arg.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
    errors.push_back(Diagnostic{origin, "expected section.key=value, e.g. --set parallel.tp=8"});
    return;
  }
  const std::string section = arg.substr(0, dot);
  const std::string name = arg.substr(dot + 1, eq - dot - 1);
  const std::string text = arg.substr(eq + 1);
  std::vector<std::string> known(section_names().begin(), section_names().end());
  bool is_section = false;
  for (const std::string& k : known) is_section = is_section || k == section;
  if (!is_section) {
    errors.push_back(Diagnostic{
        origin, fmt::format("unknown section \"{}\"{}", section, did_you_mean(section, known))});
    return;
  }
  // The value is TOML (8, true, "x", [1, 2]); anything TOML cannot read is taken as a string,
  // so `--set cluster.gpu=h100-sxm5-80gb` and `--set cluster.gpu_memory=80 GiB` work.
  Value v;
  try {
    Value doc = parse_toml("v = " + text, "--set", "--set");
    v = doc.fields.at(0).second;
  } catch (const ConfigError&) {
    v.type = Value::Type::string;
    v.string = text;
  }
  v.origin = origin;
  read_key(section, name, v, origin, out, errors);
}

void overlay(SettingMap& base, const SettingMap& top) {
  for (const auto& [k, s] : top) base[k] = s;
}

std::string preset_path(const std::string& folder, const std::string& name) {
  return "configs/" + folder + "/" + name + ".toml";
}

std::string stem_of(const std::string& path) { return std::filesystem::path(path).stem().string(); }

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The preset a name means: its file name in any case ("Llama-3.1-8B"), a model's Hugging Face
// repository id ("meta-llama/Llama-3.1-8B") or a GPU's name as nvidia-smi prints it ("NVIDIA
// H100 80GB HBM3"). Empty when none matches exactly.
std::string canonical_preset(const std::string& name, const std::string& folder) {
  if (embedded_file(preset_path(folder, name))) return name;
  const std::string wanted = lower(name);
  for (const std::string& p : embedded_files_under("configs/" + folder + "/")) {
    const std::string stem = stem_of(p);
    if (lower(stem) == wanted) return stem;
    std::map<std::string, Value> meta;
    std::vector<Diagnostic> ignored;
    const SettingMap settings =
        read_preset(p, folder == "models" ? "model" : "cluster", &meta, ignored);
    auto hf = meta.find("hf_id");
    if (hf != meta.end() && hf->second.type == Value::Type::string &&
        lower(hf->second.string) == wanted)
      return stem;
    auto gpu_name = settings.find("cluster.gpu_name");
    if (gpu_name != settings.end()) {
      const auto* text = std::get_if<std::string>(&gpu_name->second.value);
      if (text && lower(*text) == wanted) return stem;
    }
  }
  return "";
}

SettingMap load_named_preset(const Setting& asked, const std::string& folder,
                             const std::string& section, std::vector<Diagnostic>& errors) {
  const std::string given = std::get<std::string>(asked.value);
  const std::string found = canonical_preset(given, folder);
  const std::string name = found.empty() ? given : found;
  const std::string path = preset_path(folder, name);
  if (!embedded_file(path)) {
    std::vector<std::string> names;
    for (const std::string& p : embedded_files_under("configs/" + folder + "/"))
      names.push_back(stem_of(p));
    const std::string lister = folder == "models" ? "trainledger models" : "trainledger gpus";
    std::string hint = did_you_mean(name, names);
    if (hint.empty()) {
      std::string near;
      for (const std::string& n : names)
        if (fold(n).find(fold(name)) != std::string::npos)
          near += (near.empty() ? "\"" : "\", \"") + n;
      if (!near.empty()) hint = " (did you mean one of " + near + "\"?)";
    }
    errors.push_back(
        Diagnostic{asked.origin, fmt::format("{}: unknown preset \"{}\"{}; `{}` lists them",
                                             asked.spec->full_name(), name, hint, lister)});
    return {};
  }
  return read_preset(path, section, nullptr, errors);
}

}  // namespace

SettingMap read_preset(const std::string& path, const std::string& section,
                       std::map<std::string, Value>* meta, std::vector<Diagnostic>& errors) {
  SettingMap out;
  const std::string* text = embedded_file(path);
  if (!text) return out;
  Value doc = parse_toml(*text, path, "preset");
  for (std::size_t i = 0; i < doc.fields.size(); ++i) {
    const auto& [key, value] = doc.fields[i];
    if (is_meta(key)) {
      if (meta) (*meta)[key] = value;
      continue;
    }
    if (key == "preset" || key == "hf_config" || key == "gpu") {
      errors.push_back(Diagnostic{doc.key_origins[i], "a preset cannot name another preset"});
      continue;
    }
    read_key(section, key, value, doc.key_origins[i], out, errors);
  }
  return out;
}

SettingMap read_calibration(const Value& doc, std::string& gpu_name,
                            std::vector<Diagnostic>& errors) {
  SettingMap out;
  const auto& measurable = calibrate::measurable_keys();
  for (std::size_t i = 0; i < doc.fields.size(); ++i) {
    const auto& [section, table] = doc.fields[i];
    if (section == "profile" && table.type == Value::Type::table) {
      for (std::size_t j = 0; j < table.fields.size(); ++j) {
        const Field& f = table.fields[j];
        if (f.first == "gpu_name" && f.second.type == Value::Type::string)
          gpu_name = f.second.string;
        // A profile of another format (a newer trainledger's) is not read as this one.
        if (f.first == "format" &&
            !(f.second.type == Value::Type::integer && f.second.integer == 1))
          errors.push_back(Diagnostic{
              table.key_origins[j],
              fmt::format("profile.format = {}: this trainledger reads calibration profiles of "
                          "format 1",
                          f.second.to_text())});
      }
      continue;
    }
    if (section != "cluster") continue;  // [[fit]], [[sweep]]: the record, not plan keys
    if (table.type != Value::Type::table) {
      errors.push_back(Diagnostic{doc.key_origins[i], "[cluster] must be a table"});
      continue;
    }
    for (std::size_t j = 0; j < table.fields.size(); ++j) {
      const std::string& key = table.fields[j].first;
      if (std::find(measurable.begin(), measurable.end(), key) == measurable.end()) {
        errors.push_back(Diagnostic{
            table.key_origins[j],
            fmt::format("cluster.{} is not a measured key a calibration profile may set ({})", key,
                        fmt::join(measurable, ", "))});
        continue;
      }
      read_key("cluster", key, table.fields[j].second, table.key_origins[j], out, errors);
    }
  }
  return out;
}

namespace {

// A path a plan names (hf_config, an import): relative to the plan's folder, and inside it —
// plans come from pull requests. nullopt (and a located error) when it leaves the folder.
std::optional<std::filesystem::path> plan_relative(const Setting& s, const std::string& base_dir,
                                                   const std::string& what,
                                                   std::vector<Diagnostic>& errors) {
  const std::string& given = std::get<std::string>(s.value);
  std::filesystem::path p(given);
  if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
  const std::filesystem::path root =
      base_dir.empty() ? std::filesystem::path(".") : std::filesystem::path(base_dir);
  if (inside_folder(p, root)) return p;
  errors.push_back(Diagnostic{
      s.origin, fmt::format("{}: \"{}\" is outside the plan's folder; {} is read only from the "
                            "plan's folder or below it",
                            s.spec->full_name(), given, what)});
  return std::nullopt;
}

// The folder a plan's paths must stay in: the plan's own folder ("." for stdin and --set).
std::string plan_root(const std::string& base_dir) { return base_dir.empty() ? "." : base_dir; }

}  // namespace

Resolution resolve(const Value* doc, const std::string& plan_name, const std::string& base_dir,
                   const std::vector<std::string>& sets, std::vector<Diagnostic>& errors,
                   const SettingMap* calibration,
                   const std::vector<std::pair<std::string, std::string>>& cli_imports) {
  Resolution r;
  r.plan_origin = Origin{plan_name, 1, 1, "file"};
  SettingMap stated;
  if (doc) read_sections(*doc, stated, r.sections, errors);
  for (const std::string& s : sets) apply_set(s, stated, errors);

  // Imported training configs: from the plan ([import], inside its folder like hf_config) and
  // the command line (--from). The plan's own keys win over them.
  SettingMap imported;
  for (const std::string& kind : import_kinds()) {
    const auto it = stated.find("import." + kind);
    if (it == stated.end()) continue;
    const auto p = plan_relative(it->second, base_dir, "an imported config", errors);
    if (!p) continue;
    overlay(imported, read_import(kind, p->lexically_normal().string(), it->second.origin, errors,
                                  r.warnings, plan_root(base_dir), &r.import_ignored));
  }
  for (const auto& [kind, path] : cli_imports)
    overlay(imported, read_import(kind, path, Origin{"--from", 0, 0, "option"}, errors, r.warnings,
                                  "", &r.import_ignored));
  // The model and GPU selectors may come from an import (torchtitan's model flavor).
  SettingMap explicit_settings = imported;
  overlay(explicit_settings, stated);

  SettingMap preset;
  auto model_preset = explicit_settings.find("model.preset");
  auto hf = explicit_settings.find("model.hf_config");
  if (model_preset != explicit_settings.end() && hf != explicit_settings.end()) {
    errors.push_back(
        Diagnostic{hf->second.origin, "model: give model.preset or model.hf_config, not both"});
  } else if (model_preset != explicit_settings.end()) {
    overlay(preset, load_named_preset(model_preset->second, "models", "model", errors));
  } else if (hf != explicit_settings.end()) {
    if (auto found = plan_relative(hf->second, base_dir, "a config.json", errors)) {
      std::filesystem::path& p = *found;
      // A Hugging Face snapshot directory: its config.json. The snapshot's files are links into
      // ../../blobs/: followed only while they stay inside the plan's folder (checked on the
      // file actually opened).
      std::error_code ec;
      if (std::filesystem::is_directory(std::filesystem::status(p, ec))) p /= "config.json";
      const std::size_t before = errors.size();
      const auto arch = explicit_settings.find("model.hf_arch");
      const std::string read_as =
          arch == explicit_settings.end() ? "" : std::get<std::string>(arch->second.value);
      overlay(preset, read_hf_config(p.lexically_normal().string(), hf->second.origin, errors,
                                     r.warnings, r.guesses, read_as, plan_root(base_dir)));
      // An error inside the config.json also names the plan line that asked for it.
      for (std::size_t i = before; i < errors.size(); ++i)
        if (errors[i].origin.what == "hf_config")
          errors[i].message +=
              " (read for model.hf_config at " + hf->second.origin.to_string() + ")";
    }
  }
  if (const auto arch = explicit_settings.find("model.hf_arch");
      arch != explicit_settings.end() && hf == explicit_settings.end())
    errors.push_back(Diagnostic{arch->second.origin,
                                "model.hf_arch says how to read model.hf_config: give that too"});
  auto gpu = explicit_settings.find("cluster.gpu");
  if (gpu != explicit_settings.end())
    overlay(preset, load_named_preset(gpu->second, "gpus", "cluster", errors));

  for (const KeySpec& k : key_table())
    if (auto d = default_setting(k)) r.settings[k.full_name()] = *d;
  overlay(r.settings, preset);
  overlay(r.settings, explicit_settings);
  if (calibration) {
    // Measured values replace the plan's and the presets' assumptions; --set still wins.
    overlay(r.settings, *calibration);
    SettingMap only_sets;
    std::vector<Diagnostic> again;  // already reported above
    for (const std::string& s : sets) apply_set(s, only_sets, again);
    overlay(r.settings, only_sets);
  }
  return r;
}

}  // namespace trainledger::config
