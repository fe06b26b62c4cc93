// Shared by the importers of training configs (docs/config.md#importing-training-configs): the
// sink that turns what a file says into plan settings with their origins, and small readers.
// The files come from pull requests (`trainledger check` as a CI gate): whatever of them a
// message or a warning quotes goes through shown(), never raw.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "resolve.hpp"
#include "trainledger/text.hpp"

namespace trainledger::config::importing {

// Text from an imported file as a message or a warning quotes it: text::printable (control
// characters and bytes that are not valid UTF-8 escaped as \xNN), at most `max` characters
// ("…" marks a cut).
inline std::string shown(std::string_view s, std::size_t max = 80) {
  // A character is at most 4 bytes: the prefix is enough, and a 4 MiB value costs no more.
  return text::printable(s.substr(0, 4 * max + 4), max);
}

// The same between double quotes: a string value of the file.
inline std::string in_quotes(std::string_view s) { return "\"" + shown(s) + "\""; }

// A whole decimal integer of 64 bits ("42", "-1"): nothing before or after it, no overflow.
inline std::optional<std::int64_t> parse_int(std::string_view s) {
  std::int64_t x = 0;
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, x);
  if (s.empty() || r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return x;
}

// A whole finite decimal number ("1.25", "2", "1e-3").
inline std::optional<double> parse_number(std::string_view s) {
  double x = 0;
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, x);
  if (s.empty() || r.ec != std::errc() || r.ptr != end || !std::isfinite(x)) return std::nullopt;
  return x;
}

// Calls f(line number, line) for each line of `text` (at most 1,000,000): the launch-script
// importers find the line a flag or an override is written on, which a command continued over
// lines ("\\") does not keep in its words.
template <typename F>
void each_line(std::string_view text, F&& f) {
  int line = 0;
  std::size_t pos = 0;
  while (pos <= text.size() && line < 1000000) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    f(++line, text.substr(pos, end - pos));
    if (end >= text.size()) break;
    pos = end + 1;
  }
}

class Sink {
 public:
  // Entries of the ignored list kept for the warning; the rest are counted.
  static constexpr std::size_t k_max_ignored = 200;

  Sink(std::string path, SettingMap& out, std::vector<Diagnostic>& errors)
      : m_path(std::move(path)), m_out(out), m_errors(errors) {}
  void put(const std::string& full, Value v) {
    const auto dot = full.find('.');
    const KeySpec* spec = find_key(full.substr(0, dot), full.substr(dot + 1));
    if (!spec) return;
    if (v.origin.file.empty()) v.origin.file = m_path;
    v.origin.what = "import";
    std::vector<Diagnostic> found;
    if (auto s = to_setting(*spec, v, found)) m_out[spec->full_name()] = *s;
    // The key's own messages quote the value as written: bounded and escaped here.
    const std::string raw = v.to_text();
    const std::string safe = shown(raw);
    for (Diagnostic& d : found) {
      if (raw != safe)
        for (auto at = d.message.find(raw); at != std::string::npos;
             at = d.message.find(raw, at + safe.size()))
          d.message.replace(at, raw.size(), safe);
      m_errors.push_back(std::move(d));
    }
  }
  // `what` may hold the file's text (a flag, a key): shown escaped and bounded; each entry once.
  void ignore(const std::string& what, const std::string& why) {
    if (!m_seen.insert(what + '\0' + why).second) return;
    if (m_ignored.size() < k_max_ignored)
      m_ignored.push_back(shown(what, 120) + (why.empty() ? "" : " (" + why + ")"));
    else
      ++m_more;
  }
  void error(const Origin& at, const std::string& message) {
    m_errors.push_back(Diagnostic{at, message});
  }
  std::vector<std::string> ignored() const {
    std::vector<std::string> all = m_ignored;
    if (m_more > 0) all.push_back("and " + std::to_string(m_more) + " more");
    return all;
  }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  SettingMap& m_out;
  std::vector<Diagnostic>& m_errors;
  std::vector<std::string> m_ignored;
  std::unordered_set<std::string> m_seen;
  std::size_t m_more = 0;
};

inline const Value* field(const Value& t, const std::string& key) {
  for (const auto& [k, v] : t.fields)
    if (k == key && v.type != Value::Type::other) return &v;
  return nullptr;
}

inline std::optional<double> number_of(const Value& v) {
  if (v.type == Value::Type::integer) return static_cast<double>(v.integer);
  if (v.type == Value::Type::floating) return v.floating;
  return std::nullopt;
}

inline bool auto_value(const Value& v) {
  return v.type == Value::Type::string && v.string == "auto";
}

// A value as an error message shows it: strings quoted and escaped, the rest as written.
inline std::string shown(const Value& v) {
  return v.type == Value::Type::string ? in_quotes(v.string) : shown(v.to_text());
}

// One reader per stack; each puts the keys it reads and lists what it ignores.
void import_deepspeed(const Value& doc, Sink& s);
void import_megatron(const std::string& text, Sink& s);
void import_torchtitan(const Value& doc, Sink& s);
void import_verl(const std::string& text, Sink& s);
void import_openrlhf(const std::string& text, Sink& s);
// NeMo-RL YAML: `read_defaults(file, path, resolved, why)` reads the parent a file names with
// `defaults:` (relative to that file; inside the plan's folder), giving its resolved path.
using DefaultsReader =
    std::function<std::optional<std::string>(const std::string& from_file, const std::string& path,
                                             std::string& resolved, std::string& why)>;
void import_nemo_rl(const std::string& text, Sink& s, const DefaultsReader& read_defaults);
// TRL GRPO: a launch script, a TrlParser recipe (.yaml) or a Python script (.py); the files a
// launch script names are read through `read_file` (relative to it, inside the plan's folder).
void import_trl(const std::string& text, Sink& s, const DefaultsReader& read_file);

}  // namespace trainledger::config::importing
