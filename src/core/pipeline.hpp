// Micro-batches in flight per pipeline stage (docs/formulas.md#pipeline).
#pragma once

#include "trainledger/expr.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger {

// Layer activations a stage holds, in micro-batches' worth of its own layers:
// gpipe m; 1f1b and zb-h1 min(p − i, m); interleaved min(2(p − i − 1) + (v − 1)p + 1, m·v) / v
// model chunks; 1 without pipelining. `m` = micro-batches per step.
template <typename V>
V layers_in_flight(const PlanInput& in, int stage, double micro_batches);
// Micro-batches whose loss (logits) a last stage holds at once: m for gpipe, else 1.
template <typename V>
V loss_in_flight(const PlanInput& in, double micro_batches);

}  // namespace trainledger
