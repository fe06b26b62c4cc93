// Resolved settings → typed PlanInput, with cross-field validation located at the right key.
#pragma once

#include "resolve.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger::config {

// Fills `out` from the resolution. Errors go to `errors` (each at the origin of the key that
// breaks the rule); defaults derived here (dp, nodes, grad_dtype, ...) are recorded in
// `r.settings` with origin "derived" so reports show them.
void build_input(Resolution& r, PlanInput& out, std::vector<Diagnostic>& errors);

// For a caller that varies the layout itself (search): the layout keys (parallel.tp, pp, dp,
// cp, ep, stage_layers, virtual_stages, sequence_parallel, zero_shard_size, placement and the
// grad_accum) are dropped, so their rules are not applied: tp = pp = cp = ep = 1 and dp the
// world. The training stack is inferred first, from the plan as given.
void free_layout(Resolution& r, std::vector<Diagnostic>& errors);

ModelSpec build_model(const Resolution& r, std::vector<Diagnostic>& errors);
GpuSpec build_gpu(const Resolution& r, std::vector<Diagnostic>& errors);

}  // namespace trainledger::config
