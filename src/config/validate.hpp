// Cross-field rules of a plan (docs/config.md#rules), each reported at the key that breaks it.
#pragma once

#include "resolve.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger::config {

// `world_ok`: dp and nodes were derived consistently (otherwise the world and batch rules,
// which would repeat that error, are skipped).
void validate(const Resolution& r, const PlanInput& in, bool world_ok,
              std::vector<Diagnostic>& errors);

}  // namespace trainledger::config
