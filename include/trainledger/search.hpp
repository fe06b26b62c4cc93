// Inverse questions: the largest micro-batch or sequence length that fits.
#pragma once

#include <cstdint>

#include "trainledger/plan.hpp"

namespace trainledger {

enum class MaxKnob { micro_batch, seq_len };

struct MaxFit {
  bool found = false;          // false: even the smallest value does not fit
  std::int64_t value = 0;      // the largest value that fits
  std::int64_t step = 1;       // values are multiples of this (cp, and tp with SP, for seq_len)
  PlanResult plan;             // the plan at `value` (or at the smallest value if not found)
  double next_peak_bytes = 0;  // the worst peak at value + step
  int evaluations = 0;
};

// Bisection over the ledger: the peak grows with both knobs. The micro-batch keeps the
// plan's gradient accumulation (global_batch = micro_batch × dp × accumulation).
MaxFit find_max(const PlanInput& input, MaxKnob knob, double limit_bytes);

}  // namespace trainledger
