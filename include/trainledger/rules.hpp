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

// The rules that one layout knob ("tp", "pp", "cp" or "ep") at `value` breaks by itself, the
// other knobs at 1 and the rest of the GPUs in dp: a value no layout can take (search's --fix
// and --allow refuse it). `world` 0: any world (search --fewest); otherwise the value must also
// divide it. Other knobs give none.
std::vector<RuleViolation> knob_violations(const PlanInput& base, const std::string& knob,
                                           int value, int world);

}  // namespace trainledger
