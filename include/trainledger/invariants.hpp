// The invariant checker: run on every plan a test makes.
#pragma once

#include <string>
#include <vector>

#include "trainledger/plan.hpp"

namespace trainledger {

// Returns one line per violated invariant (empty when the plan is sound): stage items sum to
// the stage peak, the verdict is the worst stage, no value is NaN, infinite or negative, ids
// are unique within a section, every item has a label, formula, source and terms, byte values
// are whole numbers, and the formula's terms are finite.
std::vector<std::string> check_invariants(const PlanResult& plan);

}  // namespace trainledger
