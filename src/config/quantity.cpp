#include "quantity.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace trainledger::config {

namespace {

// value = number × 10^exp10 × factor; the power of ten is applied while parsing the decimal
// text, so "66.9 TFLOP/s" is exactly 66.9e12 and not 66.9 × 1e12 (which rounds differently).
struct UnitScale {
  std::string_view unit;
  double factor;
  int exp10 = 0;
};

// Decimal prefixes are powers of 1000, binary ones powers of 1024; B is a byte and b a bit.
constexpr std::array k_bytes = {UnitScale{"B", 1},
                                UnitScale{"kB", 1, 3},
                                UnitScale{"KB", 1, 3},
                                UnitScale{"MB", 1, 6},
                                UnitScale{"GB", 1, 9},
                                UnitScale{"TB", 1, 12},
                                UnitScale{"PB", 1, 15},
                                UnitScale{"KiB", 1024.0},
                                UnitScale{"MiB", 1048576.0},
                                UnitScale{"GiB", 1073741824.0},
                                UnitScale{"TiB", 1099511627776.0},
                                UnitScale{"PiB", 1125899906842624.0}};

constexpr std::array k_bandwidth = {UnitScale{"B/s", 1},
                                    UnitScale{"kB/s", 1, 3},
                                    UnitScale{"MB/s", 1, 6},
                                    UnitScale{"GB/s", 1, 9},
                                    UnitScale{"TB/s", 1, 12},
                                    UnitScale{"KiB/s", 1024.0},
                                    UnitScale{"MiB/s", 1048576.0},
                                    UnitScale{"GiB/s", 1073741824.0},
                                    UnitScale{"TiB/s", 1099511627776.0},
                                    UnitScale{"Mb/s", 0.125, 6},
                                    UnitScale{"Gb/s", 0.125, 9},
                                    UnitScale{"Tb/s", 0.125, 12},
                                    UnitScale{"Mbit/s", 0.125, 6},
                                    UnitScale{"Gbit/s", 0.125, 9},
                                    UnitScale{"Tbit/s", 0.125, 12}};

constexpr std::array k_duration = {
    UnitScale{"ns", 1, -9}, UnitScale{"us", 1, -6}, UnitScale{"µs", 1, -6}, UnitScale{"ms", 1, -3},
    UnitScale{"s", 1},      UnitScale{"min", 60},   UnitScale{"h", 3600},   UnitScale{"d", 86400}};

// Failure rates per GPU: stored per hour.
constexpr std::array k_rate = {UnitScale{"/h", 1}, UnitScale{"/hour", 1}, UnitScale{"/d", 1.0 / 24},
                               UnitScale{"/day", 1.0 / 24}, UnitScale{"/year", 1.0 / 8760}};

constexpr std::array k_flops = {UnitScale{"FLOP/s", 1},      UnitScale{"GFLOP/s", 1, 9},
                                UnitScale{"TFLOP/s", 1, 12}, UnitScale{"PFLOP/s", 1, 15},
                                UnitScale{"GFLOPS", 1, 9},   UnitScale{"TFLOPS", 1, 12},
                                UnitScale{"PFLOPS", 1, 15}};

// Counts (parameters, tokens): a bare number or K, M, B (billion), T.
constexpr std::array k_count = {UnitScale{"", 1}, UnitScale{"K", 1, 3}, UnitScale{"M", 1, 6},
                                UnitScale{"B", 1, 9}, UnitScale{"T", 1, 12}};

template <std::size_t N>
std::optional<UnitScale> lookup(const std::array<UnitScale, N>& table, std::string_view unit) {
  for (const UnitScale& u : table)
    if (u.unit == unit) return u;
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<UnitScale> scale_for(QuantityKind kind, std::string_view unit) {
  switch (kind) {
    case QuantityKind::bytes:
      return lookup(k_bytes, unit);
    case QuantityKind::bandwidth:
      return lookup(k_bandwidth, unit);
    case QuantityKind::duration:
      return lookup(k_duration, unit);
    case QuantityKind::rate:
      return lookup(k_rate, unit);
    case QuantityKind::flops:
      return lookup(k_flops, unit);
    case QuantityKind::count:
      return lookup(k_count, unit);
  }
  return std::nullopt;
}

// Re-parses the decimal `text` with its exponent raised by `exp10`, so the result is the double
// nearest to the exact scaled value.
double shift_decimal(std::string_view text, int exp10) {
  std::string mantissa(text);
  long exponent = exp10;
  const std::size_t e = mantissa.find_first_of("eE");
  if (e != std::string::npos) {
    exponent += std::strtol(mantissa.c_str() + e + 1, nullptr, 10);
    mantissa.resize(e);
  }
  const std::string scaled = mantissa + "e" + std::to_string(exponent);
  double out = 0;
  const auto result = std::from_chars(scaled.data(), scaled.data() + scaled.size(), out);
  if (result.ec != std::errc()) return std::numeric_limits<double>::infinity();
  return out;
}

// The largest value of each kind that describes a training run: far above any real one, low
// enough that the planner's products and sums of them (a latency × the calls of a step × the
// steps of a run) stay finite. nullopt: no bound of the kind (counts: each key has its own).
struct Largest {
  double value;
  std::string_view shown;
};
std::optional<Largest> largest(QuantityKind kind) {
  switch (kind) {
    case QuantityKind::bytes:
      return Largest{1e18, "1e18 B (1 EB)"};
    case QuantityKind::bandwidth:
      return Largest{1e18, "1e18 B/s (1 EB/s)"};
    case QuantityKind::duration:
      return Largest{1e9, "1e9 s (about 31.7 years)"};
    case QuantityKind::rate:
      return Largest{3600, "3600 /h (one failure per second)"};
    case QuantityKind::flops:
      return Largest{1e21, "1e21 FLOP/s (1 ZFLOP/s)"};
    case QuantityKind::count:
      return std::nullopt;
  }
  return std::nullopt;
}

// The smallest positive rate that still describes hardware (a link of 1e-300 GB/s would time a
// step in 1e300 days): a positive bandwidth or FLOP rate below it is refused, as one above
// largest() is. Zero is left to each key's own rule.
std::optional<Largest> smallest(QuantityKind kind) {
  switch (kind) {
    case QuantityKind::bandwidth:
      return Largest{1, "1 B/s"};
    case QuantityKind::flops:
      return Largest{1, "1 FLOP/s"};
    default:
      return std::nullopt;
  }
}

std::string_view kind_name(QuantityKind kind) {
  switch (kind) {
    case QuantityKind::bytes:
      return "a size";
    case QuantityKind::bandwidth:
      return "a bandwidth";
    case QuantityKind::duration:
      return "a duration";
    case QuantityKind::rate:
      return "a failure rate";
    case QuantityKind::flops:
      return "a FLOP rate";
    case QuantityKind::count:
      return "a count";
  }
  return "a quantity";
}

}  // namespace

std::string_view accepted_units(QuantityKind kind) {
  switch (kind) {
    case QuantityKind::bytes:
      return "B, kB, MB, GB, TB, PB (powers of 1000) or KiB, MiB, GiB, TiB, PiB (powers of 1024)";
    case QuantityKind::bandwidth:
      return "B/s, MB/s, GB/s, TB/s, MiB/s, GiB/s, TiB/s or bits: Mb/s, Gb/s, Tb/s";
    case QuantityKind::duration:
      return "ns, us, ms, s, min, h, d";
    case QuantityKind::rate:
      return "/h, /day, /year (failures per GPU per unit of time)";
    case QuantityKind::flops:
      return "FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s";
    case QuantityKind::count:
      return "a number, or a number with K, M, B (billion), T";
  }
  return "";
}

std::string_view example_quantity(QuantityKind kind) {
  switch (kind) {
    case QuantityKind::bytes:
      return "\"80 GiB\"";
    case QuantityKind::bandwidth:
      return "\"450 GB/s\"";
    case QuantityKind::duration:
      return "\"5 min\"";
    case QuantityKind::rate:
      return "\"3e-6 /h\"";
    case QuantityKind::flops:
      return "\"989 TFLOP/s\"";
    case QuantityKind::count:
      return "\"15T\"";
  }
  return "";
}

QuantityResult parse_quantity(std::string_view text, QuantityKind kind) {
  const std::string_view s = trim(text);
  double number = 0;
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(begin, end, number);
  if (ec != std::errc() || ptr == begin) {
    return {std::nullopt, "\"" + std::string(text) + "\" does not start with a number"};
  }
  if (!std::isfinite(number)) return {std::nullopt, "\"" + std::string(text) + "\" is not finite"};
  const std::string_view unit = trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)));
  if (unit.empty() && kind != QuantityKind::count) {
    return {std::nullopt, "\"" + std::string(text) + "\" has no unit; write it with one, e.g. " +
                              std::string(example_quantity(kind)) +
                              " (units: " + std::string(accepted_units(kind)) + ")"};
  }
  const std::optional<UnitScale> scale = scale_for(kind, unit);
  if (!scale) {
    return {std::nullopt, "unknown unit \"" + std::string(unit) + "\" in \"" + std::string(text) +
                              "\" (units: " + std::string(accepted_units(kind)) + ")"};
  }
  if (scale->exp10 != 0) number = shift_decimal(std::string_view(begin, ptr - begin), scale->exp10);
  const double value = number * scale->factor;
  if (!std::isfinite(value)) return {std::nullopt, "\"" + std::string(text) + "\" is too large"};
  if (const auto top = largest(kind); top && std::fabs(value) > top->value)
    return {std::nullopt, "\"" + std::string(text) +
                              "\" is out of range: " + std::string(kind_name(kind)) +
                              " is at most " + std::string(top->shown)};
  if (const auto low = smallest(kind); low && value != 0 && std::fabs(value) < low->value)
    return {std::nullopt, "\"" + std::string(text) +
                              "\" is out of range: " + std::string(kind_name(kind)) +
                              " that is not 0 is at least " + std::string(low->shown)};
  return {value, {}};
}

}  // namespace trainledger::config
