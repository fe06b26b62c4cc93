// Units, kinds and numeric data types shared by every part of the planner.
#pragma once

#include <cstdint>
#include <string_view>

namespace trainledger {

// The unit a line item's value is expressed in. Values are always in base units.
enum class Unit { bytes, seconds, flop, flop_per_s, bytes_per_s, fraction, count, tokens_per_s };

// How a number came about: computed from a formula (estimated), resting on an assumed input
// (assumed), on inputs the user gave (given), or on a measurement (measured).
enum class Kind { estimated, assumed, given, measured };

// Where a resolved input value came from.
enum class Source : std::uint8_t {
  default_value,  // the key table's default
  preset,         // a model or GPU preset
  file,           // the plan file
  hf_config,      // a Hugging Face config.json
  imported,       // a training config imported (DeepSpeed, Megatron-LM, torchtitan)
  set,            // --set on the command line
  derived,        // derived from other keys by the loader
  calibration,    // measured on the cluster (a calibration profile)
  change,         // a what-if change
};
std::string_view to_string(Source s);

// Numeric formats of tensors (weights, gradients, optimizer states, activations).
enum class DType { fp32, bf16, fp16, fp8, int8 };

constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;
constexpr double k_gb = 1e9;

// Bytes per element of a dtype.
constexpr int dtype_bytes(DType t) {
  switch (t) {
    case DType::fp32:
      return 4;
    case DType::bf16:
    case DType::fp16:
      return 2;
    case DType::fp8:
    case DType::int8:
      return 1;
  }
  return 4;
}

std::string_view to_string(Unit u);
std::string_view to_string(Kind k);
std::string_view to_string(DType t);

}  // namespace trainledger
