// A value converted to the type its key declares, range-checked, with its origin.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "keys.hpp"
#include "trainledger/plan_input.hpp"
#include "value.hpp"

namespace trainledger::config {

struct Setting {
  using Variant = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                               std::vector<std::string>, PeakFlops>;
  const KeySpec* spec = nullptr;
  Variant value;
  std::string display;  // TOML text as written ("80 GiB" strings keep their quotes)
  Origin origin;
};

// Converts `v` for key `spec`; on a type or range error appends a diagnostic and returns nothing.
std::optional<Setting> to_setting(const KeySpec& spec, const Value& v,
                                  std::vector<Diagnostic>& errors);

// The default of a key as a Setting (origin "default"), or nothing when it has none.
std::optional<Setting> default_setting(const KeySpec& spec);

}  // namespace trainledger::config
