// Typed access to resolved settings, with the origin of each for messages.
#pragma once

#include <fmt/format.h>

#include <initializer_list>
#include <string>

#include "resolve.hpp"

namespace trainledger::config {

class Reader {
 public:
  Reader(const Resolution& r, std::vector<Diagnostic>& errors) : m_r(r), m_errors(errors) {}

  bool has(const std::string& key) const { return m_r.settings.count(key) > 0; }
  std::int64_t integer(const std::string& key, std::int64_t fallback = 0) const {
    auto it = m_r.settings.find(key);
    return it == m_r.settings.end() ? fallback : std::get<std::int64_t>(it->second.value);
  }
  double number(const std::string& key, double fallback = 0) const {
    auto it = m_r.settings.find(key);
    return it == m_r.settings.end() ? fallback : std::get<double>(it->second.value);
  }
  bool boolean(const std::string& key, bool fallback = false) const {
    auto it = m_r.settings.find(key);
    return it == m_r.settings.end() ? fallback : std::get<bool>(it->second.value);
  }
  std::string text(const std::string& key, const std::string& fallback = {}) const {
    auto it = m_r.settings.find(key);
    return it == m_r.settings.end() ? fallback : std::get<std::string>(it->second.value);
  }
  template <typename T>
  T get(const std::string& key) const {
    return std::get<T>(m_r.settings.at(key).value);
  }
  // Where a key's value came from; the section header (or the plan) when it has none.
  Origin origin(const std::string& key) const {
    auto it = m_r.settings.find(key);
    if (it != m_r.settings.end() && it->second.origin.what != "default") return it->second.origin;
    const std::string section = key.substr(0, key.find('.'));
    auto s = m_r.sections.find(section);
    return s != m_r.sections.end() ? s->second : m_r.plan_origin;
  }
  // The first of `keys` set by the user (not defaulted), or the first key.
  std::string first_explicit(std::initializer_list<const char*> keys) const {
    for (const char* k : keys) {
      auto it = m_r.settings.find(k);
      if (it != m_r.settings.end() && it->second.origin.what != "default" &&
          it->second.origin.what != "derived")
        return k;
    }
    return *keys.begin();
  }
  // An error about a whole section, located at its header.
  void section_error(const std::string& section, const std::string& message) const {
    auto s = m_r.sections.find(section);
    m_errors.push_back(Diagnostic{s != m_r.sections.end() ? s->second : m_r.plan_origin, message});
  }
  void error(const std::string& key, const std::string& message) const {
    m_errors.push_back(Diagnostic{origin(key), message});
  }
  std::size_t error_count() const { return m_errors.size(); }

 private:
  const Resolution& m_r;
  std::vector<Diagnostic>& m_errors;
};

}  // namespace trainledger::config
