// A parsed input value with its position, independent of the file format it came from.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trainledger/config.hpp"

namespace trainledger::config {

struct Field;

struct Value {
  enum class Type { boolean, integer, floating, string, array, table, other };
  Type type = Type::other;
  bool boolean = false;
  std::int64_t integer = 0;
  double floating = 0;
  std::string string;
  std::vector<Value> items;         // arrays
  std::vector<Field> fields;        // tables, in file order
  std::vector<Origin> key_origins;  // tables: where each key is written
  Origin origin;

  std::string type_name() const;
  // The value as TOML text ("80", "\"swiglu\"", "[1, 2]").
  std::string to_text() const;
};

// A key of a table and its value (a named pair: std::pair of an incomplete type is not allowed).
struct Field {
  std::string first;
  Value second;
};

// Values made in code (config.json mappings, imports), with where they came from.
Value string_value(std::string s, const Origin& at = {});
Value integer_value(std::int64_t i, const Origin& at = {});
Value boolean_value(bool b, const Origin& at = {});
Value number_value(double d, const Origin& at = {});

// Parses TOML text into a table Value. Throws ConfigError (with the location) on a syntax error.
Value parse_toml(const std::string& text, const std::string& path, const std::string& what);

// Parses JSON text (a Hugging Face config.json) into a table Value; origins name JSON pointers.
Value parse_json(const std::string& text, const std::string& path);
// Refuses, before any parser builds a tree, JSON text with a NUL byte, nested deeper than 64
// levels, or of more than `max_values` values (located at `path` with origin kind `what`;
// `holds` names what real files of the kind hold, for the message): a 16 MiB "[0,0,...]"
// would take seconds and gigabytes as a tree.
void check_json_structure(const std::string& text, const std::string& path, const char* what,
                          std::size_t max_values, const char* holds);

}  // namespace trainledger::config
