// Cross-field rules of a plan (docs/config.md#rules), each reported at the key that breaks it.
#pragma once

#include "resolve.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger::config {

void validate(const Resolution& r, const PlanInput& in, std::vector<Diagnostic>& errors);

}  // namespace trainledger::config
