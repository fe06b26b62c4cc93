// Inverse questions: the largest micro-batch or sequence length that fits.
#pragma once

#include <cstdint>

#include "trainledger/plan.hpp"

namespace trainledger {

enum class MaxKnob { micro_batch, seq_len };
// What a larger micro-batch leaves unchanged: the global batch (the accumulation steps follow;
// only micro-batches that divide global_batch / dp are tried) or the accumulation steps (the
// global batch grows with the micro-batch).
enum class MaxKeep { global_batch, accum };

struct MaxFit {
  bool found = false;           // false: even the smallest value does not fit
  std::int64_t value = 0;       // the largest value that fits
  std::int64_t step = 1;        // values are multiples of this (cp, and tp with SP, for seq_len)
  PlanResult plan;              // the plan at `value` (or at the smallest value if not found)
  double next_peak_bytes = 0;   // the worst peak at the next value tried
  std::int64_t next_value = 0;  // that value (0: none above `value`)
  MaxKeep keep =
      MaxKeep::global_batch;  // what was kept (accum when the plan gives no global batch)
  int evaluations = 0;
};

// Bisection over the ledger: the peak grows with both knobs. Values that break a rule of the
// plan file (a micro-batch count the schedule cannot take) are skipped.
// `max_value` (> 0) bounds the values tried: the knob's key's own range. A plan without a
// global batch keeps its accumulation.
MaxFit find_max(const PlanInput& input, MaxKnob knob, double limit_bytes,
                MaxKeep keep = MaxKeep::global_batch, std::int64_t max_value = 0);

}  // namespace trainledger
