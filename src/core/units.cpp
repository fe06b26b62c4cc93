#include "trainledger/units.hpp"

namespace trainledger {

std::string_view to_string(Unit u) {
  switch (u) {
    case Unit::bytes:
      return "bytes";
    case Unit::seconds:
      return "s";
    case Unit::flop:
      return "FLOP";
    case Unit::flop_per_s:
      return "FLOP/s";
    case Unit::bytes_per_s:
      return "bytes/s";
    case Unit::fraction:
      return "fraction";
    case Unit::count:
      return "count";
    case Unit::tokens_per_s:
      return "tokens/s";
  }
  return "?";
}

std::string_view to_string(Kind k) {
  switch (k) {
    case Kind::estimated:
      return "estimated";
    case Kind::assumed:
      return "assumed";
    case Kind::given:
      return "given";
    case Kind::measured:
      return "measured";
  }
  return "?";
}

std::string_view to_string(DType t) {
  switch (t) {
    case DType::fp32:
      return "fp32";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::fp8:
      return "fp8";
    case DType::int8:
      return "int8";
  }
  return "?";
}

std::string_view to_string(Source s) {
  switch (s) {
    case Source::default_value:
      return "default";
    case Source::preset:
      return "preset";
    case Source::file:
      return "file";
    case Source::hf_config:
      return "hf_config";
    case Source::imported:
      return "import";
    case Source::set:
      return "--set";
    case Source::derived:
      return "derived";
    case Source::calibration:
      return "calibration";
    case Source::change:
      return "change";
  }
  return "?";
}

}  // namespace trainledger
