// Number formatting shared by the renderers.
#pragma once

#include <string>

#include "trainledger/ledger.hpp"
#include "trainledger/plan.hpp"
#include "trainledger/report.hpp"

namespace trainledger::report {

std::string memory_unit_name(MemUnits u);                         // "GiB" or "GB"
std::string format_memory(double bytes, MemUnits u);              // "14.96" (no unit)
std::string memory_with_unit(double bytes, MemUnits u);           // "14.96 GiB"
std::string format_count(double n);                               // "70.55 B", "4.19 M"
std::string format_percent(double fraction);                      // "23.4 %"
std::string format_duration(double seconds);                      // "56 s", "67.5 min", "40.7 h"
std::string format_item_value(const LineItem& item, MemUnits u);  // by the item's unit
// "Host memory per node: 98.1 GiB (checkpoint_staging 74.2, runtime 24.0); ..."
std::string host_line(const PlanResult& plan, MemUnits u);
// "bubble 2.3 % → 0.6 %, 853 → 869 tokens/s per GPU (+1.9 %), peak 50.9 GiB"
std::string lever_effect(const Lever& l, MemUnits u);

}  // namespace trainledger::report
