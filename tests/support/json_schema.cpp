#include "json_schema.hpp"

#include <stdexcept>

namespace trainledger::test {

namespace {

using nlohmann::json;

bool has_type(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "integer") return v.is_number_integer();
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  throw std::runtime_error("schema: unknown type " + t);
}

void check(const json& root, const json& s, const json& v, const std::string& at,
           std::vector<std::string>& out) {
  static const char* const known[] = {
      "$schema", "$id",        "title",    "description",          "$defs", "$ref",   "type",
      "enum",    "properties", "required", "additionalProperties", "items", "minimum"};
  for (const auto& [key, _] : s.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) throw std::runtime_error("schema: unsupported keyword " + key);
  }
  if (s.contains("$ref")) {
    const std::string ref = s["$ref"];
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0) throw std::runtime_error("schema: unsupported $ref " + ref);
    check(root, root["$defs"].at(ref.substr(prefix.size())), v, at, out);
    return;
  }
  if (s.contains("type")) {
    bool ok = false;
    if (s["type"].is_array()) {
      for (const auto& t : s["type"]) ok = ok || has_type(v, t);
    } else {
      ok = has_type(v, s["type"]);
    }
    if (!ok) {
      out.push_back(at + ": expected type " + s["type"].dump() + ", got " + v.dump().substr(0, 60));
      return;
    }
  }
  if (s.contains("enum")) {
    bool ok = false;
    for (const auto& e : s["enum"]) ok = ok || e == v;
    if (!ok) out.push_back(at + ": " + v.dump() + " is not one of " + s["enum"].dump());
  }
  if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>())
    out.push_back(at + ": " + v.dump() + " is below the minimum " + s["minimum"].dump());
  if (v.is_object()) {
    if (s.contains("required"))
      for (const auto& r : s["required"])
        if (!v.contains(r.get<std::string>()))
          out.push_back(at + ": missing required \"" + r.get<std::string>() + "\"");
    for (const auto& [key, value] : v.items()) {
      const std::string here = at + "/" + key;
      if (s.contains("properties") && s["properties"].contains(key)) {
        check(root, s["properties"][key], value, here, out);
      } else if (s.contains("additionalProperties")) {
        const json& extra = s["additionalProperties"];
        if (extra.is_boolean()) {
          if (!extra.get<bool>()) out.push_back(here + ": not allowed here");
        } else {
          check(root, extra, value, here, out);
        }
      }
    }
  }
  if (v.is_array() && s.contains("items"))
    for (std::size_t i = 0; i < v.size(); ++i)
      check(root, s["items"], v[i], at + "/" + std::to_string(i), out);
}

}  // namespace

std::vector<std::string> schema_errors(const json& schema, const json& doc) {
  std::vector<std::string> out;
  check(schema, schema, doc, "", out);
  return out;
}

}  // namespace trainledger::test
