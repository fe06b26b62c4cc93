// JSON pieces that another command's document shares with plan's (docs/json-schema.md): inside
// the renderers and the command line only, so the public header needs no JSON type.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "trainledger/plan.hpp"

namespace trainledger::report {

// The fixes as plan's JSON `fixes` and check's `suggestions` write them:
// {id, bytes, changes: [{key, from, to}], knob (as text), freed_bytes, then_fits}.
nlohmann::ordered_json fixes_json(const std::vector<Fix>& fixes);

// One line item as plan's JSON writes it in its sections (explain --format json): id, role,
// label, value, unit, formula, terms, inputs, source, kind, time and collectives.
nlohmann::ordered_json line_item_json(const LineItem& item);

}  // namespace trainledger::report
