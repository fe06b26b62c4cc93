// Shared by the importers of training configs (docs/config.md#importing-training-configs): the
// sink that turns what a file says into plan settings with their origins, and small readers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "resolve.hpp"

namespace trainledger::config::importing {

class Sink {
 public:
  Sink(std::string path, SettingMap& out, std::vector<Diagnostic>& errors)
      : m_path(std::move(path)), m_out(out), m_errors(errors) {}
  void put(const std::string& full, Value v) {
    const auto dot = full.find('.');
    const KeySpec* spec = find_key(full.substr(0, dot), full.substr(dot + 1));
    if (!spec) return;
    if (v.origin.file.empty()) v.origin.file = m_path;
    v.origin.what = "import";
    if (auto s = to_setting(*spec, v, m_errors)) m_out[spec->full_name()] = *s;
  }
  void ignore(const std::string& what, const std::string& why) {
    m_ignored.push_back(what + (why.empty() ? "" : " (" + why + ")"));
  }
  void error(const Origin& at, const std::string& message) {
    m_errors.push_back(Diagnostic{at, message});
  }
  const std::vector<std::string>& ignored() const { return m_ignored; }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  SettingMap& m_out;
  std::vector<Diagnostic>& m_errors;
  std::vector<std::string> m_ignored;
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

// One reader per stack; each puts the keys it reads and lists what it ignores.
void import_deepspeed(const Value& doc, Sink& s);
void import_megatron(const std::string& text, Sink& s);
void import_torchtitan(const Value& doc, Sink& s);

}  // namespace trainledger::config::importing
