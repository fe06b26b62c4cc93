// JSON text (Hugging Face config.json) → Value. Origins name the file and the JSON key.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "value.hpp"

namespace trainledger::config {

namespace {

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
      for (std::size_t i = 0; i < j.size(); ++i)
        v.items.push_back(convert(j[i], where + "/" + std::to_string(i)));
      break;
    case nlohmann::json::value_t::object:
      v.type = Value::Type::table;
      for (auto it = j.begin(); it != j.end(); ++it) {
        v.fields.push_back(Field{it.key(), convert(it.value(), where + "/" + it.key())});
        v.key_origins.push_back(Origin{where + "/" + it.key(), 0, 0, "hf_config"});
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
// recurses once per level).
constexpr int k_max_json_depth = 64;

void check_depth(const std::string& text, const std::string& path) {
  int depth = 0;
  scan_outside_strings(text, [&](std::size_t i, int line, int column) -> std::size_t {
    const char c = text[i];
    if ((c == '{' || c == '[') && ++depth > k_max_json_depth)
      throw ConfigError({Diagnostic{Origin{path, line, column, "hf_config"},
                                    "invalid config.json: nested deeper than 64 levels"}});
    if (c == '}' || c == ']') --depth;
    return 1;
  });
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
  check_depth(text, path);
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
