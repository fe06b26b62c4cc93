// The reference residuals the bands come from (docs/accuracy.md#bands).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trainledger {

// memory: a peak; time: a training step; rl_step: an RL post-training step (docs/rl.md).
enum class Quantity { memory, time, rl_step };

// One reference case: measured / predicted (for time, of the step time), with the tags of its
// plan's family. The table is generated (src/core/band_data.cpp, by scripts/bands --write).
struct Residual {
  Quantity quantity;
  const char* plan;    // under tests/reference, with the measured quantity in parentheses
  const char* source;  // a memory source folder or a time group: the unit of leave-one-out
  const char* stack;   // training.framework as resolved (RL: the RL framework of the source)
  bool moe;
  bool multi_gpu;
  bool small;  // under 10 B parameters
  double ratio;
};

const std::vector<Residual>& residuals();

// The sorted ratios of the narrowest family with enough cases for a plan of these tags, every
// case of `held_out` (a source, or "" for none) left out; `name` gets the family's name.
std::vector<double> family_ratios(Quantity q, const std::string& stack, bool moe, bool multi_gpu,
                                  const std::string& held_out, std::string& name);
// The ratios' prediction interval at confidence c, always holding 1 (the estimate).
std::pair<double, double> ratio_range(const std::vector<double>& sorted, double c);

}  // namespace trainledger
