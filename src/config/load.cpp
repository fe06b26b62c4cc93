// Public entry points of the config layer: plan files, the default plan, presets.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <istream>

#include <fmt/format.h>

#include "build.hpp"
#include "files.hpp"
#include "quantity.hpp"
#include "resolve.hpp"
#include "trainledger/calibrate.hpp"
#include "trainledger/config.hpp"
#include "trainledger/text.hpp"

namespace trainledger::config {

namespace {

void throw_if(std::vector<Diagnostic>& errors) {
  if (errors.empty()) return;
  std::stable_sort(errors.begin(), errors.end(), [](const Diagnostic& a, const Diagnostic& b) {
    const bool la = a.origin.line > 0, lb = b.origin.line > 0;
    if (la != lb) return la;
    if (!la) return false;
    if (a.origin.file != b.origin.file) return false;
    if (a.origin.line != b.origin.line) return a.origin.line < b.origin.line;
    return a.origin.column < b.origin.column;
  });
  throw ConfigError(errors);
}

Source source_of(const Origin& o) {
  if (o.what == "file") return Source::file;
  if (o.what == "preset") return Source::preset;
  if (o.what == "hf_config") return Source::hf_config;
  if (o.what == "import") return Source::imported;
  if (o.what == "--set") return Source::set;
  if (o.what == "derived") return Source::derived;
  if (o.what == "calibration") return Source::calibration;
  return Source::default_value;
}

// Warnings list what an import ignored, and values may be long lists: kept whole up to this
// many characters (the importers bound their lists).
constexpr std::size_t k_long_text = 16384;

bool mentions(const std::string& message, const std::string& word);

// The plan keys a message names ("rl.placement = \"split\" needs rl.rollout_gpus" names
// rl.placement and rl.rollout_gpus).
std::vector<std::string> plan_keys_in(const std::string& message) {
  std::vector<std::string> out;
  const auto word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  };
  for (std::size_t i = 0; i < message.size();) {
    if (!word(message[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < message.size() && word(message[j])) ++j;
    std::string w = message.substr(i, j - i);
    while (!w.empty() && w.back() == '.') w.pop_back();  // the end of a sentence
    const auto dot = w.find('.');
    if (dot != std::string::npos && find_key(std::string_view(w).substr(0, dot),
                                             std::string_view(w).substr(dot + 1)) != nullptr)
      out.push_back(w);
    i = j;
  }
  return out;
}

// An error about a key that an import said it could not give ("rl.prompts: give the prompts
// per step" after a TRL command without its process count) gets the import's reason: the
// warnings that say it are not printed when the plan fails.
void add_import_reasons(std::vector<Diagnostic>& errors, const std::vector<std::string>& ignored) {
  for (Diagnostic& d : errors) {
    std::vector<const std::string*> added;
    for (const std::string& key : plan_keys_in(d.message))
      for (const std::string& item : ignored)
        if (mentions(item, key) && std::find(added.begin(), added.end(), &item) == added.end()) {
          d.message += "; " + item;
          added.push_back(&item);
        }
  }
}

LoadedPlan finish(Resolution& r, const std::string& source) {
  std::vector<Diagnostic> errors;
  LoadedPlan out;
  build_input(r, out.input, errors);
  add_import_reasons(errors, r.import_ignored);
  throw_if(errors);
  // Where foreign text enters the reports: the plan's name (a file name from a pull request),
  // the names a plan or config.json gives, the values as written, the origins and the
  // warnings (ignored keys) are made printable here, once: valid UTF-8 without control
  // characters. Each report then escapes them for its own syntax (XML, Markdown, TOML, shell).
  out.source = text::printable(source);
  out.input.model.name = text::printable(out.input.model.name);
  out.input.cluster.gpu.name = text::printable(out.input.cluster.gpu.name);
  for (const KeySpec& k : key_table()) {
    auto it = r.settings.find(k.full_name());
    if (it == r.settings.end()) continue;
    Origin origin = it->second.origin;
    origin.file = text::printable(origin.file);
    out.resolved.push_back(
        ResolvedValue{k.full_name(), text::printable(it->second.display, k_long_text), origin});
    out.input.provenance.set(k.full_name(), source_of(it->second.origin));
  }
  for (const std::string& w : r.warnings) out.warnings.push_back(text::printable(w, k_long_text));
  for (const std::string& g : r.guesses) out.guesses.push_back(text::printable(g, k_long_text));
  return out;
}

// The key a value error is about ("training.seq_len: expected ...") or the key a misspelt one
// was probably meant to be ("unknown key model.layerz (did you mean \"layers\"?)").
std::vector<std::string> keys_named(const Diagnostic& d) {
  std::vector<std::string> out;
  const std::string& m = d.message;
  const auto colon = m.find(':');
  if (colon != std::string::npos && m.find('.') < colon && m.find(' ') > colon) {
    const std::string key = m.substr(0, colon);
    out.push_back(key.substr(key.find('.') + 1));
  }
  const auto hint = m.find("did you mean \"");
  if (hint != std::string::npos) {
    const auto start = hint + 14;
    const auto end = m.find('"', start);
    if (end != std::string::npos) out.push_back(m.substr(start, end - start));
  }
  return out;
}

bool mentions(const std::string& message, const std::string& word) {
  for (auto at = message.find(word); at != std::string::npos; at = message.find(word, at + 1)) {
    const auto is_word = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    };
    const bool left = at == 0 || !is_word(message[at - 1]);
    const bool right = at + word.size() >= message.size() || !is_word(message[at + word.size()]);
    if (left && right) return true;
  }
  return false;
}

LoadedPlan load(const std::string& text, const std::string& name, const std::string& base_dir,
                const LoadOptions& options) {
  std::vector<Diagnostic> errors;
  Value doc = parse_toml(text, name, "file");
  // The calibration profiles, in order: a later profile's keys win over an earlier one's.
  SettingMap measured;
  std::vector<std::string> profile_gpus;  // each profile's GPU name ("" when its logs name none)
  for (const std::string& path : options.calibration) {
    std::string why;
    const auto bytes = read_regular_file(path, k_max_profile_bytes, why);
    if (!bytes)
      throw ConfigError({Diagnostic{Origin{path, 0, 0, "calibration"},
                                    "cannot read the calibration profile: " + why}});
    const Value profile = parse_toml(*bytes, path, "calibration");
    std::string gpu;
    for (auto& [key, setting] : read_calibration(profile, gpu, errors))
      measured[key] = std::move(setting);
    profile_gpus.push_back(gpu);
  }
  Resolution r = resolve(&doc, name, base_dir, options.sets, errors,
                         options.calibration.empty() ? nullptr : &measured, options.imports);
  if (options.free_layout && errors.empty()) free_layout(r, errors);
  if (!errors.empty()) {
    // Report the rules between values too, in the same run, except those that follow from an
    // error already reported: a rule naming a key whose value was rejected (it fell back to
    // its default), or any rule when a preset or config.json could not be read.
    std::vector<std::string> failed;
    bool whole_section = false;
    for (const Diagnostic& d : errors) {
      for (const std::string& k : keys_named(d)) {
        failed.push_back(k);
        whole_section = whole_section || k == "preset" || k == "hf_config" || k == "gpu";
      }
      // An error in another file the plan reads (an import, a preset, a config.json): the
      // rules would only report what that file failed to give ("model: missing layers").
      const bool other_file = !d.origin.file.empty() && d.origin.file != name &&
                              d.origin.what != "--set" && d.origin.what != "option";
      whole_section = whole_section || other_file || d.origin.what == "preset" ||
                      d.origin.what == "hf_config" || d.message.rfind("model:", 0) == 0 ||
                      mentions(d.message, "preset") || mentions(d.message, "hf_config");
    }
    if (!whole_section) {
      std::vector<Diagnostic> rules;
      PlanInput scratch;
      build_input(r, scratch, rules);
      for (const Diagnostic& d : rules) {
        bool follows = false;
        for (const std::string& k : failed) follows = follows || mentions(d.message, k);
        if (!follows) errors.push_back(d);
      }
    }
    add_import_reasons(errors, r.import_ignored);
    throw_if(errors);
  }
  LoadedPlan out = finish(r, name);
  if (!options.calibration.empty()) {
    std::vector<std::string> names;
    for (const std::string& path : options.calibration) names.push_back(text::printable(path));
    out.calibration = fmt::format("{}", fmt::join(names, ", "));
    const std::string& plan_gpu = out.input.cluster.gpu.name;
    auto lower = [](std::string s) {
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    };
    for (std::size_t i = 0; i < options.calibration.size(); ++i) {
      const std::string& profile_gpu = profile_gpus[i];
      if (profile_gpu.empty()) {
        // Logs that list no devices: nothing says which GPUs the profile measured.
        out.warnings.push_back(fmt::format(
            "the calibration profile {} names no GPU (its logs list no devices), so it is applied "
            "to the plan's {} unchecked: import the logs with --gpu-name to record it",
            names[i], plan_gpu.empty() ? "GPUs" : text::printable(plan_gpu)));
        continue;
      }
      if (lower(profile_gpu) != lower(plan_gpu))
        throw ConfigError({Diagnostic{
            Origin{options.calibration[i], 0, 0, "calibration"},
            fmt::format("the profile was measured on \"{}\", the plan runs on \"{}\": a profile "
                        "applies only to the GPUs it measured",
                        text::printable(profile_gpu),
                        plan_gpu.empty() ? "a GPU without a name" : plan_gpu)}});
    }
    for (const std::string& k : calibrate::measurable_keys()) {
      const std::string key = "cluster." + k;
      const Source s = out.input.provenance.of(key);
      if (s == Source::calibration) {
        out.measured.push_back(key);
        // The profile that gave it (a later one wins), for the reports.
        const auto it = measured.find(key);
        out.measured_from.push_back(it == measured.end() ? std::string()
                                                         : text::printable(it->second.origin.file));
      } else if (s == Source::default_value || s == Source::preset) {
        out.assumed.push_back(key);
      }
    }
  }
  return out;
}

}  // namespace

PlanSource LoadedPlan::plan_source() const {
  PlanSource s;
  s.name = source;
  for (const ResolvedValue& r : resolved) s.origins.emplace_back(r.key, r.origin.to_string());
  s.warnings = warnings;
  s.calibration = calibration;
  s.measured = measured;
  s.measured_from = measured_from;
  s.assumed = assumed;
  return s;
}

namespace {

// A positive quantity of `kind` given to a command-line option, or a located error.
double parse_positive_option(const std::string& option, const std::string& text,
                             QuantityKind kind) {
  const QuantityResult q = parse_quantity(text, kind);
  if (!q.value || *q.value <= 0) {
    throw ConfigError(
        {Diagnostic{Origin{option, 0, 0, "option"}, q.value ? "must be positive" : q.error}});
  }
  return *q.value;
}

}  // namespace

double parse_size_option(const std::string& option, const std::string& text) {
  return parse_positive_option(option, text, QuantityKind::bytes);
}

double parse_bandwidth_option(const std::string& option, const std::string& text) {
  return parse_positive_option(option, text, QuantityKind::bandwidth);
}

double parse_duration_option(const std::string& option, const std::string& text) {
  return parse_positive_option(option, text, QuantityKind::duration);
}

double parse_share_option(const std::string& option, const std::string& text) {
  std::string number = text;
  double scale = 1;
  if (!number.empty() && number.back() == '%') {
    number.pop_back();
    scale = 0.01;
  }
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != number.size() || !(v * scale >= 0) || v * scale >= 1) {
    throw ConfigError({Diagnostic{Origin{option, 0, 0, "option"},
                                  "\"" + text + "\" is not a share such as 10% or 0.1"}});
  }
  return v * scale;
}

double parse_confidence_option(const std::string& text) {
  if (text == "off" || text == "none" || text == "0" || text == "0%") return 0;
  const double c = parse_share_option("--confidence", text);
  if (c < 0.5) {
    throw ConfigError({Diagnostic{Origin{"--confidence", 0, 0, "option"},
                                  "\"" + text +
                                      "\" is not a confidence from 50% to 99.9% (or off: the "
                                      "estimate alone)"}});
  }
  return c;
}

LoadedPlan load_plan_text(const std::string& text, const std::string& name,
                          const std::string& base_dir, const LoadOptions& options) {
  // As bounded as a file (the Python module's plans come as text).
  if (text.size() > k_max_plan_bytes)
    throw ConfigError({Diagnostic{
        Origin{name, 0, 0, "file"},
        fmt::format("cannot read the plan {}: larger than {} bytes", name, k_max_plan_bytes)}});
  return load(text, name, base_dir, options);
}

LoadedPlan load_plan_stream(std::istream& in, const LoadOptions& options) {
  // As bounded as a file: a plan larger than k_max_plan_bytes is refused, not read.
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > k_max_plan_bytes)
      throw ConfigError({Diagnostic{Origin{"(stdin)", 0, 0, "file"},
                                    fmt::format("cannot read the plan from stdin: larger than {} "
                                                "bytes",
                                                k_max_plan_bytes)}});
  }
  // Relative paths (hf_config) resolve against the current directory.
  return load(text, "(stdin)", ".", options);
}

LoadedPlan load_plan_file(const std::string& path, const LoadOptions& options) {
  std::string why;
  const std::optional<std::string> text = read_regular_file(path, k_max_plan_bytes, why);
  if (!text) {
    throw ConfigError(
        {Diagnostic{Origin{path, 0, 0, "file"}, "cannot read the plan file: " + why}});
  }
  const std::string base = std::filesystem::path(path).parent_path().string();
  return load(*text, path, base, options);
}

LoadedPlan load_default_plan(const LoadOptions& options) {
  const std::string path = "configs/plans/default.toml";
  const std::string* text = embedded_file(path);
  if (!text) throw ConfigError({Diagnostic{Origin{path, 0, 0, "preset"}, "not embedded"}});
  return load(*text, path, "", options);
}

}  // namespace trainledger::config
