// The cross-field rules of a plan (docs/config.md#rules): one set, used by the config layer to
// report errors at the offending key's location and by the core's what-if questions.
#pragma once

#include <string>
#include <vector>

#include "trainledger/plan_input.hpp"

namespace trainledger {

struct RuleViolation {
  std::string key;      // the key that breaks the rule ("parallel.tp")
  std::string message;  // "parallel.tp (6) must divide model.heads (64)"
};

// Every rule `in` breaks, in a fixed order. `world_known`: dp and nodes were derived
// consistently (otherwise the world-size and batch rules, which would repeat that error, are
// skipped).
std::vector<RuleViolation> check_rules(const PlanInput& in, bool world_known = true);

}  // namespace trainledger
