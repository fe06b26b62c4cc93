// What-if questions in the core: typed changes to a plan's inputs, evaluated by the
// numbers-only path and filtered by the same rules as the plan file. The levers that speed a
// step up and the changes that make a plan fit are both answered here; reports render them.
#pragma once

#include <optional>
#include <vector>

#include "trainledger/change.hpp"
#include "trainledger/items.hpp"
#include "trainledger/plan.hpp"

namespace trainledger {

// The value of a knob in a plan.
std::int64_t knob_value(const PlanInput& in, Knob k);
// `in` with the change applied. The global batch is held unless the change sets it, so the
// accumulation steps follow; a derived grad_sync is derived again from the new ZeRO stage.
PlanInput apply(const PlanInput& in, const Change& c);
// The changed plan when it satisfies every rule (check_rules), else nothing.
std::optional<PlanInput> apply_valid(const PlanInput& in, const Change& c);

// Up to `count` changes that raise throughput per GPU by more than 0.5 % while the plan still
// fits with its required headroom (plan.verdict.required_headroom), fastest first. `plan` is
// compute_plan(input)'s result (its time side is needed).
std::vector<Lever> find_levers(const PlanResult& plan, int count = 3);

// The `count` largest items of the worst stage, each with its best change.
std::vector<Fix> find_fixes(const PlanResult& plan, double limit_bytes, int count = 3);

}  // namespace trainledger
