// Quantities with explicit units: "80 GiB", "450 GB/s", "400 Gb/s", "8 us", "5 min",
// "3e-6 /h", "989 TFLOP/s", "15T". A missing or unknown unit is an error, never a guess.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainledger::config {

enum class QuantityKind { bytes, bandwidth, duration, rate, flops, count };

struct QuantityResult {
  std::optional<double> value;  // in base units: bytes, bytes/s, s, per hour, FLOP/s, count
  std::string error;            // why it was rejected, when value is empty
};

QuantityResult parse_quantity(std::string_view text, QuantityKind kind);

// The units a kind accepts, for messages and docs ("B, kB, MB, GB, ..., KiB, MiB, GiB, ...").
std::string_view accepted_units(QuantityKind kind);
// An example of a valid value of the kind ("80 GiB").
std::string_view example_quantity(QuantityKind kind);

}  // namespace trainledger::config
