// The table of plan-file keys: declared once; the loader, the validator, `trainledger keys`
// and docs/config.md all read it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantity.hpp"

namespace trainledger::config {

enum class KeyType {
  integer,  // TOML integer
  number,   // TOML integer or float
  boolean,
  choice,       // one of `choices`
  text,         // free text (names, paths)
  quantity,     // a string with a unit of `quantity`
  count,        // a number, or a string with K/M/B/T
  int_list,     // array of integers
  choice_list,  // array of strings from `choices`
  flops_table,  // inline table {fp32 = "...", bf16 = "...", ...} of FLOP/s quantities
  zero_stage,   // 0, 1, 2, 3 or "fsdp"
};

struct KeySpec {
  std::string_view section;
  std::string_view name;
  KeyType type;
  std::string_view default_text;  // TOML literal; empty: none (or derived, see doc)
  std::string_view doc;
  QuantityKind quantity = QuantityKind::count;
  std::vector<std::string_view> choices = {};
  double min = 0;  // inclusive bounds for integers, numbers and counts
  double max = 0;  // 0 = unbounded
  bool min_exclusive = false;

  std::string full_name() const { return std::string(section) + "." + std::string(name); }
};

const std::vector<KeySpec>& key_table();
const std::vector<std::string_view>& section_names();
const KeySpec* find_key(std::string_view section, std::string_view name);
std::string type_description(const KeySpec& k);

// Lower case without separators ("-", "_", ".", " ", "/"): "Llama-3.1-8B" → "llama318b".
std::string fold(std::string_view s);
// The closest candidate within a small edit distance, for "did you mean" hints.
std::optional<std::string> closest(std::string_view word,
                                   const std::vector<std::string>& candidates);

}  // namespace trainledger::config
