#include "value.hpp"
#include "trainledger/text.hpp"

#include <fmt/format.h>

namespace trainledger::config {

std::string Origin::to_string() const {
  if (line > 0) return fmt::format("{}:{}:{}", file, line, column);
  if (!file.empty()) return file;
  return what;
}

using text::printable;

std::string Diagnostic::to_string() const {
  const std::string where = printable(origin.to_string());
  if (where.empty()) return "trainledger: error: " + printable(message);
  return "trainledger: error: " + where + ": " + printable(message);
}

namespace {
std::string join_diagnostics(const std::vector<Diagnostic>& d) {
  std::string s;
  for (const Diagnostic& x : d) s += (s.empty() ? "" : "\n") + x.to_string();
  return s;
}
}  // namespace

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(join_diagnostics(diagnostics)), m_diagnostics(std::move(diagnostics)) {}

std::string Value::type_name() const {
  switch (type) {
    case Type::boolean:
      return "a boolean";
    case Type::integer:
      return "an integer";
    case Type::floating:
      return "a float";
    case Type::string:
      return "a string";
    case Type::array:
      return "an array";
    case Type::table:
      return "a table";
    case Type::other:
      return "a date/time or null";
  }
  return "?";
}

std::string Value::to_text() const {
  switch (type) {
    case Type::boolean:
      return boolean ? "true" : "false";
    case Type::integer:
      return std::to_string(integer);
    case Type::floating:
      return fmt::format("{}", floating);
    case Type::string:
      return "\"" + string + "\"";
    case Type::array: {
      std::string s = "[";
      for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i].to_text();
      return s + "]";
    }
    case Type::table: {
      std::string s = "{ ";
      for (std::size_t i = 0; i < fields.size(); ++i)
        s += (i ? ", " : "") + fields[i].first + " = " + fields[i].second.to_text();
      return s + " }";
    }
    case Type::other:
      return "?";
  }
  return "?";
}

Value string_value(std::string s, const Origin& at) {
  Value v;
  v.type = Value::Type::string;
  v.string = std::move(s);
  v.origin = at;
  return v;
}

Value integer_value(std::int64_t i, const Origin& at) {
  Value v;
  v.type = Value::Type::integer;
  v.integer = i;
  v.origin = at;
  return v;
}

Value boolean_value(bool b, const Origin& at) {
  Value v;
  v.type = Value::Type::boolean;
  v.boolean = b;
  v.origin = at;
  return v;
}

Value number_value(double d, const Origin& at) {
  Value v;
  v.type = Value::Type::floating;
  v.floating = d;
  v.origin = at;
  return v;
}

}  // namespace trainledger::config
