// Resolved settings → typed PlanInput, with cross-field validation located at the right key.
#pragma once

#include "resolve.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger::config {

// Fills `out` from the resolution. Errors go to `errors` (each at the origin of the key that
// breaks the rule); defaults derived here (dp, nodes, grad_dtype, ...) are recorded in
// `r.settings` with origin "derived" so reports show them.
void build_input(Resolution& r, PlanInput& out, std::vector<Diagnostic>& errors);

ModelSpec build_model(const Resolution& r, std::vector<Diagnostic>& errors);
GpuSpec build_gpu(const Resolution& r, std::vector<Diagnostic>& errors);

}  // namespace trainledger::config
