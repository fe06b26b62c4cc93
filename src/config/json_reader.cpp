// JSON text (Hugging Face config.json) → Value. Origins name the file and the JSON key.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "value.hpp"

namespace trainledger::config {

namespace {

// A JSON pointer as an origin shows it: each key at most 48 bytes, the whole at most 256 (then
// "/..."), so that the origins of a document stay small whatever its keys.
std::string child(const std::string& where, const std::string& key) {
  if (where.size() > 256) return where.substr(where.size() - 4) == "/..." ? where : where + "/...";
  return where + "/" + (key.size() > 48 ? key.substr(0, 48) + "..." : key);
}

Value convert(const nlohmann::json& j, const std::string& where) {
  Value v;
  v.origin = Origin{where, 0, 0, "hf_config"};
  switch (j.type()) {
    case nlohmann::json::value_t::boolean:
      v.type = Value::Type::boolean;
      v.boolean = j.get<bool>();
      break;
    case nlohmann::json::value_t::number_integer:
      v.type = Value::Type::integer;
      v.integer = j.get<std::int64_t>();
      break;
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) {
        v.type = Value::Type::floating;
        v.floating = static_cast<double>(u);
      } else {
        v.type = Value::Type::integer;
        v.integer = static_cast<std::int64_t>(u);
      }
      break;
    }
    case nlohmann::json::value_t::number_float:
      v.type = Value::Type::floating;
      v.floating = j.get<double>();
      break;
    case nlohmann::json::value_t::string:
      v.type = Value::Type::string;
      v.string = j.get<std::string>();
      break;
    case nlohmann::json::value_t::array:
      v.type = Value::Type::array;
      v.items.reserve(j.size());
      for (std::size_t i = 0; i < j.size(); ++i)
        v.items.push_back(convert(j[i], child(where, std::to_string(i))));
      break;
    case nlohmann::json::value_t::object:
      v.type = Value::Type::table;
      v.fields.reserve(j.size());
      v.key_origins.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string at = child(where, it.key());
        v.fields.push_back(Field{it.key(), convert(it.value(), at)});
        v.key_origins.push_back(Origin{at, 0, 0, "hf_config"});
      }
      break;
    default:
      v.type = Value::Type::other;  // null, binary
      break;
  }
  return v;
}

}  // namespace

// Walks the JSON text outside its strings: `visit(index, line, column)` for each character,
// which returns how many characters it consumed (at least 1) or 0 to stop.
template <typename Visit>
void scan_outside_strings(const std::string& text, Visit visit) {
  int line = 1, column = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
      ++i;
      continue;
    }
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = true;
      ++i;
      continue;
    }
    const std::size_t used = visit(i, line, column);
    if (used == 0) return;
    column += static_cast<int>(used) - 1;
    i += used;
  }
}

// Nesting deeper than any config.json needs is refused before parsing (the conversion below
// recurses once per level), and so are more values than any config.json or DeepSpeed config
// holds (the largest have a few thousand: id2label tables): a 4 MiB file of "[1,1,...]" would
// take seconds and half a gigabyte as a Value tree. Each value after the first of its array or
// object follows a comma, and each array or object is one: commas + brackets + 1 bound them.
constexpr int k_max_json_depth = 64;
constexpr std::size_t k_max_json_values = 100000;

namespace {
// 100000 → "100,000".
std::string grouped(std::size_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}
}  // namespace

void check_json_structure(const std::string& text, const std::string& path, const char* what,
                          std::size_t max_values, const char* holds) {
  // nlohmann's reader stops at a NUL as at the end of the text: what follows would be
  // dropped unread.
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    const std::size_t line_start = text.rfind('\n', nul);
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + nul, '\n'));
    const int column =
        static_cast<int>(nul - (line_start == std::string::npos ? 0 : line_start + 1)) + 1;
    throw ConfigError({Diagnostic{Origin{path, line, column, what},
                                  "invalid JSON: a NUL byte (the file is not JSON text)"}});
  }
  int depth = 0;
  std::size_t values = 1;
  scan_outside_strings(text, [&](std::size_t i, int line, int column) -> std::size_t {
    const char c = text[i];
    if ((c == '{' || c == '[') && ++depth > k_max_json_depth)
      throw ConfigError(
          {Diagnostic{Origin{path, line, column, what},
                      fmt::format("invalid {}: nested deeper than 64 levels",
                                  std::string(what) == "hf_config" ? "config.json" : "JSON")}});
    if (c == '}' || c == ']') --depth;
    if ((c == '{' || c == '[' || c == ',') && ++values > max_values)
      throw ConfigError(
          {Diagnostic{Origin{path, line, column, what},
                      fmt::format("invalid JSON: more than {} values (more than {} holds)",
                                  grouped(max_values), holds)}});
    return 1;
  });
}

void check_structure(const std::string& text, const std::string& path) {
  check_json_structure(text, path, "hf_config", k_max_json_values,
                       "any config.json or DeepSpeed config");
}

// The line and column of the first number literal too large for a double (1e704), if any.
bool find_overflow(const std::string& text, int& line, int& column) {
  bool found = false;
  scan_outside_strings(text, [&](std::size_t i, int at_line, int at_column) -> std::size_t {
    const char c = text[i];
    if (c != '-' && (c < '0' || c > '9')) return 1;
    std::size_t end = i;
    while (end < text.size() && std::strchr("0123456789+-.eE", text[end]) != nullptr) ++end;
    if (std::isfinite(std::strtod(text.substr(i, end - i).c_str(), nullptr))) return end - i;
    found = true;
    line = at_line;
    column = at_column;
    return 0;
  });
  return found;
}

Value parse_json(const std::string& text, const std::string& path) {
  check_structure(text, path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  } catch (const nlohmann::json::exception&) {
    // A number beyond a double's range (nlohmann's out_of_range.406), even at a key that is
    // never read: located, without the library's text.
    int line = 0, column = 0;
    if (!find_overflow(text, line, column)) line = column = 0;
    throw ConfigError({Diagnostic{Origin{path, line, column, "hf_config"},
                                  "invalid JSON: a number too large for a double"}});
  }
  if (j.is_discarded()) {
    // Parse again with exceptions for the position; the message gives line and column only,
    // never the file's bytes.
    try {
      const nlohmann::json again = nlohmann::json::parse(text);
      static_cast<void>(again);
    } catch (const nlohmann::json::out_of_range&) {
      int line = 0, column = 0;
      if (!find_overflow(text, line, column)) line = column = 0;
      throw ConfigError({Diagnostic{Origin{path, line, column, "hf_config"},
                                    "invalid JSON: a number too large for a double"}});
    } catch (const nlohmann::json::parse_error& e) {
      int line = 1, column = 1;
      const std::size_t end = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
      for (std::size_t i = 0; i < end; ++i) {
        if (text[i] == '\n') {
          ++line;
          column = 1;
        } else {
          ++column;
        }
      }
      throw ConfigError({Diagnostic{Origin{path, line, column, "hf_config"}, "invalid JSON"}});
    }
  }
  if (!j.is_object()) {
    throw ConfigError(
        {Diagnostic{Origin{path, 0, 0, "hf_config"}, "invalid config.json: not a JSON object"}});
  }
  return convert(j, path + "#");
}

}  // namespace trainledger::config
